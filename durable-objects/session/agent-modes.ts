// An agent that reports a governed mode (`current_mode_update` to `bypassPermissions`, `yolo`, a
// mode the gateway does not know…; decision 0061): every client is told, in the session's log
// (`_acp_gateway/agent_mode_changed`), and the tenant's decision audit records it with the agent as
// who decided. Whether the agent switched itself or reports a switch an approver made, the mode is
// one in which it may ask fewer questions, so people see it either way. Its requests are still judged.

import { insertAuditRows } from "../../db/queries/audit";
import { appendToChain } from "../../db/queries/audit-chain";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { agentSwitched } from "../../protocol/people/session-modes";
import { sessionLog } from "./session-log";
import type { SessionStore } from "./store";

export interface AgentModePorts {
  db: D1Database;
  store: SessionStore;
  notice: (method: string, params: object) => void;
  waitUntil: (promise: Promise<unknown>) => void;
}

/** The agent reported `to` as the session's mode (was `from`): told and audited when it is governed. */
export function agentModeReported(ports: AgentModePorts, from: string | null, to: string): void {
  const meta = ports.store.meta;
  if (!meta) return;
  const switched = agentSwitched(meta.sessionId, from, to);
  if (!switched) return;
  ports.notice(GATEWAY_NOTIFICATIONS.agentModeChanged, { ...switched, governed: true });
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
  ports.waitUntil(
    insertAuditRows(ports.db, [row])
      .then(() => appendToChain(ports.db, meta.tenantId, [row]))
      .catch((e: unknown) =>
        sessionLog(ports.store).warn("session.mode_audit_failed", "an agent's governed mode could not be audited", {}, e),
      ),
  );
}
