// AgentObject: one per tenant + agent name. It holds the agent's single connection (the agent dials
// in over a hibernatable WebSocket), acts as the agent's ACP client (initialize), creates and loads
// sessions, and routes: agent → SessionObject by sessionId, SessionObject → agent with id rewriting.
// Request ids towards the agent are the object's own; that map lives in SQLite (store.ts). The map
// of the agent's own requests to the sessions they went to lives in memory (`inbound`), so nothing
// is committed in front of a permission request or its answer.
// Over 400 lines, knowingly: its storage (store.ts), dialling out (dialer.ts) and the queue for a
// session that has not taken its frames (session-outbox.ts) are already their own modules; what is
// left is the socket's lifecycle and the routing both ways, which share the epoch and the id maps.
// The next split, when it grows: the session/new and session/load flow into its own module.

import { indexSession, sessionOwner } from "../../db/queries/sessions";
import { DurableObject } from "cloudflare:workers";
import {
  RpcError,
  errorResponse,
  isObject,
  isRequest,
  isResponse,
  parseFrame,
  type JsonRpcId,
  sessionIdOf,
  type ResponseMessage,
} from "../../protocol/jsonrpc";
import type { Limits } from "../../protocol/tenant-limits";
import { AGENT_METHODS, CANCEL_REQUEST, PROTOCOL_VERSION } from "../../protocol/methods";
import { isGatewayMethod, stripGatewayMarks } from "../../protocol/gateway-namespace";
import type { Env } from "../../core/env";
import type { FromAgent, SessionRef } from "../session/contract";
import { AgentRates, FLOOD_REASON } from "../../connection/tenant-limits";
import type { AgentStatus, OpenSessionArgs } from "../../connection/gateway-objects";
import { AGENT_PRINCIPAL_HEADER, type AgentContract, type AgentPrincipal, type ToAgent } from "./contract";
import { Dialer } from "./dialer";
import { SessionOutbox, type Stamped } from "./session-outbox";
import { LINK_IDLE_MS, SessionLinks, openSessionLink } from "./session-links";
import { AGENT_LINK_HEADER, MAX_BATCH_BYTES, batchPrefix } from "../../protocol/agent-link-wire";
import { AGENT_EDGE_HEADER, decodeControl, encodeControl } from "../../protocol/agent-edge-wire";
import { AgentStore } from "./store";
import { refusedAnswer } from "../../protocol/refused-answer";
import { stage, stageTimingFrom } from "../../protocol/stage-timing";
import { CLOSE } from "../../core/close-codes";
import { ErrorCode } from "../../core/rpc-errors";
import { type SessionStub, gatewayObjects, objects } from "../objects";
import { Pending } from "../pending";
import { type LogContext, type LogLevel, log } from "../../core/log";

/** How long session/new or session/load may take before the client is told the agent did not answer. */
const OPEN_TIMEOUT_MS = 60_000;
/** How long a client's initialize waits for a freshly connected agent to finish its own initialize. */
const INIT_WAIT_MS = 10_000;
/** When the object's alarm re-sends what a session has not taken (after a restart or a failed call). */
const REDELIVERY_MS = 2_000;
/**
 * While the agent has a session's request to answer, the object's alarm fires this often. If the
 * object crashed meanwhile (and so lost the agent's connection), the alarm starts a new instance,
 * which notices (lostConnection) even when the agent never dials back in.
 */
const WATCH_MS = 10_000;

