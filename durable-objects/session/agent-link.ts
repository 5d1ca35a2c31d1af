// The session's side of its link to the agent, whose single connection the AgentObject holds. In:
// what the AgentObject delivers (the agent's frames, its answers to client requests, the news that
// its connection is gone), applied in order and once each (agent-delivery.ts), and dispatched to the
// modules that act on it. Out: `toAgent`, fire and forget, over the agent link (agent-socket.ts) or
// by RPC, retried once by RPC on a fresh stub; a client request that cannot be handed on is
// answered with an error (and a prompt's turn ends). A
// session/delete the agent agreed to ends here too: the session is forgotten.

import { type Message, RpcError, errorResponse, isObject, isRequest, isResponse, resultResponse } from "../../protocol/jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST, CLIENT_METHODS } from "../../protocol/methods";
import { deletionGoesAhead, sessionDeletedNotice } from "../../protocol/session-delete";
import { isToolCallUpdate } from "../../protocol/tool-calls";
import type { Env } from "../../core/env";
import type { ToAgent } from "../agent/contract";
import { AgentDelivery } from "./agent-delivery";
import type { AgentSocket } from "./agent-socket";
import type { AgentRequests } from "./agent-request-routing";
import { type AttachedClients, attachmentOf, send, sendRewritable } from "./clients";
import { appendUpdate, maybeFold } from "./compaction";
import type { FromAgent } from "./contract";
import type { Notifier } from "./notify";
import type { PermissionLifecycle } from "./permission-lifecycle";
import type { TenantRules } from "./tenant-rules";
import type { SessionInfo } from "./session-info";
import type { InflightRow, SessionStore } from "./store";
import type { TurnControl } from "./turn";
import type { TurnWatch } from "./turn-watch";
import type { SessionUnindex } from "./unindex";
import { stage } from "../../protocol/stage-timing";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import { ErrorCode } from "../../core/rpc-errors";
import { type AgentStub, objects } from "../objects";
import { sessionLog } from "./session-log";

export interface AgentLinkParts {
  ctx: DurableObjectState;
  env: Env;
  store: SessionStore;
  clients: AttachedClients;
  turnWatch: TurnWatch;
  info: SessionInfo;
  permissions: PermissionLifecycle;
  notifier: Notifier;
  agentRequests: AgentRequests;
  turn: TurnControl;
  rules: TenantRules;
  /** Takes a deleted session out of the tenant's index, retrying while D1 fails. */
  unindex: SessionUnindex;
  /** The agent link's session end: the fast lane to the AgentObject. */
  socket: AgentSocket;
  /** Sets the object's alarm to the earliest deadline, notify time, audit retry or idle time. */
  scheduleDeadline(): void;
  /**
   * The object's test seam (session-object.ts `SessionTesting`), applied at the two points a test may
   * steer: the stub of each RPC call to the AgentObject, and each frame sent on a link. Both hand on
   * the real one unless a test set its hook.
   */
  seam: { agent(real: AgentStub): AgentStub; send(frame: ToAgent, send: () => boolean): boolean };
}

export class AgentLink {
  private readonly delivery: AgentDelivery;
  private agentStub?: AgentStub;

