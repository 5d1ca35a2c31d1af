// The edge's end of a dial-in agent's connection. The edge terminates the agent's WebSocket, as it
// does a client's, and opens one to the AgentObject (the control socket), which takes it as the
// agent's own: initialize, session/new and /load, the agent's answers, and everything of a session
// that has no grant go through the AgentObject exactly as before. A session's notifications (the
// stream) and requests go from here straight to its SessionObject once the AgentObject has granted
// it, so they cross one object, not two (docs/decisions/0001-the-message-path.md, "The stream at the
// edge"; the wire is protocol/agent-edge-wire.ts). The sessions' answers to the agent's requests come
// back on the edge links, and the edge sends each request one answer, whichever way it came
// (protocol/edge-routing.ts `EdgeAnswers`, docs/decisions/0034-permission-round-trip-at-the-edge.md).
//
// Order and exactly-once across the two paths: protocol/edge-routing.ts. Checks: the connection's
// message rates are applied here to every frame (the AgentObject skips them for the edge's), by
// holding what comes too fast and draining it at the rate, never refusing a notification
// (protocol/agent-hold.ts, docs/decisions/0023-agent-bursts-held.md); the
// gateway's namespace is applied here to what goes direct, as the AgentObject applies it to the rest.

import { SessionLinks, LINK_IDLE_MS, openSessionLink } from "../durable-objects/agent/session-links";
import { AgentRates, FLOOD_REASON } from "../connection/tenant-limits";
import { EDGE_LINK_HEADER, decodeControl, encodeControl } from "../protocol/agent-edge-wire";
import { type DirectItem, EdgeAnswers, EdgeRouting } from "../protocol/edge-routing";
import { agentAnswer } from "../protocol/agent-relay";
import { refusedAnswer } from "../protocol/refused-answer";
import { isGatewayMethod, stripGatewayMarks } from "../protocol/gateway-namespace";
import {
  type JsonRpcId,
  type ResponseMessage,
  isObject,
  isRequest,
  isResponse,
  type ParsedFrame,
  parseFrame,
  sessionIdOf,
  type Message,
} from "../protocol/jsonrpc";
import { CANCEL_REQUEST } from "../protocol/methods";
import { type Limits, heldFullError, limitsOf } from "../protocol/tenant-limits";
import { AgentHold, type HoldClose, HostedSessions, type Share, type Wake, utf8Bytes } from "../protocol/agent-hold";
import { stage, stageTimingFrom } from "../protocol/stage-timing";
import type { Env } from "../core/env";
import { CLOSE, closeQuietly, isApplicationCloseCode } from "../core/close-codes";
import { type SessionStub, gatewayObjects, objects } from "../durable-objects/objects";
import { type LogContext, type LogLevel, log } from "../core/log";
import { ConnectionMetrics } from "../connection/connection-metrics";

/** How long the hold may stay over its byte bound before the agent is closed (decision 0023). */
const HOLD_SUSTAIN_MS = 5000;
/** The hold is woken no more often than this: at 1,000 a second, ten frames a wake. */
const MIN_WAKE_MS = 10;
/** The connection's own rate grows with the sessions it hosts, up to this many times. */
const MAX_SESSION_SCALE = 8;
/** A session counts towards the rate while the connection heard of it within this window. */
const SESSION_ACTIVE_MS = 60_000;

/**
 * One frame of the agent. Parsed on arrival (to know what it costs); a frame that has to wait keeps
 * its text only, so what is held is bounded by the bytes counted, and is parsed again on its turn.
 */
interface AgentFrame {
  data: string;
  parsed: ParsedFrame | undefined;
  passed?: true;
  /** When it arrived: a frame the hold passes later reports its wait (the delivery_lag metric). */
  arrivedAt: number;
}

/** The rates' gate is per connection, and this object is one connection. */
const EDGE_EPOCH = 1;

/** Who dialled in, as the route resolved it. */
export interface AgentConnectionPrincipal {
  tenantId: string;
  agent: string;
  limits?: Partial<Limits> | undefined;
}

