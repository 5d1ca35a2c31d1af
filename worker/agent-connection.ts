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
// Its parts (worker/agent-edge/): the rates and the hold (`agent-pacing.ts`), the AgentObject's frames
// (`control-frames.ts`), the close codes and reasons (`agent-close.ts`). The frames on the update path
// and a session's answer stay here, so neither path crosses one more file.

import { SessionLinks, LINK_IDLE_MS, openSessionLink } from "../durable-objects/agent/session-links";
import { EDGE_LINK_HEADER, encodeControl } from "../protocol/agent-edge-wire";
import { type DirectItem, EdgeAnswers, EdgeRouting } from "../protocol/edge-routing";
import { agentAnswer } from "../protocol/agent-relay";
import { refusedAnswer } from "../protocol/refused-answer";
import { isGatewayMethod, stripGatewayMarks } from "../protocol/gateway-namespace";
import { type ResponseMessage, isObject, isRequest, isResponse, parseFrame, sessionIdOf, type Message } from "../protocol/jsonrpc";
import { CANCEL_REQUEST } from "../protocol/methods";
import type { Limits } from "../protocol/tenant-limits";
import { utf8Bytes } from "../protocol/agent-hold";
import { stage, stageTimingFrom } from "../protocol/stage-timing";
import type { Env } from "../core/env";
import { CLOSE, closeQuietly, isApplicationCloseCode } from "../core/close-codes";
import { type SessionStub, objects } from "../durable-objects/objects";
import { type LogContext, type LogLevel, log } from "../core/log";
import { ConnectionMetrics } from "../connection/connection-metrics";
import { type AgentFrame, AgentPacing } from "./agent-edge/agent-pacing";
import { ControlFrames } from "./agent-edge/control-frames";
import { closeReason, sendableCode } from "./agent-edge/agent-close";

/** Who dialled in, as the route resolved it. */
export interface AgentConnectionPrincipal {
  tenantId: string;
  agent: string;
  limits?: Partial<Limits> | undefined;
}

export class AgentConnection {
  private readonly routing: EdgeRouting;
  /** The agent's open requests, and the one answer each gets (a session's, or the AgentObject's). */
  private readonly answers = new EdgeAnswers();
  /** The AgentObject's frames: its epoch, and whose answer each of its requests is. */
  private readonly fromAgentObject: ControlFrames;
  private readonly stubs = new Map<string, SessionStub>();
  private readonly links: SessionLinks;
  /** The agent's connection ended: what went direct is applied (or handed back) before the control socket closes. */
  private closing?: { code: number; reason: string };
  /** The agent's rates: the hold its frames go through (agent-pacing.ts). */
  private readonly pacing: AgentPacing;
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
    this.pacing = new AgentPacing(env, principal.tenantId, principal.limits, agent, this.metrics, {
      pass: (frame) => this.handle(frame),
      toAgent: (text) => this.toAgent(text),
      closeAgent: (reason) => this.agentClosed(CLOSE.normal, reason),
      idle: () => this.closeWhenDrained(),
      waitUntil,
    });
    this.fromAgentObject = new ControlFrames(this.answers, {
      toAgent: (text) => this.toAgent(text),
      sessionSeen: (sessionId) => this.pacing.sessionSeen(sessionId, true),
      granted: (grant) => {
        if (this.closing) return;
        this.pacing.sessionSeen(grant.s, true);
        this.routing.granted(grant);
      },
      malformed: () => this.log("warn", "agent.control_frame_malformed", "a malformed frame from the agent object was dropped"),
    });
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
    control.addEventListener("message", (event) => this.fromAgentObject.receive(event.data));
    control.addEventListener("close", (event) => this.controlClosed(event.code, event.reason));
    control.addEventListener("error", () => this.controlClosed(CLOSE.internalError, "the gateway's agent object failed"));
  }

  /** Before the agent's first frame: the tenant's first lease of its message rate (one call to its counter). */
  ready(): Promise<void> {
    return this.pacing.ready();
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
    if (message !== undefined && !isResponse(message)) this.pacing.noteSession(message);
    this.metrics.message();
    const now = Date.now();
    const frame: AgentFrame = { data, parsed, arrivedAt: now };
    const next = this.pacing.hold.arrive(frame, { bytes: utf8Bytes(data), costs, refusable: costs && isRequest(message) }, now);
    if (!frame.passed) frame.parsed = undefined;
    this.pacing.wake(next);
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
      const owner = this.fromAgentObject.takeAnswerOwner(refused.id);
      const text = JSON.stringify(refused);
      return owner === undefined ? this.sendControl(text) : this.routing.viaAgentObject(owner, text);
    }
    const message = parsed.message;
    if (isResponse(message)) {
      const owner = this.fromAgentObject.takeAnswerOwner(message.id);
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

  /**
   * A session's answer to one of the agent's requests, on its edge link: sent to the agent if the
   * request is open and the session's (true either way: a second answer is nobody's). It fails (the
   * session tries again through the AgentObject, which sends it here as `answer`) when it is not an
   * answer of this connection's epoch, or the connection is ending.
   */
  private answerFromSession(sessionId: string, frame: unknown): Promise<boolean> {
    stage("edge.toAgent", frame);
    if (
      !isObject(frame) ||
      frame.type !== "response" ||
      this.fromAgentObject.epoch === undefined ||
      frame.epoch !== this.fromAgentObject.epoch ||
      this.closing
    ) {
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
    if (!this.closing || (this.pacing.hold.held > 0 && !this.pacing.hold.isClosed) || !this.routing.idle()) return;
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
    this.pacing.hold.end();
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
