// What clients are told when the gateway answers an agent's permission request by itself, nobody
// asked: what (the operation, as the approval page shows it), why (no turn runs, or the turn was
// cancelled), and what the agent got. Real agents do ask outside a turn: claude-agent-acp finishes a
// cancelled prompt's work after the next turn ended, and a silent `cancelled` made that prompt look
// as if it did nothing. Two forms: `_acp_gateway/answered_by_gateway` to every attached client (kept
// in the session's log as every gateway notice is), and an ACP `notice` session update to clients
// that advertised `clientCapabilities.session.notices` (ACP: notices are live, not history, and are
// sent only to clients that asked for them).

import { displayString } from "./display-text";
import { isObject } from "./jsonrpc";
import { type OperationView, operationView } from "./operation-view";
import { noticeFrame } from "./gateway-notices";

/** Why the gateway answered by itself: no turn ran, or the turn was being cancelled. */
export type AnsweredReason = "outside_turn" | "after_cancel";

export interface AnsweredByGateway {
  sessionId: string;
  toolCallId: string | null;
  operation: OperationView;
  reason: AnsweredReason;
  /** The answer the agent got, exactly. */
  agentGot: unknown;
  /** One sentence a person can read. */
  message: string;
}

/** The `_acp_gateway/answered_by_gateway` params for a request answered `agentGot` without asking anyone. */
export function answeredByGateway(
  sessionId: string,
  toolCall: unknown,
  sessionCwd: string,
  reason: AnsweredReason,
  agentGot: unknown,
): AnsweredByGateway {
  const operation = operationView(toolCall, sessionCwd);
  const toolCallId = isObject(toolCall) && typeof toolCall.toolCallId === "string" ? toolCall.toolCallId : null;
  const when =
    reason === "after_cancel"
      ? "after the turn was cancelled"
      : "while no turn was running (it may be finishing the work of a prompt that was cancelled)";
  const message = `The agent asked to ${what(operation)} ${when}; the gateway answered it "cancelled" without asking anyone, so it did not run.`;
  return { sessionId, toolCallId, operation, reason, agentGot, message };
}

/** The same report as an ACP `notice` session update (a warning), for clients that advertise notices (gateway-notices.ts). */
export function noticeUpdate(report: AnsweredByGateway): string {
  return noticeFrame(report.sessionId, {
    severity: "warning",
    title: report.reason === "after_cancel" ? "A request after cancel was refused" : "A request outside a turn was refused",
    description: report.message,
  });
}

/** The operation in a few words, every character shown as it is (display-text.ts). */
function what(op: OperationView): string {
  const limit = (s: string) => displayString(s.length > 200 ? `${s.slice(0, 200)}…` : s);
  if (op.command) return `run \`${limit(op.command.text)}\``;
  if (op.paths.length > 0) return `${op.kind === "edit" ? "edit" : (op.kind ?? "use")} ${limit(op.paths.join(", "))}`;
  if (op.agentTitle) return `"${limit(op.agentTitle)}" (${op.kind ?? "a tool call"})`;
  return `use a tool (${op.kind ?? "unknown kind"})`;
}