export class AgentConnection {
  private readonly routing: EdgeRouting;
  /** The AgentObject's requests to the agent that a session made, by their agent-side id: whose the answer is. */
  private readonly answerOwners = new Map<number, string>();
  /** The agent's open requests, and the one answer each gets (a session's, or the AgentObject's). */
  private readonly answers = new EdgeAnswers();
  /** The AgentObject's epoch for this connection (its first control frame): a session's answer names it. */
  private epoch?: number;
  private readonly stubs = new Map<string, SessionStub>();
  private readonly links: SessionLinks;
  private readonly rates: AgentRates;
  /** The agent's connection ended: what went direct is applied (or handed back) before the control socket closes. */
  private closing?: { code: number; reason: string };
  /** The agent's frames waiting for its rates, in order (protocol/agent-hold.ts). */
  private readonly hold: AgentHold<AgentFrame>;
  /** A timer or the tenant's lease is awaited for the hold (`wake`). */
  private waking = false;
  private readonly limits: Limits;
  /** The connection's own rate for one session; `hosted` scales it. */
  private readonly baseRate: number;
  /** The sessions the connection hosts: its rate is `baseRate` times as many (up to MAX_SESSION_SCALE). */
  private readonly hosted = new HostedSessions(SESSION_ACTIVE_MS, MAX_SESSION_SCALE);
  private controlOpen = true;
  private readonly metrics: ConnectionMetrics;

  constructor(
    private readonly env: Env,
    private readonly principal: AgentConnectionPrincipal,
    private readonly agent: WebSocket,
    private readonly control: WebSocket,
    private readonly waitUntil: (promise: Promise<unknown>) => void,
  ) {
    stageTimingFrom(env);
    this.metrics = new ConnectionMetrics(env.METRICS, principal.tenantId, "agent", principal.agent);
    this.rates = new AgentRates(gatewayObjects(env));
    this.rates.overrides = principal.limits;
    this.limits = limitsOf(principal.limits);
    this.baseRate = this.limits.messagesPerSecondPerAgentConnection;
    const maxBytes = this.limits.heldBytesPerAgentConnection;
    this.hold = new AgentHold<AgentFrame>(
      { rate: this.baseRate, maxBytes, sustainMs: HOLD_SUSTAIN_MS, ceilingBytes: 2 * maxBytes },
      {
        share: () => this.share(),
        pass: (frame) => this.handle(frame),
        refuse: (frame) => this.refuse(frame),
        close: (why) => this.overflowed(why),
      },
      Date.now(),
    );
    this.routing = new EdgeRouting({
      toAgentObject: (message) => this.sendControl(encodeControl(message)),
      deliver: (sessionId, items) => this.deliver(sessionId, items),
      drained: () => this.closeWhenDrained(),
    });
    this.links = new SessionLinks({
      open: (sessionId) => openSessionLink(this.session(sessionId), EDGE_LINK_HEADER, principal.agent),
      // A session sends its answers to the agent's requests on its edge link (AgentLink `toAgent`).
      toAgent: (sessionId, frame) => this.answerFromSession(sessionId, frame),
      waitUntil,
      idleMs: Number(env.AGENT_LINK_IDLE_MS ?? LINK_IDLE_MS),
      keep: (sessionId) => this.answers.waiting(sessionId),
    });
    agent.addEventListener("message", (event) => this.fromAgent(event.data));
    agent.addEventListener("close", (event) => this.agentClosed(event.code, event.reason));
    agent.addEventListener("error", () => this.agentClosed(CLOSE.internalError, "connection error"));
    control.addEventListener("message", (event) => this.fromAgentObject(event.data));
    control.addEventListener("close", (event) => this.controlClosed(event.code, event.reason));
    control.addEventListener("error", () => this.controlClosed(CLOSE.internalError, "the gateway's agent object failed"));
  }

  /** Before the agent's first frame: the tenant's first lease of its message rate (one call to its counter). */
  ready(): Promise<void> {
    return this.rates.warm(EDGE_EPOCH, this.principal.tenantId);
  }

