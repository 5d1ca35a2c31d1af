// session/delete when several clients, of several people in one tenant, share a session. The rules:
// - Any client of the session's tenant may delete it (the tenant's sessions are its members' to share,
//   as for session/load and session/prompt).
// - Not while a turn is running: the deleter is told to cancel it first (nobody's work is cut off
//   by someone else's delete in mid-turn without a person deciding to stop it).
// - The request goes to the agent (it may keep its own copy). The session is deleted when the agent
//   agrees, does not implement session/delete (-32601), or cannot be reached; any other error from
//   the agent is passed to the deleter and nothing is deleted.
// - Then: every waiting permission request is answered `cancelled`; the other attached clients get
//   `_acp_gateway/session_deleted` and are detached (their connections stay open); the session's row
//   leaves the D1 index (so session/list, session/load and the REST API no longer know it); and the
//   SessionObject forgets the session (its log, tool calls and requests), keeping only audit rows not
//   yet written to D1.

import { RpcError } from "./jsonrpc";
import { ErrorCode } from "../core/rpc-errors";
import { GATEWAY_NOTIFICATIONS } from "../core/gateway-notifications";

export function deleteDuringTurn(sessionId: string, startedBy: string | null | undefined): RpcError {
  return new RpcError(
    ErrorCode.invalidRequest,
    `A turn is running in session ${sessionId}${startedBy ? ` (started by ${startedBy})` : ""}; send session/cancel and wait for it to end, then delete the session.`,
    { reason: "turn_in_progress" },
  );
}

/** Whether the agent's answer to session/delete lets the gateway delete its record of the session. */
export function deletionGoesAhead(response: { result?: unknown; error?: unknown }): boolean {
  if (response.error === undefined) return true;
  const code = typeof response.error === "object" && response.error !== null ? (response.error as { code?: unknown }).code : undefined;
  return code === ErrorCode.methodNotFound; // an agent that does not implement session/delete
}

/** What the other clients of a deleted session are told before they are detached: the params. */
export function sessionDeletedParams(sessionId: string, deletedBy: string | null) {
  return {
    sessionId,
    deletedBy,
    message: `Session ${sessionId} was deleted${deletedBy ? ` by ${deletedBy}` : ""}; you were detached from it.`,
  };
}

/** The notification itself. */
export function sessionDeletedNotice(params: ReturnType<typeof sessionDeletedParams>): string {
  return JSON.stringify({ jsonrpc: "2.0", method: GATEWAY_NOTIFICATIONS.sessionDeleted, params });
}
