// SessionObject: the Durable Object shell of one ACP session (one object per tenant + sessionId):
// the platform handlers, attach, and routing of client and agent messages to the modules that do
// the work: permission-lifecycle.ts (permission requests), turn.ts (the turn), agent-request-routing.ts
// (fs/terminal/elicitation requests), session-info.ts, notify.ts, store.ts (all state, in SQLite;
// every socket is hibernatable, so an evicted object comes back whole on the next event).
// Over 400 lines for now on purpose: the agent-link section (fromAgent…, agentGone, toAgent) stays
// in place while it is reworked on another branch; moving it out is the next split.
//
// Traffic:  client ⇄ edge Worker ⇄ (WebSocket per connection) ⇄ SessionObject ⇄ (RPC) ⇄ AgentObject ⇄ agent

import { deleteSessionIndex } from "../../db/queries/sessions";
import { DurableObject } from "cloudflare:workers";
import {
  type JsonRpcId,
  type Message,
  RpcError,
  errorResponse,
  isObject,
  isRequest,
  isResponse,
  parseFrame,
  resultResponse,
  toRpcError,
} from "../../protocol/jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST, CLIENT_METHODS } from "../../protocol/methods";
import { CANCELLED_RESULT } from "../../protocol/permissions";
import { isToolCallUpdate } from "../../protocol/tool-calls";
import type { Env } from "../../worker/env";
import type { ToAgent } from "../agent/contract";
import type { ApprovalView, DecidedBy, FromAgent, LinkRefusal, SessionRef, SessionSnapshot } from "./contract";
import { AgentDelivery } from "./agent-delivery";
import { AuditOutbox } from "./audit-outbox";
import { TurnWatch } from "./turn-watch";
import { AttachedClients, attachmentOf, connTag, send, sendPacked, sendRewritable } from "./clients";
import { ATTACH_HEADER, attachRequestOf } from "../../protocol/session-wire";
import { type InflightRow, type PendingRequest, SessionStore, type SessionMeta, permIdOfCopy } from "./store";
import { CLOSE_SESSION_DELETED, deleteDuringTurn, deletionGoesAhead, sessionDeletedNotice } from "../../protocol/session-delete";
import { CompactionTally, appendUpdate, maybeFold } from "./compaction";
import { AgentRequests } from "./agent-request-routing";
import { claimRefusal } from "./ownership";
import { Notifier } from "./notify";
import { PermissionLifecycle } from "./permission-lifecycle";
import { RulesLink } from "./rules-link";
import { sessionSnapshot } from "./snapshot";
import { SessionInfo, loadResult } from "./session-info";
import { TurnControl } from "./turn";