export class AgentObject extends DurableObject<Env> implements AgentContract {
  private readonly store: AgentStore;
  /** session/new and session/load sent to the agent and awaited in memory, by id: only while the RPC is in flight. */
  private readonly waiters = new Pending<number, null, ResponseMessage>(OPEN_TIMEOUT_MS);
  /** Calls waiting for the agent's answer to initialize (`waitForInitialize`), by a number of their own. */
  private readonly initWaiters = new Pending<number, null, never>(INIT_WAIT_MS);
  private initWaits = 0;
  private readonly sessionStubs = new Map<string, SessionStub>();
  /** The outbound connection of a dial_out agent (not hibernatable: it lives while the object does). */
  private dialOut?: { ws: WebSocket; epoch: number };
  private connecting?: Promise<WebSocket | undefined>;
  private readonly dialer = new Dialer();
  /** The agent connection's message rates (its own and its share of the tenant's). */
  private readonly rates: AgentRates;
  /** The current epoch's dial-in socket once found (finding it deserialises every socket's attachment). */
  private dialIn?: { ws: WebSocket; epoch: number; edge: boolean };
  /**
   * Per session, how many frames the edge has sent through this object on the current connection
   * (its count, from the newest frame): a grant names it (`maybeGrant`). Cleared with each connection.
   */
  private readonly edgeCounts = new Map<string, number>();
  /**
   * The agent's requests that went to a session and are not answered yet, by `inboundKey`: in
   * memory only, so no commit stands in front of a request on its way to the session or of its
   * answer on the way back. What the map is for, and how each use does without it when it is lost:
   * - answering each request once (`takeInbound`): a second try of an answer finds its entry gone.
   *   The map is lost only with the instance: a crash also closes the agent's socket (the epoch is
   *   over, so nothing is answered on it); an eviction keeps a dial-in socket, and the woken instance
   *   sends an answer it has no entry for, then remembers it (`answered`) against a second try.
   * - routing the agent's `$/cancel_request` (`cancelFromAgent`): a woken instance that does not
   *   know the request tells every session active in the epoch; the others ignore an id they do not hold.
   * - the agent's departure: sessions are told from `activeSessions(epoch)` in SQLite, not from here.
   */
  private readonly inbound = new Map<string, { epoch: number; sessionId: string }>();
  /** The epoch whose connection began in this instance: its `inbound` map holds every open request of it. */
  private wholeEpoch = 0;
  /** Answers sent by an instance woken during its epoch (see `inbound`), the newest ANSWERED_KEPT. */
  private readonly answered = new Set<string>();
  /** The outcome of each session frame handed on, by `${sessionId}:${key}` (`toAgent`), the newest ANSWERED_KEPT. */
  private readonly handedOn = new Map<string, Promise<boolean>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    stageTimingFrom(env);
    this.store = new AgentStore(ctx.storage.sql);
    this.rates = new AgentRates(gatewayObjects(env));
    this.outbox = new SessionOutbox(ctx.storage.sql);
    void ctx.blockConcurrencyWhile(async () => {
      this.lostConnection();
      if (!this.outbox.isEmpty()) this.armRedelivery();
    });
  }

  /**
   * A new instance whose current connection is not here: the object crashed or was reset, and the
   * runtime closed the agent's socket with it (no webSocketClose reaches the new instance). What it
   * held in memory for sessions is lost, so every session it spoke for hears that the connection is
   * gone, and a turn waiting on it ends naming the cause. Eviction keeps a dial-in socket: no loss.
   */
  private lostConnection(): void {
    const epoch = this.store.epoch;
    if (epoch <= 0 || this.store.goneEpoch >= epoch || this.socket()) return;
    this.agentGone(epoch, "the gateway's agent object restarted and its connection to the agent was lost");
  }

  // ── the agent dials in ────────────────────────────────────────────────────────────────────────
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade") !== "websocket") return new Response("expected a WebSocket", { status: 426 });
    const who = JSON.parse(request.headers.get(AGENT_PRINCIPAL_HEADER) ?? "null") as AgentPrincipal | null;
    if (!who) return new Response("missing principal", { status: 400 });
    this.store.meta = { tenantId: who.tenantId, name: who.agent };
    // The newest connection takes over; the old one's sessions stay readable in their objects.
    const previous = this.ctx.getWebSockets();
    const epoch = this.store.epoch + 1;
    this.store.epoch = epoch;
    // Written in the same commit as the epoch, so the first relayed frame finds its numbers reserved.
    this.outbox.reserve();
    this.wholeEpoch = epoch;
    this.dialIn = undefined;
    this.edgeCounts.clear();
    for (const old of previous) {
      try {
        old.close(CLOSE.replaced, "replaced by a newer connection of the same agent");
      } catch {
        // already closing
      }
    }
    if (previous.length > 0) this.agentGone(epoch - 1, "replaced by a newer connection");
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [`key:${who.keyId}`]);
    const edge = request.headers.get(AGENT_EDGE_HEADER) === "1";
    pair[1].serializeAttachment({ epoch, keyId: who.keyId, expiresAt: who.expiresAt ?? null, limits: who.limits, edge });
    this.dialIn = { ws: pair[1], epoch, edge };
    this.rates.overrides = who.limits;
    if (typeof who.expiresAt === "number") this.ctx.waitUntil(this.armAlarmBy(who.expiresAt));
    this.sendInitialize(pair[1], epoch);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  private sendInitialize(ws: WebSocket, epoch: number): void {
    const id = this.store.nextId();
    this.store.addOutbound({ agentId: id, epoch, kind: "initialize", sessionId: null, gwId: null });
    ws.send(
      JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: AGENT_METHODS.initialize,
        params: {
          protocolVersion: PROTOCOL_VERSION,
          // No fs or terminal: clients come and go, so the gateway cannot promise to serve them.
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
          clientInfo: { name: "acp-gateway", title: "ACP Gateway", version: "0.1.0" },
        },
      }),
    );
  }

  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    let dialIn = this.dialIn?.ws === ws ? this.dialIn : undefined;
    if (!dialIn) {
      const attachment = ws.deserializeAttachment() as { epoch: number; limits?: Partial<Limits>; edge?: boolean } | undefined;
      this.rates.overrides ??= attachment?.limits;
      if (!attachment) return;
      dialIn = { ws, epoch: attachment.epoch, edge: attachment.edge === true };
      if (attachment.epoch === this.store.epoch) this.dialIn = dialIn;
    }
    // The edge (worker/agent-connection.ts) marks where the gateway first has the agent's frame.
    if (!dialIn.edge) {
      stage("agent.in", data);
      return this.onAgentFrame(ws, dialIn.epoch, data);
    }
    if (typeof data !== "string" || dialIn.epoch !== this.store.epoch) return;
    this.onEdgeFrame(ws, dialIn.epoch, data);
  }

  /**
   * A frame on the edge's control socket (protocol/agent-edge-wire.ts): the agent's own, as it sent
   * it, with the session the edge counts it as, or frames the edge numbered and hands back. The edge
   * has already held it to the connection's message rates.
   */
  private onEdgeFrame(ws: WebSocket, epoch: number, data: string): void {
    const control = decodeControl(data);
    if (!control) return this.log("warn", "agent.control_frame_malformed", "a malformed frame on the edge's control socket was dropped");
    if (control.t === "plain") return this.onAgentFrame(ws, epoch, control.text, true);
    if (control.t === "attributed") {
      this.edgeCounts.set(control.s, control.c);
      this.onAgentFrame(ws, epoch, control.text, true, control.s);
      return this.maybeGrant(control.s);
    }
    if (control.t === "handover") {
      this.edgeCounts.set(control.s, control.c);
      // Only what the edge numbered under a grant, so only for a session of this agent.
      if (!this.store.ownsSession(control.s)) return;
      const items: Stamped[] = control.texts.map((text, k) => ({ kind: "frame", epoch, text, seq: control.seqs[k] as number }));
      this.outbox.addNumbered(control.s, items);
      return this.sendBatch(control.s);
    }
  }

  /**
   * The edge may deliver the session's notifications itself once everything it sent for the session
   * through this object has been applied: nothing of the session is queued here or in flight. The
   * grant names the count it covers, so the edge takes it only if it sent nothing since.
   */
  private maybeGrant(sessionId: string): void {
    const c = this.edgeCounts.get(sessionId);
    const socket = this.dialIn;
    if (c === undefined || !socket?.edge || socket.epoch !== this.store.epoch) return;
    if (this.inFlight.has(sessionId) || this.outbox.pendingFor(sessionId).length > 0 || !this.store.ownsSession(sessionId)) return;
    this.edgeCounts.delete(sessionId);
    const { from, to } = this.outbox.reserveRange(GRANT_NUMBERS);
    try {
      socket.ws.send(encodeControl({ t: "grant", s: sessionId, c, from, to, epoch: socket.epoch }));
    } catch {
      // closing: the edge is going too
    }
  }

  /**
   * One frame from the agent, on a dial-in or a dial-out connection. `viaEdge`: the edge applied the
   * rates; `edgeSession`: the session the edge counts the frame as (it saw the request a cancel names).
   */
  private onAgentFrame(ws: WebSocket, epoch: number, data: string | ArrayBuffer, viaEdge = false, edgeSession?: string): void {
    if (epoch !== this.store.epoch || typeof data !== "string") return;
    const parsed = parseFrame(data);
    if (!parsed.ok) {
      if (parsed.reply) ws.send(JSON.stringify(parsed.reply));
      // An answer refused at the edge (too large, too deep) must not leave the request it answers waiting.
      const refused = refusedAnswer(parsed.reply);
      if (refused) this.onAgentResponse(refused, JSON.stringify(refused));
      return;
    }
    const message = parsed.message;
    const tenantId = this.store.meta?.tenantId;
    if (!isResponse(message) && tenantId !== undefined && !viaEdge) {
      const rate = this.rates.admit(ws, epoch, tenantId, message.method, isRequest(message) ? message.id : undefined);
      if (rate === "closing") {
        if (this.dialOut?.ws === ws) this.dialOut = undefined;
        this.agentGone(epoch, FLOOD_REASON);
      }
      if (rate !== "ok") return;
    }
    if (!isResponse(message) && isGatewayMethod(message.method)) {
      if (isRequest(message)) ws.send(JSON.stringify(errorResponse(message.id, gatewayMethodRefused(message.method))));
      return;
    }
    if (stripGatewayMarks(message)) data = JSON.stringify(message);
    if (isResponse(message)) return this.onAgentResponse(message, data);
    if (message.method === CANCEL_REQUEST && !isRequest(message))
      return this.cancelFromAgent(message.params, epoch, data, viaEdge, edgeSession);
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined || !this.store.ownsSession(sessionId)) {
      if (isRequest(message)) {
        const error =
          sessionId === undefined
            ? new RpcError(ErrorCode.methodNotFound, `The gateway routes agent requests by params.sessionId; ${message.method} has none`)
            : RpcError.sessionNotFound(sessionId);
        ws.send(JSON.stringify(errorResponse(message.id, error)));
      }
      return;
    }
    if (isRequest(message)) {
      const key = inboundKey(message.id, epoch);
      this.inbound.set(key, { epoch, sessionId });
      this.answered.delete(key);
    }
    this.markActive(sessionId, epoch);
    this.enqueue(sessionId, { kind: "frame", epoch, text: data });
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    if (this.dialIn?.ws === ws) this.dialIn = undefined;
    const attachment = ws.deserializeAttachment() as { epoch: number } | undefined;
    try {
      ws.close(code === CLOSE.noStatus ? CLOSE.normal : code, "closed");
    } catch {
      // already closed
    }
    if (attachment && attachment.epoch === this.store.epoch) this.agentGone(attachment.epoch, reason || `closed with code ${code}`);
  }

  override webSocketError(ws: WebSocket): void {
    if (this.dialIn?.ws === ws) this.dialIn = undefined;
    const attachment = ws.deserializeAttachment() as { epoch: number } | undefined;
    if (attachment && attachment.epoch === this.store.epoch) this.agentGone(attachment.epoch, "connection error");
  }

  private onAgentResponse(message: ResponseMessage, text: string): void {
    if (typeof message.id !== "number") return;
    const outbound = this.store.outbound(message.id);
    if (!outbound) return;
    if (outbound.kind === "forward") {
      // The map entry stays until the session has the answer: if this object is lost before, the
      // request counts as unanswered (lostConnection) and its turn ends, rather than waiting for ever.
      if (outbound.sessionId !== null && outbound.gwId !== null) {
        this.enqueue(outbound.sessionId, { kind: "response", gwId: outbound.gwId, text, agentId: outbound.agentId });
      }
      return;
    }
    this.store.takeOutbound(message.id);
    if (outbound.kind === "initialize") {
      const result = isObject(message.result) ? message.result : {};
      this.store.info = {
        protocolVersion: typeof result.protocolVersion === "number" ? result.protocolVersion : PROTOCOL_VERSION,
        agentCapabilities: isObject(result.agentCapabilities) ? result.agentCapabilities : {},
        agentInfo: result.agentInfo,
        authMethods: Array.isArray(result.authMethods) ? result.authMethods : [],
        initializedAt: Date.now(),
        epoch: outbound.epoch,
      };
      this.initWaiters.closeAll("initialized");
      return;
    }
    if (outbound.kind === "open") this.waiters.answer(outbound.agentId, message);
  }

  /**
   * `$/cancel_request` from the agent names one of its own requests: it goes to the session that
   * request went to. An instance woken during the epoch may not know it (see `inbound`): then every
   * session active in the epoch hears it, and those that do not hold the request ignore it.
   */
  private cancelFromAgent(params: unknown, epoch: number, text: string, viaEdge: boolean, edgeSession: string | undefined): void {
    const requestId = isObject(params) ? params.requestId : undefined;
    if (typeof requestId !== "string" && typeof requestId !== "number") return;
    const open = this.inbound.get(inboundKey(requestId, epoch));
    // The edge sees every request of its connection and names the session of a cancel for an open
    // one, also when this instance was woken and does not know it; a cancel it could not name is for
    // no open request, and is not sent to every session (a frame numbered here could overtake the
    // edge's own for a session it holds a grant for).
    const named = edgeSession !== undefined && this.store.ownsSession(edgeSession) ? [edgeSession] : [];
    const unknown = viaEdge ? named : epoch === this.wholeEpoch ? [] : this.store.activeSessions(epoch);
    const sessions = open ? [open.sessionId] : unknown;
    for (const sessionId of sessions) this.enqueue(sessionId, { kind: "frame", epoch, text });
  }

  /**
   * Whether the session's answer to the agent's request is to be sent now: once per request, by
   * the session the request went to. An instance woken during the epoch sends an answer it has no
   * entry for (the request came before it), and remembers it so a second try is not sent again.
   */
  private takeInbound(id: JsonRpcId, epoch: number, sessionId: string): boolean {
    const key = inboundKey(id, epoch);
    const open = this.inbound.get(key);
    if (open) {
      if (open.sessionId !== sessionId) return false;
      this.inbound.delete(key);
    } else if (epoch === this.wholeEpoch || this.answered.has(key)) return false;
    if (epoch !== this.wholeEpoch) {
      this.answered.add(key);
      dropOldest(this.answered, ANSWERED_KEPT);
    }
    return true;
  }

  /** Every session that heard from or spoke to this connection learns it is gone. */
  private agentGone(epoch: number, reason: string): void {
    if (epoch <= 0) return;
    if (this.store.goneEpoch < epoch) this.store.goneEpoch = epoch;
    const lost = this.store.takeOutboundOfEpoch(epoch);
    this.waiters.closeAll(reason);
    const sessions = new Set(this.store.activeSessions(epoch));
    for (const o of lost) if (o.sessionId) sessions.add(o.sessionId);
    for (const sessionId of sessions) {
      const ref = this.ref(sessionId);
      if (!ref) continue;
      const gwIds = lost.filter((o) => o.sessionId === sessionId && o.gwId !== null).map((o) => o.gwId as number);
      // Queued behind what the agent said before it went, so that comes first.
      this.enqueue(sessionId, { kind: "gone", epoch, reason, gwIds });
    }
    for (const [key, open] of this.inbound) if (open.epoch <= epoch) this.inbound.delete(key);
    this.answered.clear();
  }

  // ── RPC from SessionObjects: deliver to the agent ────────────────────────────────────────────
  /**
   * Delivers one frame; false when it did not reach the agent (a request was then answered with an
   * error, or must be). `key`: the session's number for the frame, the same on its second try (by
   * link, then by RPC): a key seen before gets the first try's outcome and hands nothing on again.
   */
  toAgent(agent: string, ref: SessionRef, frame: ToAgent, key?: number): Promise<boolean> {
    stage("agent.toAgent", frame);
    if (key === undefined) return this.handOn(agent, ref, frame);
    const once = `${ref.sessionId}:${key}`;
    const earlier = this.handedOn.get(once);
    if (earlier) return earlier;
    const outcome = this.handOn(agent, ref, frame);
    this.handedOn.set(once, outcome);
    // A hand-off that threw may be tried again; the kept outcomes are bounded (a second try comes within seconds).
    outcome.catch(() => this.handedOn.delete(once));
    dropOldest(this.handedOn, ANSWERED_KEPT);
    return outcome;
  }

  private async handOn(agent: string, ref: SessionRef, frame: ToAgent): Promise<boolean> {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId || meta.name !== agent || !this.store.ownsSession(ref.sessionId)) return false;
    // A dial-in socket is found synchronously, so frames keep their order; a dial_out agent may be dialled now.
    let ws = this.socket() ?? (frame.type === "request" ? await this.ensureSocket() : undefined);
    // An agent accepts nothing before it has answered initialize; waiters wake in arrival order.
    if (ws && this.store.info?.epoch !== this.store.epoch) {
      await this.waitForInitialize();
      ws = this.socket();
    }
    const epoch = this.store.epoch;
    switch (frame.type) {
      case "request": {
        if (!ws) {
          const error = this.notConnected(agent);
          this.enqueue(ref.sessionId, { kind: "response", gwId: frame.gwId, text: JSON.stringify(errorResponse(frame.gwId, error)) });
          return true; // answered, with the error
        }
        // The session's second try of a call whose answer it lost: the request went already. Checked
        // after the waits above, so two tries waiting at once still send it once.
        if (this.store.outboundFor(ref.sessionId, frame.gwId)) return true;
        const agentId = this.store.nextId();
        this.store.addOutbound({ agentId, epoch, kind: "forward", sessionId: ref.sessionId, gwId: frame.gwId });
        this.markActive(ref.sessionId, epoch);
        this.armWatch();
        const text = JSON.stringify(withParams({ jsonrpc: "2.0", id: agentId, method: frame.method }, frame.params));
        // The edge routes the answer to the session itself, in order with the session's notifications.
        ws.send(this.dialIn?.ws === ws && this.dialIn.edge ? encodeControl({ t: "request", s: ref.sessionId, id: agentId, text }) : text);
        return true;
      }
      case "notification":
        ws?.send(JSON.stringify(withParams({ jsonrpc: "2.0", method: frame.method }, frame.params)));
        return ws !== undefined;
      case "response": {
        if (!ws || frame.epoch !== epoch) return false;
        // Each request of the agent is answered once: a second try finds it answered already.
        if (!this.takeInbound(frame.id, epoch, ref.sessionId)) return true;
        const body: Record<string, unknown> = { jsonrpc: "2.0", id: frame.id };
        if (frame.error !== undefined) body.error = frame.error;
        else body.result = frame.result ?? null;
        ws.send(JSON.stringify(body));
        stage("agent.out", body);
        return true;
      }
      case "cancel_request": {
        const outbound = this.store.outboundFor(ref.sessionId, frame.gwId);
        if (ws && outbound && outbound.epoch === epoch) {
          ws.send(JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: outbound.agentId } }));
          return true;
        }
        return false;
      }
    }
  }

  // ── agent keys expire: the connection closes then, within seconds, as a client's does ──────────
  /** The alarm fires at the earliest expiry (sooner if redelivery needs it; alarm() re-arms both). */
  private async armAlarmBy(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }

  private closeExpired(): void {
    const now = Date.now();
    let next: number | undefined;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as { keyId?: string; expiresAt?: number | null } | undefined;
      const expiresAt = attachment?.expiresAt;
      if (typeof expiresAt !== "number") continue;
      if (expiresAt <= now && attachment?.keyId) this.closeConnections(attachment.keyId, "the agent key expired");
      else if (expiresAt > now) next = Math.min(next ?? expiresAt, expiresAt);
    }
    if (next !== undefined) this.ctx.waitUntil(this.armAlarmBy(next));
  }

  // ── RPC from the Worker ──────────────────────────────────────────────────────────────────────
  /** A revoked key, or a disabled tenant (keyId null): its agent connection closes now. */
  closeConnections(keyId: string | null, reason: string): number {
    const sockets = keyId === null ? this.ctx.getWebSockets() : this.ctx.getWebSockets(`key:${keyId}`);
    for (const ws of sockets) {
      if (this.dialIn?.ws === ws) this.dialIn = undefined;
      const attachment = ws.deserializeAttachment() as { epoch: number } | undefined;
      try {
        ws.close(CLOSE.credentialsRevoked, reason);
      } catch {
        // already closing
      }
      if (attachment && attachment.epoch === this.store.epoch) this.agentGone(attachment.epoch, reason);
    }
    // The tenant disabled, the agent removed or re-registered: a dial-out connection closes too.
    const dialOut = keyId === null ? this.dialOut : undefined;
    if (dialOut) {
      this.dialOut = undefined;
      try {
        dialOut.ws.close(CLOSE.normal, reason);
      } catch {
        // already closing
      }
      this.agentGone(dialOut.epoch, reason);
    }
    return sockets.length + (dialOut ? 1 : 0);
  }

  async status(tenantId: string, agent: string): Promise<AgentStatus> {
    this.store.meta ??= { tenantId, name: agent };
    const ws = await this.ensureSocket();
    if (ws) await this.waitForInitialize();
    const unreachable = ws ? undefined : this.dialer.lastError;
    return { connected: ws !== undefined, info: this.store.info ?? null, ...(unreachable ? { unreachable } : {}) };
  }

  /** session/new or session/load through the agent; on success the SessionObject is set up and indexed. */
  async openSession(args: OpenSessionArgs): Promise<ResponseMessage> {
    this.store.meta ??= { tenantId: args.tenantId, name: args.agent };
    this.rates.overrides = args.limits;
    const ws = await this.ensureSocket();
    if (!ws) return errorResponse(0, this.notConnected(args.agent));
    await this.waitForInitialize();
    const agentId = this.store.nextId();
    const epoch = this.store.epoch;
    this.store.addOutbound({ agentId, epoch, kind: "open", sessionId: null, gwId: null });
    const loadId = args.method === AGENT_METHODS.sessionLoad ? sessionIdOfParams(args.params) : undefined;
    // A loaded session must exist before the agent replays its history into it.
    if (loadId) {
      const refused = await this.setUpSession(args, loadId, epoch, undefined);
      if (refused) {
        this.store.takeOutbound(agentId);
        return errorResponse(agentId, refused);
      }
    }
    const response = new Promise<ResponseMessage>((resolve) =>
      this.waiters.add(agentId, null, (outcome) => {
        if (outcome.kind === "answered") return resolve(outcome.value);
        if (outcome.kind === "closed") {
          return resolve(errorResponse(agentId, RpcError.internal(`The agent disconnected (${outcome.reason}) before answering`)));
        }
        this.store.takeOutbound(agentId);
        const late = `The agent "${args.agent}" did not answer ${args.method} within ${OPEN_TIMEOUT_MS / 1000} s`;
        resolve(errorResponse(agentId, RpcError.internal(late)));
      }),
    );
    ws.send(JSON.stringify(withParams({ jsonrpc: "2.0", id: agentId, method: args.method }, args.params)));
    const answer = await response;
    if (answer.error !== undefined || !isObject(answer.result)) return answer;
    const sessionId = loadId ?? answer.result.sessionId;
    if (typeof sessionId !== "string" || sessionId === "") {
      return errorResponse(agentId, RpcError.internal(`The agent answered ${args.method} without a sessionId`));
    }
    const refused = await this.setUpSession(args, sessionId, epoch, answer.result);
    return refused ? errorResponse(agentId, refused) : answer;
  }

  /** Sets up and indexes the session, or says why the agent may not claim it (then nothing changed). */
  private async setUpSession(
    args: OpenSessionArgs,
    sessionId: string,
    epoch: number,
    result: Record<string, unknown> | undefined,
  ): Promise<RpcError | undefined> {
    const cwd = isObject(args.params) && typeof args.params.cwd === "string" ? args.params.cwd : "";
    const opening = args.method === AGENT_METHODS.sessionNew ? "new" : "load";
    const owner = await sessionOwner(this.env.DB, args.tenantId, sessionId);
    const claimed =
      owner !== undefined && (opening === "new" || owner !== args.agent)
        ? { ok: false as const, message: `session ${sessionId} already exists and belongs to agent "${owner}"` }
        : await this.session(sessionId).init(
            {
              agent: args.agent,
              cwd,
              createdBy: args.createdBy,
              deadlineMs: args.deadlineMs,
              relayAlwaysAsMade: args.relayAlwaysAsMade,
              ...(args.limits ? { limits: args.limits } : {}),
              ...(result ? { result } : {}),
            },
            opening,
          );
    if (!claimed.ok) {
      return new RpcError(
        ErrorCode.internalError,
        `The agent "${args.agent}" answered ${args.method} with a session id the gateway refused: ${claimed.message}. That session is unchanged; try again, and if this repeats the agent is misbehaving.`,
        { reason: "session_id_taken", sessionId },
      );
    }
    this.store.addSession(sessionId, epoch);
    this.markedActive.add(`${epoch}:${sessionId}`);
    // The index row of an existing session is only touched for its own agent (never re-assigned).
    await indexSession(this.env.DB, { tenantId: args.tenantId, sessionId, agent: args.agent, cwd, createdBy: args.createdBy });
    return undefined;
  }

  // ── helpers ───────────────────────────────────────────────────────────────────────────────────
  /** Sessions already marked active in this epoch: a write per relayed frame would hold every send
   *  behind a storage commit (the output gate), so each session is written once per connection. */
  private readonly markedActive = new Set<string>();
  private markActive(sessionId: string, epoch: number): void {
    const key = `${epoch}:${sessionId}`;
    if (this.markedActive.has(key)) return;
    this.store.markActive(sessionId, epoch);
    this.markedActive.add(key);
  }

  private socket(): WebSocket | undefined {
    const epoch = this.store.epoch;
    if (this.dialOut?.epoch === epoch) return this.dialOut.ws;
    if (this.dialIn?.epoch === epoch) return this.dialIn.ws;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as { epoch: number; edge?: boolean } | undefined;
      if (attachment?.epoch !== epoch) continue;
      this.dialIn = { ws, epoch, edge: attachment.edge === true };
      return ws;
    }
    return undefined;
  }

  /** The agent's connection: the dial-in socket, or for a dial_out agent one opened now. */
  private async ensureSocket(): Promise<WebSocket | undefined> {
    const ws = this.socket();
    if (ws) return ws;
    const meta = this.store.meta;
    if (!meta) return undefined;
    this.connecting ??= this.dialer
      .connect(this.env, meta, {
        onOpen: (socket) => this.onDialedOut(socket),
      })
      .finally(() => {
        this.connecting = undefined;
      });
    return this.connecting;
  }

  /** A dial-out connection is up: it becomes the current epoch, and the gateway initializes the agent. */
  private async onDialedOut(ws: WebSocket): Promise<void> {
    const epoch = this.store.epoch + 1;
    this.store.epoch = epoch;
    this.outbox.reserve();
    this.wholeEpoch = epoch;
    this.dialOut = { ws, epoch };
    ws.addEventListener("message", (event) => this.onAgentFrame(ws, epoch, event.data as string | ArrayBuffer));
    const lost = (reason: string) => {
      if (this.dialOut?.ws !== ws) return;
      this.dialOut = undefined;
      this.agentGone(epoch, reason);
    };
    ws.addEventListener("close", (event) => lost(event.reason || `closed with code ${event.code}`));
    ws.addEventListener("error", () => lost("connection error"));
    this.sendInitialize(ws, epoch);
    await this.waitForInitialize();
  }

  private notConnected(agent: string): RpcError {
    const unreachable = this.dialer.lastError;
    return unreachable
      ? new RpcError(ErrorCode.internalError, `The agent "${agent}" is unreachable: ${unreachable}`, { reason: "agent_unreachable" })
      : new RpcError(ErrorCode.internalError, `The agent "${agent}" is not connected to the gateway; start it or try again later`, {
          reason: "agent_not_connected",
        });
  }

  /** Resolves once the current connection has answered initialize (or after INIT_WAIT_MS). */
  private waitForInitialize(): Promise<void> {
    if (this.store.info?.epoch === this.store.epoch) return Promise.resolve();
    // Answered, or timed out: either way the caller goes on (and finds the agent initialized or not).
    return new Promise((resolve) => this.initWaiters.add(++this.initWaits, null, () => resolve()));
  }

  private ref(sessionId: string): SessionRef | undefined {
    const meta = this.store.meta;
    return meta ? { tenantId: meta.tenantId, sessionId } : undefined;
  }

  /** A log line carrying this agent's tenant and name (core/log.ts). */
  private log(level: LogLevel, event: string, msg: string, context: LogContext = {}, error?: unknown): void {
    log(level, event, msg, { tenantId: this.store.meta?.tenantId, agent: this.store.meta?.name, ...context }, error);
  }

  private session(sessionId: string): SessionStub {
    const known = this.sessionStubs.get(sessionId);
    if (known) return known;
    // Only an AgentObject that holds its meta (its tenant) delivers to sessions: without it there is no session to name.
    const tenantId = this.store.meta?.tenantId;
    if (tenantId === undefined) throw new Error("the agent connection has no meta: it cannot name a session");
    const stub = objects.session(this.env, tenantId, sessionId);
    this.sessionStubs.set(sessionId, stub);
    return stub;
  }

  /**
   * Frames for a session are delivered in batches under load: while one call to the session is in
   * flight, what the agent sends for it waits and then goes in one call, which the session handles
   * as one event with one storage commit (a commit per frame is what limits throughput). A frame
   * that finds nothing in flight goes at once, so a quiet session pays no added latency. Order is
   * kept: frames, answers and the agent's departure share one queue per session, one call at a time.
   * The queue is in memory and written to SQLite only when a call failed (session-outbox.ts): then
   * the alarm re-sends it, also after a restart, and the session skips items it already applied.
   */
  private readonly outbox: SessionOutbox;
  private readonly inFlight = new Set<string>();
  private readonly links = new SessionLinks({
    open: (sessionId) => this.openLink(sessionId),
    toAgent: (sessionId, frame, n) => {
      const meta = this.store.meta;
      // SAFETY: a link carries only what its session's AgentLink sends, a ToAgent (agent-link.ts).
      return meta ? this.toAgent(meta.name, { tenantId: meta.tenantId, sessionId }, frame as ToAgent, n) : Promise.resolve(false);
    },
    waitUntil: (promise) => this.ctx.waitUntil(promise),
    idleMs: Number(this.env.AGENT_LINK_IDLE_MS ?? LINK_IDLE_MS),
  });
  private redeliveryArmed = false;

  private enqueue(sessionId: string, item: FromAgent): void {
    this.outbox.add(sessionId, item);
    this.sendBatch(sessionId);
  }

  private sendBatch(sessionId: string): void {
    const ref = this.ref(sessionId);
    if (this.inFlight.has(sessionId) || !ref) return;
    const waiting = this.outbox.pendingFor(sessionId);
    // One call stays well under the RPC message limit (32 MiB): what does not fit goes in the next call.
    const items = waiting.slice(0, batchPrefix(waiting, MAX_BATCH_BYTES));
    const last = items.at(-1)?.seq;
    if (last === undefined) return;
    this.inFlight.add(sessionId);
    const call = (this.links.deliver(sessionId, items) ?? this.session(sessionId).fromAgentBatch(items))
      .then(
        () => {
          this.outbox.delivered(sessionId, last);
          for (const item of items) if (item.kind === "response" && item.agentId !== undefined) this.store.takeOutbound(item.agentId);
          return true;
        },
        (e: unknown) => {
          this.log("warn", "agent.delivery_failed", "delivering to a session failed; the alarm retries", { sessionId }, e);
          this.sessionStubs.delete(sessionId); // a stub that threw may be broken for good
          if (this.outbox.failed(sessionId, last))
            this.log("error", "agent.delivery_abandoned", "gave up delivering to a session after repeated failures", { sessionId });
          else this.armRedelivery();
          return false;
        },
      )
      .then((ok) => {
        this.inFlight.delete(sessionId);
        if (!ok) return;
        this.sendBatch(sessionId);
        this.maybeGrant(sessionId);
      });
    this.ctx.waitUntil(call);
  }

  /** The session's end of a link (session-links.ts), or undefined when the session refuses it. */
  private async openLink(sessionId: string): Promise<WebSocket | undefined> {
    const meta = this.store.meta;
    return meta ? openSessionLink(this.session(sessionId), AGENT_LINK_HEADER, meta.name) : undefined;
  }

  private watchArmed = false;
  private armWatch(): void {
    if (this.watchArmed) return;
    this.watchArmed = true;
    this.ctx.waitUntil(this.armAlarmBy(Date.now() + WATCH_MS));
  }

  private armRedelivery(): void {
    if (this.redeliveryArmed) return;
    this.redeliveryArmed = true;
    this.ctx.waitUntil(this.armAlarmBy(Date.now() + REDELIVERY_MS));
  }

  /** Re-sends what sessions have not taken: after a restart nothing is in flight, so everything goes. */
  override alarm(): void {
    this.closeExpired();
    this.redeliveryArmed = false;
    for (const sessionId of this.outbox.sessions()) this.sendBatch(sessionId);
    if (!this.outbox.isEmpty()) this.armRedelivery();
    this.watchArmed = false;
    if (this.store.awaitsAgent()) this.armWatch();
  }
}