  // ── from the agent ────────────────────────────────────────────────────────────────────────────
  /**
   * Every frame of the agent, in its order, goes through the hold (protocol/agent-hold.ts): passed at
   * once while the rates allow, otherwise held and drained at the rate. Answers and frames that did
   * not parse cost nothing but keep their place, so an answer never overtakes what was sent before it.
   */
  private fromAgent(data: unknown): void {
    if (this.closing || typeof data !== "string") return;
    stage("agent.in", data);
    const parsed = parseFrame(data);
    const message = parsed.ok ? parsed.message : undefined;
    const costs = message !== undefined && !isResponse(message);
    if (message !== undefined && !isResponse(message)) this.noteSession(message);
    this.metrics.message();
    const now = Date.now();
    const frame: AgentFrame = { data, parsed, arrivedAt: now };
    const next = this.hold.arrive(frame, { bytes: utf8Bytes(data), costs, refusable: costs && isRequest(message) }, now);
    if (!frame.passed) frame.parsed = undefined;
    this.wake(next);
  }

  /** What the hold asks for next: a timer, the tenant's lease, or nothing. */
  private wake(next: Wake): void {
    if (this.waking || next === "idle" || next === "closed") return this.closeWhenDrained();
    const woken =
      next === "lease"
        ? (this.rates.awaiting(EDGE_EPOCH, this.principal.tenantId) ?? Promise.resolve())
        : new Promise<void>((resolve) => setTimeout(resolve, Math.max(next.in, MIN_WAKE_MS)));
    this.waking = true;
    this.waitUntil(
      woken.then(() => {
        this.waking = false;
        this.wake(this.hold.drain(Date.now()));
      }),
    );
  }

  /** The tenant's share for one frame the hold passes; "lease" when its next lease is on the way. */
  private share(): Share {
    if (this.rates.awaiting(EDGE_EPOCH, this.principal.tenantId)) return { ok: false, retryAfterMs: undefined };
    return this.rates.share(EDGE_EPOCH, this.principal.tenantId);
  }

  /** The connection's own rate scales with the sessions it hosts (HostedSessions). */
  private noteSession(message: Exclude<Message, ResponseMessage>): void {
    const sessionId = sessionIdOf(message);
    if (sessionId !== undefined) this.sessionSeen(sessionId, false);
  }

  private sessionSeen(sessionId: string, vouched: boolean): void {
    const now = Date.now();
    const scale = this.hosted.note(sessionId, vouched, now);
    if (scale !== undefined) this.hold.setRate(scale * this.baseRate, now);
  }

  /** A frame's turn (the hold passes it, in order): answered, routed to its session, or to the AgentObject. */
  private handle(frame: AgentFrame): void {
    frame.passed = true;
    this.metrics.delayed(Date.now() - frame.arrivedAt);
    const data = frame.data;
    const parsed = frame.parsed ?? parseFrame(data);
    if (!parsed.ok) {
      // Answered here, and never passed on as it came: only frames that parsed reach the AgentObject,
      // so nothing the agent sends can pass for a control frame (CONTROL_MARK). An answer refused
      // here (too large, too deep) must not leave the session's request waiting: the AgentObject gets
      // the error in its place, as the answer.
      if (parsed.reply) this.toAgent(JSON.stringify(parsed.reply));
      const refused = refusedAnswer(parsed.reply);
      if (!refused) return;
      const owner = this.takeAnswerOwner(refused.id);
      const text = JSON.stringify(refused);
      return owner === undefined ? this.sendControl(text) : this.routing.viaAgentObject(owner, text);
    }
    const message = parsed.message;
    if (isResponse(message)) {
      const owner = this.takeAnswerOwner(message.id);
      return owner === undefined ? this.sendControl(data) : this.routing.viaAgentObject(owner, data);
    }
    if (message.method === CANCEL_REQUEST && !isRequest(message)) {
      const requestId = isObject(message.params) ? message.params.requestId : undefined;
      const owner = this.answers.sessionOf(requestId);
      return owner === undefined ? this.sendControl(data) : this.routing.viaAgentObject(owner, data);
    }
    const sessionId = sessionIdOf(message);
    if (isRequest(message)) this.answers.asked(message.id, sessionId);
    if (sessionId === undefined) return this.sendControl(data);
    // The session answers a request on its edge link: opened now, while the request goes to it.
    if (isRequest(message)) this.links.prepare(sessionId);
    this.sessionFrame(sessionId, message, data);
  }

