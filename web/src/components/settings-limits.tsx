// The operator's limits on the Settings page (decision 0062): read-only for everyone in the tenant;
// only PATCH /v1/tenants/{id} changes them.

import type { ApiEffectiveSettings } from "../../../protocol/rest-api";

const LIMIT_WORDS: Record<string, string> = {
  messagesPerSecondPerConnection: "Messages a second, one client connection",
  messagesPerSecondPerAgentConnection: "Messages a second, one agent connection",
  heldBytesPerAgentConnection: "Bytes held for a fast agent connection",
  messagesPerSecondPerTenant: "Messages a second, the whole tenant",
  connectionsPerKey: "Connections open under one key",
  liveSessionsPerTenant: "Live sessions",
  pendingPermissionsPerSession: "Requests waiting in one session",
  turnIdleMs: "A turn ends after this long without a word from the agent (ms)",
  outsideTurnAuditsPerMinute: "Requests outside a turn audited one by one, a minute",
  auditBytesPerDay: "Bytes of decision audit a day",
  rulesPerTenant: "Rules",
  ruleBytesPerTenant: "Bytes of rules",
  notificationTargetsPerTenant: "Notification targets",
};

/** The operator's limits, read-only for everyone in the tenant. */
export function Limits({ loaded }: { loaded: ApiEffectiveSettings }) {
  return (
    <section class="card settings-section" aria-labelledby="limits-title">
      <h3 id="limits-title">Limits</h3>
      <p class="hint">Set by the gateway's operator: they bound what this tenant costs everyone else. Ask the operator to change one.</p>
      <table class="limits">
        <thead>
          <tr>
            <th scope="col">Limit</th>
            <th scope="col">Now</th>
            <th scope="col">Default</th>
          </tr>
        </thead>
        <tbody>
          {(Object.keys(loaded.limits) as (keyof ApiEffectiveSettings["limits"])[]).map((k) => (
            <tr key={k}>
              <th scope="row">{LIMIT_WORDS[k] ?? k}</th>
              <td>{loaded.limits[k].toLocaleString()}</td>
              <td class="muted">{loaded.defaultLimits[k].toLocaleString()}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
