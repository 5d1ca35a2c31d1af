// A client's frame at the session (through the edge Worker, which already checked it; parsed here
// once more, as it arrives as text on a socket): a request or notification for the agent goes to the
// session machine, an answer to a permission request's copy to the permission machine, an answer to
// a routed fs/terminal request back to the agent. The role and the session's existence are the machine's to check.

import { type JsonRpcId, type Message, errorResponse, isRequest, isResponse, parseFrame, toRpcError } from "../../protocol/jsonrpc";
import type { SessionMachine } from "../../protocol/session-machine";
import { stage } from "../../protocol/stage-timing";
import type { AgentRequests } from "./agent-request-routing";
import { attachmentOf, send } from "./clients";
import type { PermissionMachine } from "../../protocol/permission-machine";
import { DECIDE_MODE_CHANGE, HOLD_MODE_CHANGE } from "../../protocol/people/mode-approval";
import type { ModeApprovals } from "./mode-approvals";
import { sessionLog } from "./session-log";
import { type SessionStore, permIdOfCopy } from "./store";

export class ClientMessages {
  constructor(
    private readonly store: SessionStore,
    private readonly machine: SessionMachine,
    private readonly permissions: PermissionMachine<WebSocket>,
    private readonly agentRequests: AgentRequests,
    private readonly modes: ModeApprovals,
  ) {}

  /** One frame from a client's socket; a request that fails is answered with its error, never dropped. */
  handle(ws: WebSocket, data: string | ArrayBuffer): void {
    stage("session.answer", data);
    if (typeof data !== "string") return;
    const parsed = parseFrame(data);
    if (!parsed.ok) {
      if (parsed.reply) send(ws, JSON.stringify(parsed.reply));
      return;
    }
    const message = parsed.message;
    try {
      if (isResponse(message)) return this.response(ws, message);
      if (isRequest(message)) return this.request(ws, message.id, message.method, message.params);
      return this.notification(ws, message.method, "params" in message ? message.params : undefined);
    } catch (error) {
      if (isRequest(message))
        send(ws, JSON.stringify(errorResponse(message.id, toRpcError(error, "session", "Internal error in the session"))));
      else
        sessionLog(this.store).error(
          "session.client_message_failed",
          "a client's notification failed in the session",
          { unexpected: true },
          error,
        );
    }
  }

  private request(ws: WebSocket, id: JsonRpcId, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    if (!client) return;
    // Four eyes on a mode change (decision 0061): held by the gateway, decided by a person; neither
    // reaches the agent as sent. Admitted by the machine as every request is (the role, then the session).
    if (method === HOLD_MODE_CHANGE || method === DECIDE_MODE_CHANGE) {
      this.machine.admit(client, method, params);
      if (method === HOLD_MODE_CHANGE) return this.modes.propose(client, id, params);
      return void this.modes.decideFor(ws, client, id, params);
    }
    this.machine.request(client, id, method, params);
  }

  private notification(ws: WebSocket, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    if (!client) return;
    this.machine.notification(client, method, params);
  }

  private response(ws: WebSocket, message: Message & { id: JsonRpcId | null }): void {
    const client = attachmentOf(ws);
    if (!client || typeof message.id !== "number") return;
    const permId = permIdOfCopy(message.id);
    if (permId !== undefined) return this.permissions.answer(ws, client, permId, message as { result?: unknown; error?: unknown });
    this.agentRequests.answered(message.id, message as { result?: unknown; error?: unknown });
  }
}
