// SessionObject: the Durable Object shell of one ACP session (one object per tenant + sessionId):
// the platform handlers, attach, routing of client messages, the alarm, and the RPC methods, each
// handed to the module that does the work: protocol/session-machine.ts (client requests, the turn, and
// the order of everything sent to the agent; its one port is built in session-port.ts, its ways to the
// agent in agent-channels.ts), agent-link.ts (what the agent sends), protocol/permission-machine.ts
// (permission requests; its ports are built in permission-lifecycle.ts), agent-request-routing.ts
// (fs/terminal/elicitation requests), session-info.ts,
// notify.ts, store.ts (all state, in SQLite; every socket is hibernatable, so an evicted object comes
// back whole on the next event). The RPC argument and return types are in contract.ts.
//
// Traffic:  client ⇄ edge Worker ⇄ (WebSocket per connection) ⇄ SessionObject ⇄ (agent link: a WebSocket, or RPC) ⇄ AgentObject ⇄ agent

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
import type { Env } from "../../core/env";
import type {
  ApprovalView,
  FromAgent,
  InitResult,
  LinkRefusal,
  SessionContract,
  SessionInit,
  SessionRef,
  SessionSnapshot,
  WaitingRequest,
} from "./contract";
import { AgentLink } from "./agent-link";
import { agentChannels } from "./agent-channels";
import { AgentSocket, EDGE_LINK_TAG, isEdgeLinkAttachment, isLinkAttachment } from "./agent-socket";
import { AGENT_LINK_HEADER, encodeLink, linkToSession } from "../../protocol/agent-link-wire";
import { EDGE_LINK_HEADER } from "../../protocol/agent-edge-wire";
import { AuditOutbox } from "./audit-outbox";
import { TurnWatch } from "./turn-watch";
import { AttachedClients, adoptRing, attachmentOf, clientOf, clientTags, peekRing, send, sendAsIs, sendPacked, takeRing } from "./clients";
import {
  ATTACH_HEADER,
  type AttachRequest,
  type ClientAttachment,
  RESUMED_CAPS_HEADER,
  RESUME_REFUSED_HEADER,
  attachRequestOf,
} from "../../protocol/session-wire";
import { STREAM_METHODS } from "../../protocol/stream-cursor";
import { SessionStore, permIdOfCopy } from "./store";
import { type AgentStub, objects, splitName } from "../objects";
import type { ToAgent } from "../agent/contract";
import { auditBudgetSpent } from "../../protocol/tenant-limits";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { CompactionTally } from "./compaction";
import { AgentRequests } from "./agent-request-routing";
import { claim } from "./ownership";
import { Notifier } from "./notify";
import { type PermissionLifecycle, flushAudit, permissionLifecycle } from "./permission-lifecycle";
import { TenantRules } from "./tenant-rules";
import { sessionSnapshot } from "./snapshot";
import { SessionInfo, loadResult } from "./session-info";
import { SessionMachine } from "../../protocol/session-machine";
import { sessionPort } from "./session-port";
import { SessionDeletion } from "./session-deletion";
import { SessionUnindex } from "./unindex";
import { stage, stageTimingFrom } from "../../protocol/stage-timing";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import { liveIndex } from "./live-index";
import type { LiveStatePublisher } from "../../protocol/live-state";
import { sessionLog } from "./session-log";
import { TenantPolicy } from "./tenant-policy";
import { refusedByRole } from "../../protocol/people/acp-methods";
import { testSeams } from "../../core/test-seam";
import { readReason } from "../../protocol/answer-reason";
import { replayedFrames } from "../../protocol/replayed-history";
import type { Answerer } from "../../protocol/people/answering";
import { operationView } from "../../protocol/operation-view";
import { toolCallOf } from "../../protocol/pending-permission";
import { type StreamTurnState, streamTurnState, turnStateMeta } from "../../protocol/turn-state";

/**
 * The test seam (test/workerd): what a test may read of a live instance (`sessionTesting`, given the
 * instance runInDurableObject hands it), and the one hook it may set, in place of casts to private
 * fields. The gateway never reads it but for the hook's one call site, in webSocketMessage. It is no
 * member of the class, so it is nothing a stub can reach over RPC.
 */