export class SessionObject extends DurableObject<Env> {
  private readonly store: SessionStore;
  private readonly clients: AttachedClients;
  private readonly notifier: Notifier;
  private readonly rulesLink: RulesLink;
  private readonly permissions: PermissionLifecycle;
  private readonly info: SessionInfo;
  private readonly turn: TurnControl;
  private readonly agentRequests: AgentRequests;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SessionStore(ctx.storage.sql);
    this.clients = new AttachedClients(ctx);
    this.delivery = new AgentDelivery(ctx.storage.sql, this.store);
    this.audits = new AuditOutbox(ctx.storage.sql, env.DB);
    this.turnWatch = new TurnWatch(ctx.storage.sql);
    this.notifier = new Notifier(ctx, env, this.store, () => this.scheduleDeadline());
    this.rulesLink = new RulesLink(ctx, env, this.store);
    this.info = new SessionInfo(ctx, env, this.store, this.clients);
    this.permissions = new PermissionLifecycle({
      ctx,
      store: this.store,
      clients: this.clients,
      notifier: this.notifier,
      turnWatch: this.turnWatch,
      audits: this.audits,
      rules: this.rulesLink,
      info: this.info,
      toAgent: (frame, after) => this.toAgent(frame, after),
      scheduleDeadline: () => this.scheduleDeadline(),
    });
    this.agentRequests = new AgentRequests(this.store, this.clients, (frame) => this.toAgent(frame));
    this.turn = new TurnControl({
      store: this.store,
      clients: this.clients,
      info: this.info,
      permissions: this.permissions,
      toAgent: (frame) => this.toAgent(frame),
      scheduleDeadline: () => this.scheduleDeadline(),
    });
  }
  private readonly delivery: AgentDelivery;
  private readonly audits: AuditOutbox;
  private readonly turnWatch: TurnWatch;

  // ── set-up (called by the AgentObject when the agent created or loaded the session) ──────────
  /**
   * A session belongs to the agent that created it: `claimRefusal` says why an agent's session/new
   * (never allowed to re-initialise a session) or session/load (only of its own) is refused, and
   * then nothing here changes.
   */
  init(
    ref: SessionRef,
    meta: Omit<SessionMeta, "tenantId" | "sessionId" | "createdAt">,
    opening: "new" | "load" = "load",
  ): { ok: true } | { ok: false; message: string } {
    const existing = this.store.meta;
    const refusal = claimRefusal(existing, ref, meta.agent, opening);
    if (refusal) return { ok: false, message: refusal };
    this.store.meta = {
      ...existing,
      ...meta,
      tenantId: ref.tenantId,
      sessionId: ref.sessionId,
      createdAt: existing?.createdAt ?? Date.now(),
    };
    return { ok: true };
  }

  exists(): boolean {
    return this.store.meta !== undefined;
  }

  // ── a client attaches: history, then (for session/load) the answer, then pending requests, then live ──
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade") !== "websocket") return new Response("expected a WebSocket", { status: 426 });
    const attach = attachRequestOf(request.headers.get(ATTACH_HEADER));
    const meta = this.store.meta;
    if (!attach || !meta || meta.tenantId !== attach.tenantId || meta.sessionId !== attach.sessionId) {
      return new Response("session not found", { status: 404 });
    }
    const pair = new WebSocketPair();
    const [edge, server] = [pair[0], pair[1]];
    // Everything below is synchronous: no other event can run between reading the log and joining
    // the live fan-out, so the client sees no gap and no duplicate.
    this.ctx.acceptWebSocket(server, [connTag(attach.client.connId)]);
    server.serializeAttachment(attach.client);
    if (attach.mode !== "live") {
      const tally = new CompactionTally();
      sendPacked(server, tally.count(replayBodies(this.store.replayable())));
      if (tally.compacted) send(server, tally.notice(meta.sessionId));
    }
    if (attach.mode === "load" && attach.loadRequestId !== undefined) {
      send(server, JSON.stringify(resultResponse(attach.loadRequestId, loadResult(meta))));
    }
    this.permissions.sendPendingTo(server);
    return new Response(null, { status: 101, webSocket: edge });
  }

  // ── messages from a client (through the edge Worker, which already checked the frame) ────────
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const client = attachmentOf(ws);
    if (!client || typeof data !== "string") return;
    const parsed = parseFrame(data);
    if (!parsed.ok) {
      if (parsed.reply) send(ws, JSON.stringify(parsed.reply));
      return;
    }
    const message = parsed.message;
    try {
      if (isResponse(message)) return this.onClientResponse(ws, message);
      if (isRequest(message)) return this.onClientRequest(ws, message.id, message.method, message.params);
      return this.onClientNotification(ws, message.method, "params" in message ? message.params : undefined);
    } catch (error) {
      if (isRequest(message))
        send(ws, JSON.stringify(errorResponse(message.id, toRpcError(error, "session", "Internal error in the session"))));
      else console.error("session: client message failed", error);
    }
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    const client = attachmentOf(ws);
    if (client) this.detach(client.connId);
    try {
      ws.close(code === 1005 ? 1000 : code, "closed");
    } catch {
      // already closed
    }
  }

  override webSocketError(ws: WebSocket): void {
    const client = attachmentOf(ws);
    if (client) this.detach(client.connId);
  }

  /** A client that leaves loses nothing: its copies go, the requests stay pending for the others. */
  private detach(connId: string): void {
    this.notifier.onDetach(this.clients.list().filter((c) => c.connId !== connId).length);
    // The last client gone and nothing waiting on people: rule changes need not wake this session.
    if (this.clients.all().every((ws) => attachmentOf(ws)?.connId === connId) && !this.store.hasAsking()) this.watchRules(false);
    this.agentRequests.clientGone(connId);
  }

  private onClientRequest(ws: WebSocket, id: JsonRpcId, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    const meta = this.store.meta;
    if (!client || !meta) return;
    if (method === AGENT_METHODS.sessionPrompt) return this.turn.start(client, id, method, params);
    if (method === AGENT_METHODS.sessionDelete && this.store.turn.state !== "idle")
      throw deleteDuringTurn(meta.sessionId, this.store.turn.user);
    const gwId = this.store.nextId();
    this.store.addInflight({ gwId, connId: client.connId, clientId: id, method, createdAt: Date.now() });
    this.toAgent({ type: "request", gwId, method, params });
  }

  private onClientNotification(ws: WebSocket, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    if (!client) return;
    if (method === AGENT_METHODS.sessionCancel) {
      this.cancelTurn({ type: "cancel", connectionId: client.connId, user: client.user });
      this.toAgent({ type: "notification", method, params });
      return;
    }
    if (method === CANCEL_REQUEST) {
      const requestId = isObject(params) ? params.requestId : undefined;
      if (typeof requestId !== "string" && typeof requestId !== "number") return;
      const inflight = this.store.inflightByClient(client.connId, requestId);
      if (inflight) this.toAgent({ type: "cancel_request", gwId: inflight.gwId });
      return;
    }
    this.toAgent({ type: "notification", method, params });
  }

  private onClientResponse(ws: WebSocket, message: Message & { id: JsonRpcId | null }): void {
    const client = attachmentOf(ws);
    if (!client || typeof message.id !== "number") return;
    const permId = permIdOfCopy(message.id);
    if (permId !== undefined) return this.permissions.answer(ws, client, permId, message as { result?: unknown; error?: unknown });
    this.agentRequests.answered(message.id, message as { result?: unknown; error?: unknown });
  }

  // ── permission requests (permission-lifecycle.ts); these names are the agent-link section's ──
  private onPermissionRequest(epoch: number, agentReqId: JsonRpcId, text: string, params: unknown): void {
    this.permissions.ask(epoch, agentReqId, text, params);
  }

  private resolvePermission(pending: PendingRequest, result: unknown, by: DecidedBy): void {
    this.permissions.resolve(pending, result, by);
  }

  private withdrawCopies(permId: number): void {
    this.permissions.withdrawCopies(permId);
  }

  private audit(pending: PendingRequest, outcome: unknown, by: DecidedBy): void {
    this.permissions.audit(pending, outcome, by);
  }

  private watchRules(waiting: boolean): void {
    this.rulesLink.watch(waiting);
  }

  private cancelTurn(by: DecidedBy): void {
    this.turn.cancel(by);
  }

  // ── messages from the agent (through the AgentObject) ───────────────────────────────────────────
  /** A batch, handled as one event: one storage commit for all of it. */
  fromAgentBatch(ref: SessionRef, items: FromAgent[]): void {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    this.turnWatch.touch();
    for (const item of items) {
      if (!this.delivery.take(item)) continue; // re-sent after an AgentObject restart: applied already
      // One frame that fails to apply must not take the rest of the batch with it.
      try {
        if (item.kind === "frame") this.fromAgent(item.epoch, item.text);
        else if (item.kind === "response") this.fromAgentResponse(ref, item.gwId, item.text);
        else this.agentGone(ref, item);
      } catch (error) {
        console.error("session: an agent frame failed to apply", error);
      }
    }
  }

  /** One frame of the agent; the AgentObject checked its limits and its JSON-RPC shape (parseFrame). */
  private fromAgent(epoch: number, text: string): void {
    // SAFETY: the AgentObject passes on only frames that parseFrame accepted as messages.
    const message = JSON.parse(text) as Message;
    if (isResponse(message)) return;
    const params = "params" in message ? message.params : undefined;
    if (!isRequest(message)) {
      if (message.method === CLIENT_METHODS.sessionUpdate) return this.onSessionUpdate(text, message, params);
      if (message.method === CANCEL_REQUEST) return this.onAgentCancelRequest(epoch, params);
      const seq = this.store.append("ext", text);
      void seq;
      this.clients.broadcast(text);
      return;
    }
    if (message.method === CLIENT_METHODS.sessionRequestPermission) {
      return this.onPermissionRequest(epoch, message.id, text, params);
    }
    // Seen again after a restart (agent-delivery.ts): the client already has it.
    if (this.store.agentRequests({ agentReqId: message.id, epoch }).length > 0) return;
    this.routeAgentRequest(epoch, message.id, message.method, params);
  }

  private onSessionUpdate(text: string, message: Message, params: unknown): void {
    const update = isObject(params) ? params.update : undefined;
    const seq = appendUpdate(this.store, text, message);
    maybeFold(this.store, seq);
    if (isToolCallUpdate(update)) this.store.applyToolCall(update, seq);
    else if (isObject(update) && update.sessionUpdate === "session_info_update" && typeof update.title === "string") {
      this.info.setTitle(update.title);
    } else if (isObject(update) && update.sessionUpdate === "current_mode_update" && typeof update.currentModeId === "string") {
      this.info.setCurrentMode(update.currentModeId);
    } else if (isObject(update) && update.sessionUpdate === "config_option_update" && Array.isArray(update.configOptions)) {
      this.info.setConfigOptions(update.configOptions);
    }
    this.clients.broadcast(text);
  }

  /** The agent withdrew one of its requests: withdraw the clients' copies (and confirm with -32800). */
  private onAgentCancelRequest(epoch: number, params: unknown): void {
    const requestId = isObject(params) ? params.requestId : undefined;
    if (typeof requestId !== "string" && typeof requestId !== "number") return;
    if (!this.permissions.withdrawnByAgent(epoch, requestId)) this.agentRequests.withdrawnByAgent(epoch, requestId);
  }

  /** The tenant's rules changed: drop older ones before the change's API answers (rules-cache.ts). True while rules are held. */
  rulesChanged(ref: SessionRef, generation: number): boolean {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return false;
    return this.rulesLink.rulesChanged(generation);
  }

  /** Called by the tenant's RulesObject when a rule was created: waiting requests it matches resolve now. */
  async reconsider(ref: SessionRef): Promise<void> {
    const meta = this.store.meta;
    if (meta && meta.tenantId === ref.tenantId) await this.permissions.reconsider();
  }

  private routeAgentRequest(epoch: number, agentReqId: JsonRpcId, method: string, params: unknown): void {
    this.agentRequests.route(epoch, agentReqId, method, params);
  }

  /** The agent answered a client request that the session forwarded under gwId. */
  fromAgentResponse(ref: SessionRef, gwId: number, text: string): void {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    const inflight = this.store.takeInflight(gwId);
    if (!inflight) return;
    const response = JSON.parse(text) as Record<string, unknown>;
    if (inflight.method === AGENT_METHODS.sessionDelete && deletionGoesAhead(response))
      return this.deleteSession(inflight, response.result);
    if (inflight.method === AGENT_METHODS.sessionPrompt) this.endTurn(gwId, response.result);
    // Whoever set an option, a client attaching later gets the current set in its session/load answer.
    if (
      inflight.method === AGENT_METHODS.sessionSetConfigOption &&
      isObject(response.result) &&
      Array.isArray(response.result.configOptions)
    ) {
      this.setConfigOptions(response.result.configOptions);
    }
    const ws = this.clients.byConnection(inflight.connId);
    if (ws) send(ws, JSON.stringify({ ...response, id: inflight.clientId }));
  }

  private endTurn(gwId: number, result: unknown): void {
    this.turn.end(gwId, result);
  }

  /** The agent's connection is gone: nothing it asked can be answered, nothing it was asked will be. */
  agentGone(ref: SessionRef, info: { epoch: number; reason: string; gwIds: number[] }): void {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    const watching = this.store.hasAsking();
    for (const pending of this.store.pending().filter((p) => p.agentEpoch <= info.epoch)) {
      this.withdrawCopies(this.store.removePending(pending.permId));
      this.audit(pending, { outcome: "withdrawn" }, { type: "agent_disconnected", reason: info.reason });
      this.store.append(
        "resolution",
        JSON.stringify({ permId: pending.permId, decidedBy: { type: "agent_disconnected", reason: info.reason } }),
      );
    }
    if (watching && !this.store.hasAsking()) this.watchRules(false);
    for (const r of this.store.agentRequests().filter((r) => r.agentEpoch <= info.epoch)) {
      this.store.takeAgentRequest(r.outId);
      const ws = this.clients.byConnection(r.connId);
      if (ws) sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: r.outId } }));
    }
    const message = `The agent "${meta.agent}" disconnected (${info.reason}) before answering`;
    for (const gwId of info.gwIds) {
      const inflight = this.store.takeInflight(gwId);
      if (!inflight) continue;
      const ws = this.clients.byConnection(inflight.connId);
      const error = new RpcError(-32603, `${message} ${inflight.method}`, { reason: "agent_disconnected" });
      if (ws) send(ws, JSON.stringify(errorResponse(inflight.clientId, error)));
    }
    const turn = this.store.turn;
    if (turn.state !== "idle" && info.gwIds.includes(turn.gwId)) {
      this.store.turn = { state: "idle" };
      this.notifyTurnEnded("agent_disconnected", message);
    }
    this.scheduleDeadline();
  }

  // ── deadlines ─────────────────────────────────────────────────────────────────────────────────
  private scheduleDeadline(): void {
    const next = earliest(
      earliest(this.store.nextDeadline(), this.notifier.nextDue()),
      earliest(this.audits.retryAt(), this.turnWatch.idleAt(this.store)),
    );
    if (next === undefined) void this.ctx.storage.deleteAlarm();
    else void this.ctx.storage.setAlarm(next);
  }

  override alarm(): void {
    const now = Date.now();
    if (this.audits.waiting() > 0) this.ctx.waitUntil(this.permissions.flushAudit());
    const idleAt = this.turnWatch.idleAt(this.store);
    if (idleAt !== undefined && idleAt <= now) this.turn.endIdle();
    if (this.permissions.overdue(now)) this.turn.deadlinePassed();
    this.notifier.onAlarm(now, this.clients.list().length > 0);
    this.scheduleDeadline();
  }

  // ── approval links (worker/routes/approve.tsx; the link's token was checked at the edge) ──────
  approvalView(ref: SessionRef, permId: number, linkId: string): ApprovalView {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId || meta.sessionId !== ref.sessionId) return { state: "unknown" };
    return this.notifier.view(permId, linkId);
  }

  /** An answer from an approval link: exactly a client's answer (first wins, copies withdrawn, audited). */
  answerFromLink(ref: SessionRef, permId: number, linkId: string, optionId: string): LinkRefusal | { state: "answered_by_you" } {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId || meta.sessionId !== ref.sessionId) return { state: "unknown" };
    const taken = this.notifier.takeAnswer(permId, linkId, optionId);
    if (!taken.ok) return taken.view;
    this.resolvePermission(taken.pending, { outcome: { outcome: "selected", optionId } }, taken.by);
    return { state: "answered_by_you" };
  }

  private notifyTurnEnded(reason: string, message: string): void {
    this.turn.ended(reason, message);
  }

  // ── reads ─────────────────────────────────────────────────────────────────────────────────────
  snapshot(ref: SessionRef): SessionSnapshot | null {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId || meta.sessionId !== ref.sessionId) return null;
    return sessionSnapshot(meta, this.store, this.clients);
  }

  // ── helpers ───────────────────────────────────────────────────────────────────────────────────
  /** The session/set_config_option answer carries the current set (session-info.ts). */
  private setConfigOptions(configOptions: unknown[]): void {
    this.info.setConfigOptions(configOptions);
  }

  private agentStub?: DurableObjectStub<import("../agent/agent-object").AgentObject>;

  /**
   * Fire and forget, in order: calls on one stub are delivered in the order they are made. A request
   * that cannot be handed to the agent is answered with an error (and a prompt's turn ends); `after`
   * learns whether the frame reached the agent (`threw`: the hand-off itself failed). A failed call
   * is made once more on a fresh stub (a stub whose object crashed stays broken); the AgentObject
   * skips a frame it already handed on, so the second try never duplicates one.
   */
  private toAgent(frame: ToAgent, after?: (delivered: boolean, threw: boolean) => void, retried = false): void {
    const meta = this.store.meta;
    if (!meta) return;
    this.agentStub ??= this.env.AGENTS.get(this.env.AGENTS.idFromName(`${meta.tenantId}/${meta.agent}`));
    const stub = this.agentStub;
    const ref = { tenantId: meta.tenantId, sessionId: meta.sessionId };
    const settled = (delivered: boolean, threw: boolean, reason: string) => {
      if (!delivered && frame.type === "request") this.requestUndelivered(frame.gwId, reason);
      after?.(delivered, threw);
    };
    this.ctx.waitUntil(
      stub.toAgent(meta.agent, ref, frame).then(
        (delivered) => settled(delivered, false, "the agent does not hold this session"),
        (e: unknown) => {
          console.error("session: agent delivery failed", e);
          if (this.agentStub === stub) this.agentStub = undefined;
          if (!retried) this.toAgent(frame, after, true);
          else settled(false, true, "the hand-off to the agent failed");
        },
      ),
    );
  }

  /** session/delete went ahead (protocol/session-delete.ts): requests cancelled, the session forgotten, then clients told and detached. */
  private deleteSession(inflight: InflightRow, result: unknown): void {
    const meta = this.store.meta;
    if (!meta) return;
    const deleter = this.clients.byConnection(inflight.connId);
    const user = deleter ? (attachmentOf(deleter)?.user ?? null) : null;
    this.permissions.cancelAll({ type: "cancel", connectionId: inflight.connId, user });
    this.store.forget();
    this.watchRules(false);
    this.scheduleDeadline();
    const answer = JSON.stringify(resultResponse(inflight.clientId, isObject(result) ? result : {}));
    const notice = sessionDeletedNotice(meta.sessionId, user);
    const clients = this.clients.all();
    // Out of the index first, so nobody who hears of the deletion can still list or load the session.
    const unindexed = deleteSessionIndex(this.env.DB, meta.tenantId, meta.sessionId).catch((e: unknown) =>
      console.error("session: index delete failed", e),
    );
    this.ctx.waitUntil(
      unindexed.then(() => {
        for (const ws of clients) {
          send(ws, ws === deleter ? answer : notice);
          try {
            ws.close(CLOSE_SESSION_DELETED, "the session was deleted");
          } catch {
            // already closed
          }
        }
      }),
    );
  }

  /** A client request that never reached the agent: its sender gets an error, a prompt's turn ends. */
  private requestUndelivered(gwId: number, reason: string): void {
    const inflight = this.store.takeInflight(gwId);
    const meta = this.store.meta;
    if (!inflight || !meta) return;
    if (inflight.method === AGENT_METHODS.sessionDelete) return this.deleteSession(inflight, {});
    const message = `The gateway could not hand ${inflight.method} to the agent "${meta.agent}" (${reason}); nothing was done, try again`;
    const ws = this.clients.byConnection(inflight.connId);
    if (ws) send(ws, JSON.stringify(errorResponse(inflight.clientId, new RpcError(-32603, message, { reason: "agent_unreachable" }))));
    const turn = this.store.turn;
    if (turn.state !== "idle" && turn.gwId === gwId) {
      for (const pending of this.store.pending()) this.resolvePermission(pending, CANCELLED_RESULT, { type: "turn_end" });
      this.store.turn = { state: "idle" };
      this.notifyTurnEnded("agent_unreachable", message);
    }
  }
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

function* replayBodies(entries: Iterable<{ body: string }>): Iterable<string> {
  for (const entry of entries) yield entry.body;
}
