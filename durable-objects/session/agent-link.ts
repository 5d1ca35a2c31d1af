// The session's side of its link to the agent, whose single connection the AgentObject holds, the
// way in: what the AgentObject delivers (the agent's frames, its answers to client requests, the
// news that its connection is gone), applied in order and once each (`firstTime`), and
// dispatched to what acts on it — the session machine (protocol/session-machine.ts: answers, the
// departure's client requests and turn), the permission machine, the routed requests, the log and
// the clients. The way out is the machine's (`toAgent` and its order, agent-socket.ts `agentChannels`).

import { type Message, isObject, isRequest, isResponse } from "../../protocol/jsonrpc";
import { CANCEL_REQUEST, CLIENT_METHODS } from "../../protocol/methods";
import type { SessionMachine } from "../../protocol/session-machine";
import { isToolCallUpdate } from "../../protocol/tool-calls";
import type { AgentRequests } from "./agent-request-routing";
import { type AttachedClients, sendRewritable } from "./clients";
import { maybeFold } from "./compaction";
import type { FromAgent } from "./contract";
import type { PermissionMachine } from "../../protocol/permission-machine";
import type { SessionInfo } from "./session-info";
import type { AgentModes } from "./agent-modes";
import type { SessionStore } from "./store";
import type { RequestRows } from "./request-rows";
import type { TurnWatch } from "./turn-watch";
import { sessionLog } from "./session-log";

export interface AgentLinkParts {
  store: SessionStore;
  requests: RequestRows;
  clients: AttachedClients;
  turnWatch: TurnWatch;
  info: SessionInfo;
  permissions: PermissionMachine<WebSocket>;
  agentRequests: AgentRequests;
  machine: SessionMachine;
  agentModes: AgentModes;
}

export class AgentLink {
  constructor(private readonly parts: AgentLinkParts) {}

  // ── in: from the agent, through the AgentObject ──────────────────────────────────────────────
  /** A batch, handled as one event: one storage commit for all of it. */
  fromBatch(items: FromAgent[]): void {
    // No meta: never initialised, or deleted. (Another tenant's call cannot arrive: it names another object.)
    if (!this.parts.store.meta) return;
    this.parts.turnWatch.touch();
    this.applyBatch(items);
    // Progress is durable in the log entry a frame writes; only a batch that wrote none marks it.
    this.parts.turnWatch.persist(this.parts.store);
  }

  private applyBatch(items: FromAgent[]): void {
    for (const item of items) {
      if (!this.firstTime(item)) continue; // re-sent after an AgentObject restart: applied already
      // One frame that fails to apply must not take the rest of the batch with it.
      try {
        if (item.kind === "frame") this.frame(item.epoch, item.text);
        else if (item.kind === "response") this.parts.machine.agentAnswered(item.gwId, item.text);
        else this.gone(item);
      } catch (error) {
        sessionLog(this.parts.store).error("session.agent_frame_failed", "an agent frame failed to apply", { unexpected: true }, error);
      }
    }
  }

  /**
   * Exactly-once delivery from the AgentObject. It re-sends what a failed call may not have handed on
   * (also after its restart), so the session skips items it has already applied. Items are numbered
   * by the AgentObject in the order it accepted them and arrive in that order; the highest applied
   * number is kept in the log row each item writes (store-log.ts `appliedAgentSeq`), not in a row of
   * its own. Items that write no log row (answers, the agent's departure, its $/cancel_request, a
   * routed request) are applied idempotently instead, so one seen again after a restart is harmless.
   * True the first time an item is seen; it then counts as applied (also if applying it throws). The
   * departure and answers are neither checked nor counted: the AgentObject numbers the items it makes
   * itself (a departure, an error in place of an answer) from its own counter, above any range it
   * granted the edge, and counting them would make the session skip the edge's items still on their
   * way from that range (protocol/edge-routing.ts).
   */
  private firstTime(item: FromAgent): boolean {
    const { store } = this.parts;
    if (item.seq === undefined || item.kind === "gone" || item.kind === "response") return true;
    if (item.seq <= store.appliedAgentSeq) return false;
    store.appliedAgentSeq = item.seq;
    return true;
  }