export interface SessionTesting {
  /** The session's state as this instance holds it (store.ts): read it; a write goes around the object's logic. */
  readonly store: SessionStore;
  /** The audit outbox (audit-outbox.ts): entries waiting for D1, and when it tries again. */
  readonly audits: Pick<AuditOutbox, "waiting" | "retryAt">;
  /** When the turn's idle timer fires (turn-watch.ts), or undefined when no turn runs. */
  idleAt(): number | undefined;
  /** How many frames for the agent wait in the session behind an answer on an edge link (protocol/session-agent-order.ts). */
  heldAfterEdgeAnswer(): number;
  /**
   * Set by a test to watch or cut the messages that come on an agent or edge link: called instead of
   * the object's own handling, which it is handed as `apply` (`ack: false`: applied, the ack not sent).
   */
  onLinkMessage?: (ws: WebSocket, data: string | ArrayBuffer, apply: (ack?: boolean) => void) => void;
  /**
   * Set by a test to refuse or watch a frame for the agent on a link (agent or edge; agent-socket.ts
   * `send`): called instead of sending it, with the send as `send`; false refuses it as a closing
   * link does, and the frame goes by RPC.
   */
  onLinkSend?: (frame: ToAgent, send: () => boolean) => boolean;
  /**
   * Set by a test to a D1 that fails or is slow (test/workerd/fuzz-faults.ts `setD1`): used instead of
   * `env.DB` where the object reaches D1 after it is built (taking a deleted session out of the index,
   * publishing its live state).
   */
  d1?: D1Database;
  /** Set by a test to replace the stub the session calls its AgentObject through by RPC (agent-channels.ts), given the real one at each call. */
  agent?: (real: AgentStub) => AgentStub;
}

const seams = testSeams<SessionObject, SessionTesting>("SessionObject");

/** A live instance's test seam (SessionTesting). */
export const sessionTesting = seams.of;