  constructor(private readonly parts: AgentLinkParts) {
    this.delivery = new AgentDelivery(parts.ctx.storage.sql, parts.store);
  }

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
      if (!this.delivery.take(item)) continue; // re-sent after an AgentObject restart: applied already
      // One frame that fails to apply must not take the rest of the batch with it.
      try {
        if (item.kind === "frame") this.frame(item.epoch, item.text);
        else if (item.kind === "response") this.response(item.gwId, item.text);
        else this.gone(item);
      } catch (error) {
        sessionLog(this.parts.store).error("session.agent_frame_failed", "an agent frame failed to apply", { unexpected: true }, error);
      }
    }
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
    // Seen again after a restart (agent-delivery.ts): the client already has it.
    if (this.parts.store.agentRequests({ agentReqId: message.id, epoch }).length > 0) return;
    this.parts.agentRequests.route(epoch, message.id, message.method, params);
  }

  private sessionUpdate(text: string, message: Message, params: unknown): void {
    const { store, info } = this.parts;
    const update = isObject(params) ? params.update : undefined;
    const seq = appendUpdate(store, text, message);
    maybeFold(store, seq);
    if (isToolCallUpdate(update)) {
      store.applyToolCall(update, seq);
      // A request waiting on this tool call whose operation changed is withdrawn and asked again (decision 0040).
      this.parts.permissions.toolCallChanged(update.toolCallId, update);
    } else if (isObject(update) && update.sessionUpdate === "session_info_update" && typeof update.title === "string") {
      info.setTitle(update.title);
    } else if (isObject(update) && update.sessionUpdate === "current_mode_update" && typeof update.currentModeId === "string") {
      info.setCurrentMode(update.currentModeId);
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

  /** The agent answered a client request that the session forwarded under gwId. */
  private response(gwId: number, text: string): void {
    const { store } = this.parts;
    if (!store.meta) return; // forgotten earlier in this batch (session/delete)
    const inflight = store.takeInflight(gwId);
    if (!inflight) return;
    const response = JSON.parse(text) as Record<string, unknown>;
    if (inflight.method === AGENT_METHODS.sessionDelete && deletionGoesAhead(response))
      return this.deleteSession(inflight, response.result);
    if (inflight.method === AGENT_METHODS.sessionPrompt) this.parts.turn.end(gwId, response.result);
    // Whoever set an option, a client attaching later gets the current set in its session/load answer.
    if (
      inflight.method === AGENT_METHODS.sessionSetConfigOption &&
      isObject(response.result) &&
      Array.isArray(response.result.configOptions)
    ) {
      this.parts.info.setConfigOptions(response.result.configOptions);
    }
    this.parts.clients.toConnection(inflight.connId, JSON.stringify({ ...response, id: inflight.clientId }));
  }

  /** The agent's connection is gone: nothing it asked can be answered, nothing it was asked will be. */
  private gone(info: { epoch: number; reason: string; gwIds: number[] }): void {
    const { store, clients, permissions } = this.parts;
    const meta = store.meta;
    if (!meta) return;
    for (const pending of store.pending().filter((p) => p.agentEpoch <= info.epoch)) {
      permissions.withdraw(pending, { type: "agent_disconnected", reason: info.reason });
    }
    for (const r of store.agentRequests().filter((r) => r.agentEpoch <= info.epoch)) {
      store.takeAgentRequest(r.outId);
      const ws = clients.byConnection(r.connId);
      if (ws) sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: r.outId } }));
    }
    const message = `The agent "${meta.agent}" disconnected (${info.reason}) before answering`;
    for (const gwId of info.gwIds) {
      const inflight = store.takeInflight(gwId);
      if (!inflight) continue;
      const error = new RpcError(ErrorCode.internalError, `${message} ${inflight.method}`, { reason: "agent_disconnected" });
      clients.toConnection(inflight.connId, JSON.stringify(errorResponse(inflight.clientId, error)));
    }
    this.parts.turn.abandon(info.gwIds, "agent_disconnected", message);
    this.parts.scheduleDeadline();
  }

  // ── out: towards the agent, through the AgentObject ──────────────────────────────────────────
  /**
   * Each frame's key for the AgentObject's once-only hand-off; it starts where no earlier instance's
   * could still be in use (a late second try never matches another frame).
   */
  private nextKey = Date.now() * 1000;
  /** RPC calls to the AgentObject not yet returned: while there are any, frames go by RPC too, so none overtakes another. */
  private rpcInFlight = 0;
  /** Frames on the agent link not answered yet: while there are any (or RPC calls), an answer goes that way too. */
  private linkInFlight = 0;
  /** Answers on an edge link not answered yet: while there are any, the frames after them wait here (`afterEdge`). */
  private edgeInFlight = 0;
  private readonly afterEdge: (() => void)[] = [];

  /** How many frames for the agent wait behind an answer on an edge link (the session's test seam reads it). */
  get heldAfterEdgeAnswer(): number {
    return this.afterEdge.length;
  }

  /**
   * Fire and forget, in order. A frame goes on the agent link (agent-socket.ts) when there is one and
   * no RPC call is still out, otherwise as an RPC call (calls on one stub are delivered in the order
   * they are made). A request that cannot be handed to the agent is answered with an error (and a
   * prompt's turn ends); `after` learns whether the frame reached the agent (`threw`: the hand-off
   * itself failed). A failed hand-off is tried once more by RPC on a fresh stub (a stub whose object
   * crashed stays broken); both tries carry the frame's `key`, and the AgentObject hands a key on
   * once, so the second try never duplicates a frame (a notification included).
   *
   * An answer to one of the agent's requests goes on the edge link, when there is one and nothing
   * sent before it is still on its way through the AgentObject: the edge holds the agent's open
   * requests and sends each one answer (protocol/edge-routing.ts `EdgeAnswers`, decision 0034). If
   * that fails (the link closed, or it is not the edge of the request's connection), the one second
   * try goes through the AgentObject, which hands it to the edge, which drops it if the first got
   * there. Frames after an answer on the edge link wait until it is answered, so none overtakes it.
   */
  toAgent(frame: ToAgent, after?: (delivered: boolean, threw: boolean) => void, retried = false, key = this.nextKey++): void {
    stage("session.toAgent", frame);
    const { env, store } = this.parts;
    const meta = store.meta;
    if (!meta) return;
    const notHeld = "the agent does not hold this session";
    const settled = (delivered: boolean, threw: boolean, reason: string) => {
      if (!delivered && frame.type === "request") this.requestUndelivered(frame.gwId, reason);
      after?.(delivered, threw);
    };
    if (!retried && (this.edgeInFlight > 0 || this.afterEdge.length > 0)) {
      if (frame.type !== "response" || this.afterEdge.length > 0) {
        this.afterEdge.push(() => this.toAgent(frame, after, retried, key));
        return;
      }
    }
    if (!retried && frame.type === "response" && this.rpcInFlight === 0 && this.linkInFlight === 0) {
      const sent = this.parts.seam.send(frame, () =>
        this.parts.socket.send(
          frame,
          key,
          (outcome) => {
            this.edgeInFlight--;
            // The edge failed it: the one second try goes through the AgentObject (no stub is broken).
            if (outcome === "failed") this.toAgent(frame, after, true, key);
            else settled(outcome === "delivered", false, notHeld);
            if (this.edgeInFlight === 0) for (const next of this.afterEdge.splice(0)) next();
          },
          true,
        ),
      );
      if (sent) {
        this.edgeInFlight++;
        return;
      }
    }
    if (!retried && this.rpcInFlight === 0) {
      this.linkInFlight++;
      const sent = this.parts.seam.send(frame, () =>
        this.parts.socket.send(frame, key, (outcome) => {
          this.linkInFlight--;
          if (outcome === "failed") {
            // The link failed, maybe with its AgentObject (a crash): the one try by RPC goes on a fresh
            // stub, as a second try after a failed call does (a stub whose object crashed stays broken).
            this.agentStub = undefined;
            this.toAgent(frame, after, true, key);
          } else settled(outcome === "delivered", false, notHeld);
        }),
      );
      if (sent) return;
      this.linkInFlight--;
    }
    const cached = (this.agentStub ??= objects.agent(env, meta.tenantId, meta.agent));
    const stub = this.parts.seam.agent(cached);
    const ref = { tenantId: meta.tenantId, sessionId: meta.sessionId };
    this.rpcInFlight++;
    this.parts.ctx.waitUntil(
      stub
        .toAgent(meta.agent, ref, frame, key)
        .finally(() => this.rpcInFlight--)
        .then(
          (delivered) => settled(delivered, false, notHeld),
          (e: unknown) => {
            sessionLog(this.parts.store).warn("session.agent_delivery_failed", "handing a frame to the agent failed; tried again", {}, e);
            if (this.agentStub === cached) this.agentStub = undefined;
            if (!retried) this.toAgent(frame, after, true, key);
            else settled(false, true, "the hand-off to the agent failed");
          },
        ),
    );
  }

  /** A client request that never reached the agent: its sender gets an error, a prompt's turn ends. */
  private requestUndelivered(gwId: number, reason: string): void {
    const { store } = this.parts;
    const inflight = store.takeInflight(gwId);
    const meta = store.meta;
    if (!inflight || !meta) return;
    if (inflight.method === AGENT_METHODS.sessionDelete) return this.deleteSession(inflight, {});
    const message = `The gateway could not hand ${inflight.method} to the agent "${meta.agent}" (${reason}); nothing was done, try again`;
    const ws = this.parts.clients.byConnection(inflight.connId);
    if (ws)
      send(
        ws,
        JSON.stringify(errorResponse(inflight.clientId, new RpcError(ErrorCode.internalError, message, { reason: "agent_unreachable" }))),
      );
    this.parts.turn.abandon([gwId], "agent_unreachable", message, true);
  }

  // ── session/delete went ahead ────────────────────────────────────────────────────────────────
  /** (protocol/session-delete.ts): requests cancelled, the session forgotten, then clients told and detached. */
  private deleteSession(inflight: InflightRow, result: unknown): void {
    const { ctx, store, clients } = this.parts;
    const meta = store.meta;
    if (!meta) return;
    const deleter = clients.byConnection(inflight.connId);
    const user = deleter ? (attachmentOf(deleter)?.user ?? null) : null;
    this.parts.permissions.cancelAll({ type: "cancel", connectionId: inflight.connId, user });
    this.parts.notifier.withdrawAll("session_deleted");
    store.forget();
    this.parts.scheduleDeadline();
    const answer = JSON.stringify(resultResponse(inflight.clientId, isObject(result) ? result : {}));
    const notice = sessionDeletedNotice(meta.sessionId, user);
    const attached = clients.all();
    // Out of the index first, so nobody who hears of the deletion can still list or load the session;
    // if D1 fails, the alarm keeps trying (unindex.ts), and the clients are told all the same.
    const unindexed = this.parts.unindex.remove({ tenantId: meta.tenantId, sessionId: meta.sessionId });
    ctx.waitUntil(
      unindexed.then(() => {
        this.parts.scheduleDeadline();
        for (const ws of attached) {
          send(ws, ws === deleter ? answer : notice);
          closeQuietly(ws, CLOSE.sessionDeleted, "the session was deleted");
        }
      }),
    );
  }
}