/** How many numbers a grant reserves: the edge comes back through this object when it has used them. */
const GRANT_NUMBERS = 4096;

/** How many answers a woken instance remembers against second tries (a retry comes within seconds). */
const ANSWERED_KEPT = 1024;

/** Keeps the newest `kept` entries of a Set or Map (both iterate in insertion order). */
function dropOldest(entries: { size: number; keys(): Iterator<string>; delete(key: string): boolean }, kept: number): void {
  while (entries.size > kept) entries.delete(entries.keys().next().value as string);
}

/** The key of one of the agent's requests: its id (as JSON, so 1 and "1" differ) on one connection. */
function inboundKey(id: JsonRpcId, epoch: number): string {
  return `${epoch}:${JSON.stringify(id)}`;
}

function withParams(message: Record<string, unknown>, params: unknown): Record<string, unknown> {
  if (params !== undefined) message.params = params;
  return message;
}

function gatewayMethodRefused(method: string): RpcError {
  return new RpcError(
    ErrorCode.methodNotFound,
    `${method} is refused: methods named _acp_gateway/* belong to the gateway, and agents may not send them`,
    {
      method,
      reason: "gateway_namespace",
    },
  );
}

function sessionIdOfParams(params: unknown): string | undefined {
  return isObject(params) && typeof params.sessionId === "string" ? params.sessionId : undefined;
}