export class SessionObject extends DurableObject<Env> implements SessionContract {
  private readonly testing: SessionTesting;
  private readonly store: SessionStore;
  private readonly clients: AttachedClients;
  private readonly notifier: Notifier;
  private readonly rules: TenantRules;
  private readonly permissions: PermissionLifecycle;
  private readonly info: SessionInfo;
  private readonly machine: SessionMachine;
  private readonly agentRequests: AgentRequests;
  private readonly agent: AgentLink;
  private readonly audits: AuditOutbox;
  private readonly turnWatch: TurnWatch;
  private readonly unindex: SessionUnindex;
  private readonly agentSocket: AgentSocket;
  private readonly live: LiveStatePublisher;
  /** Old sockets whose stream a resume took over: their close detaches nobody. */
  private readonly resumedAway = new WeakSet<WebSocket>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    stageTimingFrom(env);
    this.store = new SessionStore(ctx.storage);
    this.live = liveIndex(
      ctx,
      () => this.testing.d1 ?? this.env.DB,
      this.store,
      () => this.scheduleDeadline(),
    );
    this.clients = new AttachedClients(ctx);
    this.agentSocket = new AgentSocket(ctx);
    this.audits = new AuditOutbox(ctx.storage.sql, env.DB, this.store, {
      charge: (tenantId, full, summarised, perDay) => objects.tenantLimits(env, tenantId).chargeAudit(full, summarised, perDay),
      spent: (perDay, resetsAt) =>
        this.info.notice(GATEWAY_NOTIFICATIONS.limitReached, {
          sessionId: this.store.meta?.sessionId,
          ...auditBudgetSpent(perDay, resetsAt),
        }),
    });
    this.turnWatch = new TurnWatch(ctx.storage.sql);
    this.unindex = new SessionUnindex(this.store, () => this.testing.d1 ?? this.env.DB);
    this.notifier = new Notifier(ctx, env, this.store, () => this.scheduleDeadline());
    this.rules = new TenantRules(env, this.store);
    this.info = new SessionInfo(ctx, env, this.store, this.clients);
    const policy = new TenantPolicy(env.DB, this.store);
    this.permissions = permissionLifecycle({
      policy,
      ctx,
      store: this.store,
      clients: this.clients,
      notifier: this.notifier,
      turnWatch: this.turnWatch,
      audits: this.audits,
      rules: this.rules,
      info: this.info,
      toAgent: (frame, after) => this.toAgent(frame, after),
      scheduleDeadline: () => this.scheduleDeadline(),
      metrics: env.METRICS,
    });
    const channels = agentChannels(ctx, env, this.store, this.agentSocket, {
      agent: (real) => this.testing.agent?.(real) ?? real,
      send: (frame, send) => this.testing.onLinkSend?.(frame, send) ?? send(),
    });
    const deletion = new SessionDeletion(ctx, this.store, this.clients, this.permissions, this.notifier, this.unindex, () =>
      this.scheduleDeadline(),
    );
    const port = sessionPort({
      store: this.store,
      channels,
      clients: this.clients,
      info: this.info,
      permissions: this.permissions,
      policy,
      deletion,
      scheduleDeadline: () => this.scheduleDeadline(),
    });
    // Each frame's key for the AgentObject's once-only hand-off starts where no earlier instance's could still be in use.
    this.machine = new SessionMachine(port, Date.now() * 1000);
    this.agentRequests = new AgentRequests(this.store, this.clients, (frame) => this.toAgent(frame));
    this.agent = new AgentLink({
      sql: ctx.storage.sql,
      store: this.store,
      clients: this.clients,
      turnWatch: this.turnWatch,
      info: this.info,
      permissions: this.permissions,
      agentRequests: this.agentRequests,
      machine: this.machine,
    });
    this.store.onLiveChange(() => {
      this.live.changed();
      this.scheduleDeadline(); // owed from now: the alarm is due (live-state.ts), in case this instance ends first
    });
    this.testing = {
      store: this.store,
      audits: this.audits,
      idleAt: () => this.turnWatch.idleAt(this.store),
      heldAfterEdgeAnswer: () => this.machine.heldAfterEdgeAnswer,
    };
    seams.attach(this, this.testing);
    // What an earlier instance owed the index (it ended inside the window, or its write failed) is owed still.
    if (this.store.meta) this.live.resume();
  }

  // ── set-up (called by the AgentObject when the agent created or loaded the session) ──────────
  /** A session belongs to the agent that created it (ownership.ts): a session/new never re-initialises one, a session/load only its own. */
  init(meta: SessionInit, opening: "new" | "load" = "load"): InitResult {
    const ref = this.ref();
    // Only a stub made by name calls init, so the name is there; without it there is no one to be.
    if (!ref) return { ok: false, message: "the session object has no name" };
    return claim(this.store, ref, meta, opening);
  }

  exists(): boolean {
    return this.store.meta !== undefined;
  }

  // ── a client attaches: history, then (for session/load) the answer, then pending requests, then live ──
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade") !== "websocket") return new Response("expected a WebSocket", { status: 426 });
    const linkFrom = request.headers.get(AGENT_LINK_HEADER);
    if (linkFrom !== null) return this.acceptAgentLink(linkFrom);
    const edgeFrom = request.headers.get(EDGE_LINK_HEADER);
    if (edgeFrom !== null) return this.acceptEdgeLink(edgeFrom);
    const attach = attachRequestOf(request.headers.get(ATTACH_HEADER));
    const meta = this.store.meta;
    if (!attach || !meta || meta.tenantId !== attach.tenantId || meta.sessionId !== attach.sessionId) {
      return new Response("session not found", { status: 404 });
    }
    if (attach.mode === "resume") return this.resumeStream(attach);
    const pair = new WebSocketPair();
    const [edge, server] = [pair[0], pair[1]];
    // Everything below is synchronous: no other event can run between reading the log and joining
    // the live fan-out, so the client sees no gap and no duplicate.
    this.ctx.acceptWebSocket(server, clientTags(attach.client.connId));
    server.serializeAttachment(attach.client);
    if (attach.mode !== "live") {
      const tally = new CompactionTally();
      sendPacked(server, tally.count(replayedFrames(this.store.replayable())));
      if (tally.compacted) send(server, tally.notice(meta.sessionId));
    }
    if (attach.mode === "load" && attach.loadRequestId !== undefined) {
      send(server, JSON.stringify(resultResponse(attach.loadRequestId, loadResult(meta))));
    }
    this.permissions.sendPendingTo(server);
    this.permissions.clientsChanged();
    return new Response(null, { status: 101, webSocket: edge });
  }

  /**
   * `stream/resume` of a client whose socket dropped (decision 0050): its stream's frames after the
   * cursor, as they were sent, then `stream/resumed` with the turn's state, then what waits on it and
   * has not been sent on the stream, then live — one synchronous step, as an attach. Refused (409,
   * and nothing attached) for a cursor this session cannot resume from. The old socket may still look
   * open (the drop not yet seen here): its stream is taken over and it is closed.
   */
  private resumeStream(attach: AttachRequest): Response {
    const connId = attach.client.connId;
    for (const old of this.clients.all()) {
      const client = attachmentOf(old);
      if (client?.connId !== connId || client.keyId !== attach.client.keyId) continue;
      // Only a resume it can serve takes a live socket's stream: a bad cursor leaves the socket as it is.
      if (!peekRing(old)?.after(attach.resumeFrom ?? "").ok) continue;
      const ring = takeRing(old);
      if (ring) this.clients.retained.retain(client, ring);
      this.resumedAway.add(old);
      try {
        old.close(CLOSE.normal, "resumed on another socket");
      } catch {
        // closed already
      }
    }
    const resumed = this.clients.retained.take(connId, attach.client.keyId, attach.resumeFrom ?? "");
    if (!resumed.ok) return new Response(resumed.reason, { status: 409, headers: { [RESUME_REFUSED_HEADER]: resumed.reason } });
    const pair = new WebSocketPair();
    const [edge, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, clientTags(connId));
    // Who the client is now (role, person) as the edge says; what it can serve, as it said when it first attached.
    const client: ClientAttachment = { ...attach.client, caps: resumed.client.caps };
    server.serializeAttachment(client);
    adoptRing(server, resumed.ring);
    for (const frame of resumed.frames) sendAsIs(server, frame);
    const turn = this.turnState(connId) ?? undefined;
    sendAsIs(
      server,
      JSON.stringify({
        jsonrpc: "2.0",
        method: STREAM_METHODS.resumed,
        params: { sessionId: attach.sessionId, _meta: turnStateMeta(turn) },
      }),
    );
    resumed.ring.withoutRepeats(() => this.permissions.sendPendingTo(server));
    this.permissions.clientsChanged();
    return new Response(null, { status: 101, webSocket: edge, headers: { [RESUMED_CAPS_HEADER]: JSON.stringify(client.caps) } });
  }

  /**
   * The AgentObject's link (agent-socket.ts): only the session's own agent opens one. The header
   * cannot come from outside: only the gateway's own objects and Worker make requests to this object.
   */
  private acceptAgentLink(agent: string): Response {
    const meta = this.store.meta;
    if (!meta || meta.agent !== agent) return new Response("session not found", { status: 404 });
    const pair = new WebSocketPair();
    this.agentSocket.accept(pair[1]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /**
   * The edge's link (worker/agent-connection.ts): the agent's notifications for this session, which
   * the edge delivers itself while its AgentObject has granted it (protocol/agent-edge-wire.ts). In
   * only: nothing is sent to the agent on it. Only the session's own agent's edge opens one.
   */
  private acceptEdgeLink(agent: string): Response {
    const meta = this.store.meta;
    if (!meta || meta.agent !== agent) return new Response("session not found", { status: 404 });
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [EDGE_LINK_TAG]);
    pair[1].serializeAttachment({ link: "edge" });
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /** A message on the agent link: a batch of the agent's traffic (acked once applied), or the answer to a frame sent on it. */
  private onLinkMessage(ws: WebSocket, data: string | ArrayBuffer, ack = true): void {
    const message = typeof data === "string" ? linkToSession(data) : undefined;
    if (!message) return;
    if (message.t !== "batch") return this.agentSocket.answered(message);
    // SAFETY: batches come only from the AgentObject and the edge's agent connection, which send FromAgent items.
    this.fromAgentBatch(message.items as FromAgent[]);
    // Held by the output gate until what the batch wrote commits, exactly as an RPC's return.
    if (ack) ws.send(encodeLink({ t: "ack" }));
  }

  // ── messages from a client (through the edge Worker, which already checked the frame) ────────
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const attached: unknown = ws.deserializeAttachment();
    const client = clientOf(attached);
    if (!client) {
      if (!isLinkAttachment(attached) && !isEdgeLinkAttachment(attached)) return;
      const hook = this.testing.onLinkMessage;
      if (hook) hook(ws, data, (ack) => this.onLinkMessage(ws, data, ack));
      else this.onLinkMessage(ws, data);
      return;
    }
    stage("session.answer", data);
    if (typeof data !== "string") return;
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
      else
        sessionLog(this.store).error(
          "session.client_message_failed",
          "a client's notification failed in the session",
          { unexpected: true },
          error,
        );
    }
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    this.socketGone(ws);
    closeQuietly(ws, code === CLOSE.noStatus ? CLOSE.normal : code, "closed");
  }

  override webSocketError(ws: WebSocket): void {
    this.socketGone(ws);
  }

  /**
   * A client's socket gone detaches it, its stream kept for a resume (decision 0050), unless a resume
   * took it over on another socket; the agent link's gone fails what awaits an answer on it.
   */
  private socketGone(ws: WebSocket): void {
    const attached: unknown = ws.deserializeAttachment();
    const client = clientOf(attached);
    if (client) {
      if (this.resumedAway.delete(ws)) return;
      const ring = takeRing(ws);
      if (ring) this.clients.retained.retain(client, ring);
      this.detach(client.connId);
    } else if (isLinkAttachment(attached)) this.agentSocket.lost(ws);
  }

  /** A client that leaves loses nothing: its copies go, the requests stay pending for the others. */
  private detach(connId: string): void {
    this.notifier.onDetach(this.clients.list().filter((c) => c.connId !== connId).length);
    this.agentRequests.clientGone(connId);
    this.permissions.clientsChanged(connId);
  }

  private onClientRequest(ws: WebSocket, id: JsonRpcId, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    if (!client) return;
    // Deleted (session/delete) while this client's socket was still closing: answered, never dropped.
    if (!this.store.meta) throw RpcError.sessionNotFound(isObject(params) ? params.sessionId : undefined);
    // The edge refuses these already (client-connection.ts); checked again where the turn is.
    const refusal = refusedByRole(client.role ?? "approver", method);
    if (refusal) throw refusal;
    this.machine.request(client, id, method, params);
  }

  private onClientNotification(ws: WebSocket, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    if (!client) return;
    if (refusedByRole(client.role ?? "approver", method)) return;
    this.machine.notification(client, method, params);
  }

  /** Every frame for the agent goes through the machine's order (protocol/session-agent-order.ts). */
  private toAgent(frame: ToAgent, after?: (delivered: boolean, threw: boolean) => void): void {
    stage("session.toAgent", frame);
    this.machine.toAgent(frame, after);
  }

  private onClientResponse(ws: WebSocket, message: Message & { id: JsonRpcId | null }): void {
    const client = attachmentOf(ws);
    if (!client || typeof message.id !== "number") return;
    const permId = permIdOfCopy(message.id);
    if (permId !== undefined) return this.permissions.answer(ws, client, permId, message as { result?: unknown; error?: unknown });
    this.agentRequests.answered(message.id, message as { result?: unknown; error?: unknown });
  }

  // The RPC methods below take no SessionRef: a stub reaches this object only by its name
  // `${tenantId}/${sessionId}`, so every call is for this tenant's session, and a call for another
  // tenant's is impossible by construction (it names another object). What stays checked is that the
  // session exists: without its meta (never initialised, or deleted) each method refuses to act.

  // ── the agent's traffic (agent-link.ts), delivered by the AgentObject ─────────────────────────
  fromAgentBatch(items: FromAgent[]): void {
    stage("session.in", items);
    this.agent.fromBatch(items);
  }

  // ── the tenant's rules (tenant-rules.ts), called by the session's rules shard ────────────────────
  /**
   * The rules changed (told after the change's fence, while requests wait on people; decision 0031):
   * drop older ones (tenant-rules.ts) and re-decide the waiting requests (a new rule may answer them).
   * True while requests wait: the shard keeps telling this session.
   */
  rulesChanged(generation: number): boolean {
    if (!this.store.meta) return false;
    const subscribed = this.rules.rulesChanged(generation);
    if (this.store.hasAsking()) this.permissions.reconsider();
    return subscribed;
  }

  // ── approval links (worker/routes/approve.tsx; the link's token was checked at the edge) ──────
  /** A link that could answer is checked against D1 first: its target deleted, it is withdrawn. */
  async approvalView(permId: number, linkId: string): Promise<ApprovalView> {
    const view = this.notifier.view(permId, linkId);
    if (view.state !== "pending") return view;
    return (await this.notifier.targetGone(permId, linkId)) ?? this.notifier.view(permId, linkId);
  }

  async answerFromLink(
    permId: number,
    linkId: string,
    optionId: string,
    reason?: string | null,
  ): Promise<LinkRefusal | { state: "answered_by_you" }> {
    const view = this.notifier.view(permId, linkId);
    if (view.state !== "pending") return view;
    const gone = await this.notifier.targetGone(permId, linkId);
    if (gone) return gone;
    // Checked again and taken in one synchronous step (notify.ts takeAnswer): two answers cannot both pass.
    const taken = this.notifier.takeAnswer(permId, linkId, optionId);
    if (!taken.ok) return taken.view;
    // Read again here: the object trusts no caller's bound (a display-safe text passes unchanged).
    const given = readReason(reason);
    const by = given.ok && given.reason ? { ...taken.by, reason: given.reason } : taken.by;
    this.permissions.answerFromLink(taken.pending, optionId, by);
    return { state: "answered_by_you" };
  }

  // ── reads ─────────────────────────────────────────────────────────────────────────────────────
  snapshot(): SessionSnapshot | null {
    const meta = this.store.meta;
    return meta ? sessionSnapshot(meta, this.store, this.clients) : null;
  }

  /** The turn's state for a client resuming its stream: `promptRequestId` is its own id of the prompt, if it sent it. */
  turnState(connId: string): StreamTurnState | null {
    if (!this.store.meta) return null;
    const turn = this.store.turn;
    if (turn.state === "idle") return streamTurnState("idle", false, null);
    const prompt = turn.connId === connId ? (this.store.inflight().find((r) => r.gwId === turn.gwId)?.clientId ?? null) : null;
    return streamTurnState(turn.state, this.store.hasAsking(), prompt);
  }

  /**
   * The requests people are asked here that wait on this person now ("waiting on you"): from the
   * session itself, so a request answered, withdrawn or lost with an agent is never listed, whatever
   * the index still says (asking wakes the object, which then publishes what the index is owed).
   */
  waitingOn(answerer: Answerer): { title: string | null; requests: WaitingRequest[] } | null {
    const meta = this.store.meta;
    if (!meta) return null;
    const requests = this.permissions.waitingOn(answerer).map((p) => ({
      requestId: p.permId,
      toolCallId: p.toolCallId,
      operation: operationView(toolCallOf(p), meta.cwd),
      askedAt: p.createdAt,
      deadlineAt: p.deadlineAt,
    }));
    return { title: meta.title ?? null, requests };
  }

  /**
   * Who this session is: its name `${tenantId}/${sessionId}` (objects.ts `objectNames`, `splitName`), or, when workerd lost
   * the name (an alarm after a runtime restart), its stored meta.
   */
  private ref(): SessionRef | undefined {
    const named = splitName(this.ctx.id.name);
    if (named) return { tenantId: named.tenantId, sessionId: named.rest };
    const meta = this.store.meta;
    return meta ? { tenantId: meta.tenantId, sessionId: meta.sessionId } : undefined;
  }

  // ── deadlines ─────────────────────────────────────────────────────────────────────────────────
  /** The alarm as this instance last set it; undefined when not known (a new instance, or it fired). */
  private alarmSetTo: number | undefined;

  /**
   * The alarm fires at or before the earliest deadline, notify time, audit retry, idle time or index
   * write owed (live-index.ts). Setting
   * it holds the next output behind it, so it is only ever moved *earlier*: one that fires before
   * anything is due finds nothing to do and sets the next (`alarm`). A request asked of people and
   * answered therefore writes no alarm (its deadline is later than the one set), where it wrote two
   * (its deadline, then the idle time back); the price is at most one early wake-up per alarm set.
   */
  private scheduleDeadline(): void {
    const next = earliest(
      earliest(this.store.nextDeadline(), this.notifier.nextDue()),
      earliest(earliest(this.audits.retryAt(), this.unindex.retryAt()), earliest(this.turnWatch.idleAt(this.store), this.live.dueAt())),
    );
    if (next === undefined || (this.alarmSetTo !== undefined && this.alarmSetTo <= next)) return;
    this.alarmSetTo = next;
    void this.ctx.storage.setAlarm(next);
  }

  override async alarm(): Promise<void> {
    this.alarmSetTo = undefined; // a fired alarm is gone
    const now = Date.now();
    if (this.audits.waiting() > 0) this.ctx.waitUntil(flushAudit({ audits: this.audits, scheduleDeadline: () => this.scheduleDeadline() }));
    const unindexAt = this.unindex.retryAt(now);
    // Any alarm tries again: a row is only pending after a delete, when nothing else keeps the alarm busy.
    if (unindexAt !== undefined) this.ctx.waitUntil(this.unindex.retry().then(() => this.scheduleDeadline()));
    // Any alarm writes what the index is owed, if anything (decision 0049): the timer may have died with an instance.
    const published = this.live.owed() ? this.live.flush() : undefined;
    const idleAt = this.turnWatch.idleAt(this.store);
    if (idleAt !== undefined && idleAt <= now) this.machine.idle();
    const deadline = this.store.nextDeadline();
    if (deadline !== undefined && deadline <= now) this.machine.deadlinePassed();
    this.notifier.onAlarm(now, this.clients.list().length > 0);
    this.scheduleDeadline();
    await published; // never rejects; the write's end is the alarm's (a test that runs the alarm sees the index written)
  }
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