  /** A request that arrived while the hold was over its bound: answered -32029 under its id, not relayed. */
  private refuse({ data, parsed = parseFrame(data) }: AgentFrame): void {
    if (!parsed.ok || isResponse(parsed.message) || !isRequest(parsed.message)) return;
    const error = heldFullError(this.limits.heldBytesPerAgentConnection, this.hold.currentRate, parsed.message.method);
    this.metrics.refused(error.data.reason);
    this.toAgent(JSON.stringify({ jsonrpc: "2.0", id: parsed.message.id, error }));
  }

  /** The hold stayed over its bound: closed 4429 with the reason; the sessions hear FLOOD_REASON. */
  private overflowed(why: HoldClose): void {
    this.rates.closeHeld(this.agent, EDGE_EPOCH, this.principal.tenantId, why);
    this.agentClosed(CLOSE.normal, FLOOD_REASON);
  }

  private takeAnswerOwner(id: JsonRpcId | null | undefined): string | undefined {
    if (typeof id !== "number") return undefined;
    const owner = this.answerOwners.get(id);
    this.answerOwners.delete(id);
    return owner;
  }

  /**
   * A session's notification or request: direct while granted, otherwise through the AgentObject. A
   * request's answer comes back on the edge link either way (`answerFromSession`), so a permission
   * request of a granted session crosses one object (decision 0034).
   */
  private sessionFrame(sessionId: string, message: Exclude<Message, ResponseMessage>, text: string): void {
    if (!this.routing.direct(sessionId)) return this.routing.viaAgentObject(sessionId, text);
    // What the AgentObject does to what passes through it (gateway-namespace.ts): a notification in
    // the gateway's namespace is dropped; a request goes to the AgentObject, which refuses it with an answer.
    if (isGatewayMethod(message.method)) return isRequest(message) ? this.routing.viaAgentObject(sessionId, text) : undefined;
    if (stripGatewayMarks(message)) text = JSON.stringify(message);
    this.routing.viaEdge(sessionId, text);
  }

  /** A batch of direct items: over the session's edge link, or by RPC while there is none. */
  private deliver(sessionId: string, items: DirectItem[]): Promise<void> {
    const delivery = this.links.deliver(sessionId, items) ?? this.session(sessionId).fromAgentBatch(items);
    const settled = delivery.catch((error: unknown) => {
      this.log(
        "warn",
        "agent.delivery_failed",
        "delivering an agent's frames to a session failed; the agent object takes them over",
        { sessionId },
        error,
      );
      this.stubs.delete(sessionId); // a stub that threw may be broken for good
      throw error;
    });
    this.waitUntil(settled.catch(() => undefined));
    return settled;
  }

  /** A log line carrying this connection's tenant and agent (core/log.ts). */
  private log(level: LogLevel, event: string, msg: string, context: LogContext = {}, error?: unknown): void {
    log(level, event, msg, { tenantId: this.principal.tenantId, agent: this.principal.agent, ...context }, error);
  }

  private session(sessionId: string): SessionStub {
    const known = this.stubs.get(sessionId);
    if (known) return known;
    const stub = objects.session(this.env, this.principal.tenantId, sessionId);
    this.stubs.set(sessionId, stub);
    return stub;
  }

  // ── from the AgentObject ──────────────────────────────────────────────────────────────────────
  private fromAgentObject(data: unknown): void {
    if (typeof data !== "string") return;
    const message = decodeControl(data);
    if (!message) return this.log("warn", "agent.control_frame_malformed", "a malformed frame from the agent object was dropped");
    if (message.t === "plain") {
      if (this.answersNothing(message.text)) return;
      return this.toAgent(message.text);
    }
    if (message.t === "epoch") {
      this.epoch = message.epoch;
      return;
    }
    if (message.t === "answer") {
      if (this.answers.take(message.id, message.s)) this.toAgent(message.text);
      return;
    }
    if (message.t === "request") {
      this.answerOwners.set(message.id, message.s);
      this.sessionSeen(message.s, true);
      return this.toAgent(message.text);
    }
    if (message.t === "grant" && !this.closing) {
      this.sessionSeen(message.s, true);
      this.routing.granted(message);
    }
  }