  /** One frame of the agent; the AgentObject checked its limits and its JSON-RPC shape (parseFrame). */
  private frame(epoch: number, text: string): void {
    // SAFETY: the AgentObject passes on only frames that parseFrame accepted as messages.
    const message = JSON.parse(text) as Message;
    if (isResponse(message)) return;
    const params = "params" in message ? message.params : undefined;
    if (!isRequest(message)) {
      if (message.method === CLIENT_METHODS.sessionUpdate) return this.sessionUpdate(text, message, params);
      if (message.method === CANCEL_REQUEST) return this.agentCancelRequest(epoch, params);
      this.parts.store.append("ext", text);
      this.parts.clients.broadcast(text);
      return;
    }
    if (message.method === CLIENT_METHODS.sessionRequestPermission) {
      return this.parts.permissions.ask(epoch, message.id, text, params);
    }
    // Seen again after a restart (`firstTime` does not count routed requests): the client already has it.
    if (this.parts.requests.agentRequests({ agentReqId: message.id, epoch }).length > 0) return;
    this.parts.agentRequests.route(epoch, message.id, message.method, params);
  }

  private sessionUpdate(text: string, message: Message, params: unknown): void {
    const { store, info } = this.parts;
    const update = isObject(params) ? params.update : undefined;
    // The agent's own notice: live only, never history, to the clients that advertised notices (decision 0063).
    if (isObject(update) && update.sessionUpdate === "notice") return this.parts.clients.toNoticeClients(text);
    const seq = store.appendUpdate(text, message);
    maybeFold(store, seq);
    if (isToolCallUpdate(update)) {
      store.applyToolCall(update, seq);
      // A request waiting on this tool call whose operation changed is withdrawn and asked again (decision 0040).
      this.parts.permissions.toolCallChanged(update.toolCallId, update);
    } else if (isObject(update) && update.sessionUpdate === "session_info_update" && typeof update.title === "string") {
      info.setTitle(update.title);
    } else if (isObject(update) && update.sessionUpdate === "current_mode_update" && typeof update.currentModeId === "string") {
      // A governed mode is told, audited, and holds the session where the tenant forbids it (decision 0061).
      this.parts.agentModes.reported(info.setCurrentMode(update.currentModeId), update.currentModeId);
    } else if (isObject(update) && update.sessionUpdate === "config_option_update" && Array.isArray(update.configOptions)) {
      info.setConfigOptions(update.configOptions);
    }
    this.parts.clients.broadcast(text);
  }

  /** The agent withdrew one of its requests: withdraw the clients' copies (and confirm with -32800). */
  private agentCancelRequest(epoch: number, params: unknown): void {
    const requestId = isObject(params) ? params.requestId : undefined;
    if (typeof requestId !== "string" && typeof requestId !== "number") return;
    if (!this.parts.permissions.withdrawnByAgent(epoch, requestId)) this.parts.agentRequests.withdrawnByAgent(epoch, requestId);
  }

  /** The agent's connection is gone: nothing it asked can be answered, nothing it was asked will be. */
  private gone(info: { epoch: number; reason: string; gwIds: number[] }): void {
    const { store, clients, permissions } = this.parts;
    if (!store.meta) return;
    for (const pending of store.pending().filter((p) => p.agentEpoch <= info.epoch)) {
      permissions.withdraw(pending, { type: "agent_disconnected", reason: info.reason });
    }
    for (const r of this.parts.requests.agentRequests().filter((r) => r.agentEpoch <= info.epoch)) {
      this.parts.requests.takeAgentRequest(r.outId);
      const ws = clients.byConnection(r.connId);
      if (ws) sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: r.outId } }));
    }
    // Prompt queueing is the connection's that opened the session (decision 0067): the next one may not
    // advertise it, so until the session is opened again (session/load) a prompt while a turn runs is refused.
    if (store.meta.promptQueueing) store.meta = { ...store.meta, promptQueueing: false };
    this.parts.machine.agentGone(info.reason, info.gwIds);
  }
}
