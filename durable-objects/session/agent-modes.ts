// An agent that reports a governed mode (`current_mode_update` to `bypassPermissions`, `yolo`, a
// mode the gateway does not know…; decision 0061): every client is told, in the session's log
// (`_acp_gateway/agent_mode_changed`), and the tenant's decision audit records it with the agent as
// who decided. Whether the agent switched itself or reports a switch an approver made, the mode is
// one in which it may ask fewer questions, so people see it either way; its requests are still judged.
// A mode the tenant forbids (settings.modes `forbid`, or `forbidLessOversight`) holds the session as an
// unasked run does (decision 0056) until an approver resumes it: an approver's switch to it was
// refused at the edge, so the agent made it by itself. Settings that cannot be read hold it too.

import { insertAuditRows } from "../../db/queries/audit";
import { appendToChain } from "../../db/queries/audit-chain";
import { tenantById } from "../../db/queries/tenants";
import type { TenantSettings } from "../../core/principal";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { refusedModeChange } from "../../protocol/people/acp-methods";
import { modeChangesOf } from "../../protocol/people/modes";
import { agentSwitched } from "../../protocol/people/session-modes";
import { AGENT_METHODS } from "../../protocol/methods";
import type { SessionInfo } from "./session-info";
import { sessionLog } from "./session-log";
import type { SessionStore } from "./store";

export interface AgentModePorts {
  db: () => D1Database;
  store: SessionStore;
  info: SessionInfo;
  waitUntil: (promise: Promise<unknown>) => void;
  /** Holds the session: the mode is one the tenant forbids (session/unasked-runs.ts `holdForMode`). */
  hold: (mode: string) => void;
}

export class AgentModes {
  constructor(private readonly ports: AgentModePorts) {}

  /** The agent reported `to` as the session's mode (was `from`): told, audited and judged when it is governed. */
  reported(from: string | null, to: string): void {
    const { store, info } = this.ports;
    const meta = store.meta;
    if (!meta) return;
    const switched = agentSwitched(meta.sessionId, from, to);
    if (!switched) return;
    info.notice(GATEWAY_NOTIFICATIONS.agentModeChanged, { ...switched, governed: true });
    const row = {
      id: crypto.randomUUID(),
      tenantId: meta.tenantId,
      sessionId: meta.sessionId,
      agent: meta.agent,
      kind: "mode",
      name: "mode",
      operation: `current_mode_update mode=${to}`,
      outcome: "selected" as const,
      decidedBy: "agent" as const,
      policy: "modes:agent",
      reason: from === null ? "reported by the agent" : `reported by the agent (was ${from})`,
      at: Date.now(),
    };
    const db = this.ports.db();
    this.ports.waitUntil(
      insertAuditRows(db, [row])
        .then(() => appendToChain(db, meta.tenantId, [row]))
        .catch((e: unknown) => sessionLog(store).warn("session.mode_audit_failed", "an agent's governed mode could not be audited", {}, e)),
    );
    this.ports.waitUntil(this.forbidden(meta.tenantId, to).then((forbidden) => forbidden && this.ports.hold(to)));
  }

  /** Whether the tenant forbids `mode` to everyone; unreadable settings: yes (closed world). */
  private async forbidden(tenantId: string, mode: string): Promise<boolean> {
    const [change] = modeChangesOf(AGENT_METHODS.sessionSetMode, { modeId: mode });
    if (!change) return false;
    try {
      const tenant = await tenantById(this.ports.db(), tenantId);
      const settings = tenant ? (JSON.parse(tenant.settings) as TenantSettings) : undefined;
      const refused = refusedModeChange("owner", settings?.modes, change);
      return refused !== null && typeof refused.data === "object" && refused.data !== null && "forbidden" in refused.data;
    } catch (error) {
      sessionLog(this.ports.store).warn(
        "session.modes_setting_unavailable",
        "the tenant's settings.modes could not be read; holding",
        {},
        error,
      );
      return true;
    }
  }
}