  /**
   * Whether a plain frame of the AgentObject is an answer of its own (an error in place of a
   * session's) to a request that is not open: answered already, so it is dropped. Any other frame passes.
   */
  private answersNothing(text: string): boolean {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return false; // not JSON: never from the AgentObject
    }
    if (!isObject(value) || !("id" in value) || "method" in value) return false;
    return !this.answers.take(value.id, null);
  }

  /**
   * A session's answer to one of the agent's requests, on its edge link: sent to the agent if the
   * request is open and the session's (true either way: a second answer is nobody's). It fails (the
   * session tries again through the AgentObject, which sends it here as `answer`) when it is not an
   * answer of this connection's epoch, or the connection is ending.
   */
  private answerFromSession(sessionId: string, frame: unknown): Promise<boolean> {
    stage("edge.toAgent", frame);
    if (!isObject(frame) || frame.type !== "response" || this.epoch === undefined || frame.epoch !== this.epoch || this.closing) {
      return Promise.reject(new Error("not an answer the edge's connection can send"));
    }
    if (!this.answers.take(frame.id, sessionId)) return Promise.resolve(true);
    const text = JSON.stringify(agentAnswer(frame));
    stage("agent.out", text);
    this.toAgent(text);
    return Promise.resolve(true);
  }

  private toAgent(text: string): void {
    try {
      this.agent.send(text);
    } catch {
      // closing: its close event follows
    }
  }

  private sendControl(text: string): void {
    // The connection is over: what the agent sent meanwhile is lost with it, as frames in its socket are.
    if (!this.controlOpen)
      return this.log("warn", "agent.control_closed", "the agent object's connection is closed; a frame for it was dropped");
    try {
      this.control.send(text);
    } catch {
      // closing: its close event follows
    }
  }

  // ── the ends ──────────────────────────────────────────────────────────────────────────────────
  /** The agent went: once what went direct is applied or handed back, the AgentObject hears it, with the reason. */
  private agentClosed(code: number, reason: string): void {
    if (this.closing) return;
    this.metrics.close();
    this.closing = { code: sendableCode(code), reason: closeReason(reason || `closed with code ${code}`) };
    closeQuietly(this.agent, this.closing.code, this.closing.reason);
    this.closeWhenDrained();
  }

  private closeWhenDrained(): void {
    if (!this.closing || (this.hold.held > 0 && !this.hold.isClosed) || !this.routing.idle()) return;
    this.links.closeAll();
    if (!this.controlOpen) return;
    this.controlOpen = false;
    closeQuietly(this.control, this.closing.code, this.closing.reason);
  }

  /**
   * The AgentObject closed the connection (replaced, key revoked, object restarted): the agent is
   * told, and reconnects. What went direct and is on its way is left to arrive (links close once idle).
   */
  private controlClosed(code: number, reason: string): void {
    this.controlOpen = false;
    // Nothing held can reach the AgentObject now: it is let go with the connection, as frames in its socket are.
    this.hold.end();
    this.metrics.close();
    if (this.closing) return this.closeWhenDrained();
    this.closing = { code: CLOSE.normal, reason };
    const passOn = isApplicationCloseCode(code);
    closeQuietly(
      this.agent,
      passOn ? code : CLOSE.serviceRestart,
      closeReason(passOn ? reason : `the gateway's agent connection restarted; reconnect (${reason || code})`),
    );
    this.closeWhenDrained();
  }
}

/** A code `close()` accepts (1000 or 3000–4999); others are named in the reason. */
function sendableCode(code: number): number {
  return code === CLOSE.normal || (code >= 3000 && code <= 4999) ? code : CLOSE.normal;
}

/** A close reason fits in 123 bytes. */
function closeReason(reason: string): string {
  const bytes = new TextEncoder().encode(reason);
  return bytes.length <= 123 ? reason : new TextDecoder().decode(bytes.slice(0, 120)).replace(/\uFFFD$/, "") + "…";
}
