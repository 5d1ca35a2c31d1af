// The gateway's own "always allow" and "always reject" (decision 0042). The gateway owns what a team
// remembers, and agents offer less or more than it stores: none offers `reject_always`, qwen's "Allow
// All Edits" is one file to the gateway, codex's "don't ask again for commands that start with…" is
// codex's own memory. So for any request a rule could cover, the copy clients get carries two more
// options, ids in the gateway's namespace (an agent cannot offer them: protocol/gateway-namespace.ts),
// each named by the description of the rule the gateway would store (rules/derive.ts `deriveRule`).
// Chosen, the gateway stores that rule and the agent gets the offered `*_once` option of the same
// decision, never an "always" of its own: a gateway option is added only where that once exists.

import { isObject } from "./jsonrpc";
import type { PermissionOption } from "./permissions";
import { deriveRule } from "./rules/derive";

export const GATEWAY_ALLOW_ALWAYS = "_acp_gateway/allow_always";
export const GATEWAY_REJECT_ALWAYS = "_acp_gateway/reject_always";

const DECISIONS = [
  { optionId: GATEWAY_ALLOW_ALWAYS, kind: "allow_always", once: "allow_once" },
  { optionId: GATEWAY_REJECT_ALWAYS, kind: "reject_always", once: "reject_once" },
] as const;

/**
 * The gateway's options for a request: for each decision whose `*_once` the agent offered and for
 * which a rule can be derived, one option named by that rule's description. None when no rule could
 * cover the operation (it is ambiguous, unidentifiable, or a mode switch to allow).
 */
export function gatewayOptions(toolCall: unknown, offered: readonly PermissionOption[], cwd: string, agent: string): PermissionOption[] {
  const call = isObject(toolCall) ? toolCall : {};
  // An agent that offers an id in the gateway's namespace could be read as the gateway: none is added.
  if (offered.some((o) => o.optionId.startsWith("_acp_gateway/"))) return [];
  const out: PermissionOption[] = [];
  for (const d of DECISIONS) {
    if (!offered.some((o) => o.kind === d.once)) continue;
    // The description does not depend on the exact-match hash; the stored rule gets the real one.
    const rule = deriveRule({ toolCall: call, optionKind: d.kind, optionName: "", cwd, agent, exactHash: "" });
    if (rule && !("reason" in rule)) out.push({ optionId: d.optionId, kind: d.kind, name: `Always (gateway rule): ${rule.description}` });
  }
  return out;
}

/** The copy's params with the gateway's options after the agent's (params that are not an object, or have no options, untouched). */
export function withGatewayOptions(paramsText: string, extra: readonly PermissionOption[]): string {
  if (extra.length === 0) return paramsText;
  const params = JSON.parse(paramsText) as unknown;
  if (!isObject(params) || !Array.isArray(params.options)) return paramsText;
  return JSON.stringify({ ...params, options: [...(params.options as unknown[]), ...extra] });
}

/** Whether an option is one of the gateway's own. */
export function isGatewayOption(option: PermissionOption): boolean {
  return option.optionId === GATEWAY_ALLOW_ALWAYS || option.optionId === GATEWAY_REJECT_ALWAYS;
}
