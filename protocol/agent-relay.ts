// What the AgentObject does with every frame between one agent and its sessions, as a synchronous
// state machine: durable-objects/agent/agent-object.ts is its shell (it accepts the sockets, restores
// them from their attachments, awaits what must be awaited, and performs the I/O asked for here).
// Pure: its I/O goes through the ports below; test/unit/agent-relay.test.ts drives it, model-based,
// with random interleavings of connections, epochs, session creation, requests and answers both
// ways, deliveries that succeed or fail, and evictions.
//
// The guarantees, and how:
// - Every frame of the agent is in the outbox (agent-outbox.ts) or refused with an answer: a request
//   of a session the agent does not own, without a sessionId, or in the gateway's namespace is
//   answered with an error; nothing else is dropped but frames of an older connection (`epoch`).
// - A session's items are delivered in the order taken, one delivery in flight per session (the
//   items the session has not confirmed stay queued and go again: the session applies each once,
//   by its number). A failed delivery is retried by the alarm, also after a restart.
// - A request waiting across the agent is never left pending: when the connection ends (closed,
//   replaced, flooded, revoked, or lost with a crashed instance: `restarted`), every session active
//   on it is told `gone`, with the requests of it the agent did not answer, behind what the agent
//   said before it went; a session's request finds no connection and is answered with an error.
// - Each of the agent's requests is answered once, by the session it went to (`inbound`), also by an
//   instance woken during the connection (`answered`). On the edge's control socket the edge keeps
//   that account instead (it saw every request, and sessions answer it on their edge links too):
//   a session's answer goes to it as `answer`, with the session, and it drops a second one
//   (protocol/edge-routing.ts `EdgeAnswers`).
// - The edge may take a session's notifications only with nothing of the session queued or in
//   flight here (`grant`, protocol/edge-routing.ts holds the other side).

import {
  RpcError,
  errorResponse,
  isObject,
  isRequest,
  isResponse,
  parseFrame,
  sessionIdOf,
  type JsonRpcId,
  type ResponseMessage,
} from "./jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST, PROTOCOL_VERSION } from "./methods";
import { isGatewayMethod, stripGatewayMarks } from "./gateway-namespace";
import { decodeControl, encodeControl } from "./agent-edge-wire";
import { MAX_BATCH_BYTES, batchPrefix } from "./agent-link-wire";
import { AgentOutbox, type OutboxRows, type SessionItem, type Stamped } from "./agent-outbox";
import { refusedAnswer } from "./refused-answer";
import { displayString } from "./display-text";
import { stage } from "./stage-timing";
import { ErrorCode } from "../core/rpc-errors";
import { type LogContext, type LogLevel, log } from "../core/log";

/**
 * What a session sends towards its agent (the AgentObject's `toAgent`; agent/contract.ts). The
 * session asks and does not wait for the agent, so neither object is pinned while an agent thinks.
 */
export type ToAgent =
  /** A client request, under the session's own id (gwId); the AgentObject gives it an agent-side id. */
  | { type: "request"; gwId: number; method: string; params: unknown }
  /** A notification to relay as is (session/cancel, extensions). */
  | { type: "notification"; method: string; params: unknown }
  /** The answer to one of the agent's requests, under the agent's own id, on the connection it came from. */
  | { type: "response"; epoch: number; id: JsonRpcId; result?: unknown; error?: unknown }
  /** Withdraw a client request that was forwarded under gwId. */
  | { type: "cancel_request"; gwId: number };

/** The JSON-RPC answer the agent gets for a session's `response` frame: its error, else its result (null when it has none). */
export function agentAnswer(frame: { id?: unknown; result?: unknown; error?: unknown }): Record<string, unknown> {
  const body: Record<string, unknown> = { jsonrpc: "2.0", id: frame.id };
  if (frame.error !== undefined) body.error = frame.error;
  else body.result = frame.result ?? null;
  return body;
}

/** What the agent said in initialize, as the AgentObject keeps it (connection/gateway-objects.ts re-exports it). */
export interface AgentInfo {
  protocolVersion: number;
  agentCapabilities: Record<string, unknown>;
  agentInfo?: unknown;
  authMethods?: unknown[];
  initializedAt: number;
  /** The connection epoch that answered: a new connection must answer again before it gets requests. */
  epoch: number;
}

/**
 * The agent answered the gateway's initialize with an error (a v2-only agent: `-32022 Unsupported
 * protocol version`): that connection is failing, not connected (decision 0042). Its message is the
 * agent's own words, shown as they are and bounded.
 */
export interface AgentInitFailure {
  epoch: number;
  code: number | null;
  message: string;
  at: number;
}

/** The longest agent message kept of a failed initialize. */
const FAILURE_MESSAGE_MAX = 500;

function initFailureOf(error: unknown, epoch: number): AgentInitFailure {
  const code = isObject(error) && typeof error.code === "number" ? error.code : null;
  const raw = isObject(error) && typeof error.message === "string" && error.message !== "" ? error.message : "no message";
  const message = displayString(raw.length > FAILURE_MESSAGE_MAX ? `${raw.slice(0, FAILURE_MESSAGE_MAX)}…` : raw);
  return { epoch, code, message, at: Date.now() };
}

/** An agent that answered initialize with a version the gateway does not speak: failing, saying why. */
function otherVersion(version: number, epoch: number): AgentInitFailure {
  const message = `it answered protocolVersion ${version}; the gateway speaks ACP v${PROTOCOL_VERSION} only and relays frames unchanged, so it does not use this connection. Run the agent so it negotiates v${PROTOCOL_VERSION}`;
  return { epoch, code: null, message: displayString(message), at: Date.now() };
}

/** What a client is told when the agent it names is failing: the agent's own message, and its code. */
export function agentFailingError(agent: string, failure: AgentInitFailure): RpcError {
  const code = failure.code === null ? "" : ` (${failure.code})`;
  return new RpcError(ErrorCode.internalError, `The agent "${agent}" refused the gateway's initialize: ${failure.message}${code}`, {
    reason: "agent_failing",
    agent,
    agentError: { code: failure.code, message: failure.message },
  });
}

/**
 * A notification of the agent that names no session (`_auth/status_update`): about the agent, not a
 * session, so it is kept as the agent's status (the newest of each method) for the API and clients'
 * initialize, never dropped (decision 0042).
 */
export interface AgentNotice {
  method: string;
  /** As the agent sent them, or `{ omitted: bytes }` past AGENT_NOTICE_MAX_BYTES. */
  params: unknown;
  at: number;
}

/** How many methods' newest notices are kept, and how large one's params may be. */
const AGENT_NOTICES_KEPT = 8;
const AGENT_NOTICE_MAX_BYTES = 4096;

/** `kept` with `method`'s newest notice in front; the oldest methods beyond the bound go. */
export function withAgentNotice(kept: readonly AgentNotice[], method: string, params: unknown, at: number): AgentNotice[] {
  const text = JSON.stringify(params ?? null);
  const bytes = new TextEncoder().encode(text).length;
  const notice = { method, params: bytes > AGENT_NOTICE_MAX_BYTES ? { omitted: bytes } : (params ?? null), at };
  return [notice, ...kept.filter((n) => n.method !== method)].slice(0, AGENT_NOTICES_KEPT);
}

/** A request the AgentObject sent the agent, by its agent-side id (`agentId`). */
export interface Outbound {
  agentId: number;
  epoch: number;
  /** initialize: the gateway's own; open: session/new or session/load awaited in memory; forward: a session's request. */
  kind: "initialize" | "open" | "forward";
  sessionId: string | null;
  gwId: number | null;
}

/** The AgentObject's durable tables (durable-objects/agent/store.ts). */
export interface AgentTables {
  readonly meta: { tenantId: string; name: string } | undefined;
  /** Each connection is a new epoch; what belongs to an older one is dropped. */
  epoch: number;
  /** The newest epoch whose sessions were told it is gone (once per connection). */
  goneEpoch: number;
  info: AgentInfo | undefined;
  /** The newest failed initialize, or null once a connection answered it (decision 0042). */
  initFailure: AgentInitFailure | null;
  /** The agent's newest notification of each method that named no session (decision 0042). */
  notices: AgentNotice[];
  nextId(): number;
  addSession(sessionId: string, epoch: number): void;
  ownsSession(sessionId: string): boolean;
  markActive(sessionId: string, epoch: number): void;
  activeSessions(epoch: number): string[];
  addOutbound(o: Outbound): void;
  outbound(agentId: number): Outbound | undefined;
  takeOutbound(agentId: number): Outbound | undefined;
  outboundFor(sessionId: string, gwId: number): Outbound | undefined;
  /** Whether a session's request still waits on the agent's answer. */
  awaitsAgent(): boolean;
  /** Removes and returns every request still waiting on a connection up to `epoch`. */
  takeOutboundOfEpoch(epoch: number): Outbound[];
}

/** The agent's current connection, as the shell holds it. */
export interface AgentLine {
  /** Whether it is the edge's control socket (protocol/agent-edge-wire.ts) rather than the agent's own. */
  readonly edge: boolean;
  send(text: string): void;
}

/** How the connection's message rates took a frame (connection/tenant-limits.ts `AgentRates.admit`). */
export type Admission = "ok" | "dropped" | { closed: string };

export interface AgentRelayPorts {
  agent: {
    /** The current epoch's connection, if this instance holds it. */
    current(): AgentLine | undefined;
    /** The connection's rates for one frame of the agent's own socket (the edge applies them to its frames). */
    admit(epoch: number, method: string, id: JsonRpcId | undefined): Admission;
  };
  tables: AgentTables;
  outbox: OutboxRows;
  /** Hands a batch to the session (its link, else RPC); the shell calls `delivered` or `deliveryFailed` when it ends. */
  sessions: { deliver(sessionId: string, items: Stamped[]): void };
  /** The object's alarm: soon, to re-send what a session has not taken; later, to notice a lost connection while the agent has work. */
  alarm: { redeliverSoon(): void; watch(): void };
  /** The shell's calls that wait on the agent: a client's session/new or /load, the agent's initialize. */
  waits: { opened(agentId: number, answer: ResponseMessage): void; initialized(): void; gone(reason: string): void };
}

/** How many numbers a grant reserves: the edge comes back through this object when it has used them. */
const GRANT_NUMBERS = 4096;
/** How many answers a woken instance remembers against second tries (a retry comes within seconds). */
export const ANSWERED_KEPT = 1024;

export class AgentRelay {
  private readonly outbox: AgentOutbox;
  /** Per session, the number of the last item in the delivery under way (one at a time). */
  private readonly inFlight = new Map<string, number>();
  /**
   * Per session, how many frames the edge has sent through this object on the current connection
   * (its count, from the newest frame): a grant names it (`maybeGrant`). Cleared with each connection.
   */
  private readonly edgeCounts = new Map<string, number>();
  /**
   * The agent's requests that went to a session and are not answered yet, by `inboundKey`: in
   * memory only, so no commit stands in front of a request on its way to the session or of its
   * answer on the way back. What it is for, and how each use does without it when it is lost:
   * - answering each request once (`takeInbound`): a second try of an answer finds its entry gone.
   *   It is lost only with the instance: a crash also closes the agent's socket (the epoch is over,
   *   so nothing is answered on it); an eviction keeps a dial-in socket, and the woken instance
   *   sends an answer it has no entry for, then remembers it (`answered`) against a second try.
   * - routing the agent's `$/cancel_request` (`cancelFromAgent`): a woken instance that does not
   *   know the request tells every session active in the epoch; the others ignore an id they do not hold.
   * - the agent's departure: sessions are told from `activeSessions(epoch)` in the tables, not from here.
   */
  private readonly inbound = new Map<string, { epoch: number; sessionId: string }>();
  /** The epoch whose connection began in this instance: its `inbound` holds every open request of it. */
  private wholeEpoch = 0;
  /** Answers sent by an instance woken during its epoch (see `inbound`), the newest ANSWERED_KEPT. */
  private readonly answered = new Set<string>();
  /** Sessions marked active in the tables this epoch: each is written once per connection, not per frame. */
  private readonly markedActive = new Set<string>();

  constructor(private readonly ports: AgentRelayPorts) {
    this.outbox = new AgentOutbox(ports.outbox);
  }

  private get tables(): AgentTables {
    return this.ports.tables;
  }

  /**
   * A new instance. If the current connection is not here, the object crashed or was reset and the
   * runtime closed the agent's socket with it: every session it spoke for hears that it is gone.
   * Eviction keeps a dial-in socket: no loss. What a previous instance left queued goes again.
   */
  started(): void {
    const epoch = this.tables.epoch;
    if (epoch > 0 && this.tables.goneEpoch < epoch && !this.ports.agent.current()) {
      this.gone(epoch, "the gateway's agent object restarted and its connection to the agent was lost");
    }
    if (!this.outbox.isEmpty()) this.ports.alarm.redeliverSoon();
  }

  /** A new connection (the shell holds it from now on, as `current`): its epoch. The one before, if any, is gone. */
  connected(replacing: boolean): number {
    const epoch = this.tables.epoch + 1;
    this.tables.epoch = epoch;
    // Written in the same commit as the epoch, so the first relayed frame finds its numbers reserved.
    this.outbox.reserve();
    this.wholeEpoch = epoch;
    this.edgeCounts.clear();
    if (replacing) this.gone(epoch - 1, "replaced by a newer connection");
    return epoch;
  }

  /** The gateway initializes the agent on its new connection, as its client. */
  initialize(epoch: number): void {
    const id = this.tables.nextId();
    this.tables.addOutbound({ agentId: id, epoch, kind: "initialize", sessionId: null, gwId: null });
    const params = {
      protocolVersion: PROTOCOL_VERSION,
      // No fs or terminal: clients come and go, so the gateway cannot promise to serve them. Notices
      // it can: each goes, as sent, to the clients that advertised them (decision 0063).
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, session: { notices: {} } },
      clientInfo: { name: "acp-gateway", title: "ACP Gateway", version: "0.1.0" },
    };
    const line = this.ports.agent.current();
    // The edge learns the connection's epoch first: a session's answer it sends the agent names it.
    if (line?.edge) line.send(encodeControl({ t: "epoch", epoch }));
    line?.send(JSON.stringify({ jsonrpc: "2.0", id, method: AGENT_METHODS.initialize, params }));
  }

  /** Whether the current connection has answered initialize (it gets nothing else before). */
  get initialized(): boolean {
    return this.tables.info?.epoch === this.tables.epoch;
  }

  /** The current connection's failed initialize, if it answered with an error: it gets nothing (the agent is failing). */
  get failing(): AgentInitFailure | undefined {
    const failure = this.tables.initFailure;
    return failure && failure.epoch === this.tables.epoch ? failure : undefined;
  }

  // ── from the agent ──────────────────────────────────────────────────────────────────────────
  /**
   * One frame from the agent on connection `epoch`. `viaEdge`: it came on the edge's control socket,
   * which applied the rates; `edgeSession`: the session the edge counts it as (it saw the request a
   * cancel names).
   */
  agentFrame(data: string | ArrayBuffer, epoch: number, viaEdge = false, edgeSession?: string): void {
    if (epoch !== this.tables.epoch || typeof data !== "string") return;
    const line = this.ports.agent.current();
    const parsed = parseFrame(data);
    if (!parsed.ok) {
      if (parsed.reply) line?.send(JSON.stringify(parsed.reply));
      // An answer refused here (too large, too deep) must not leave the request it answers waiting.
      const refused = refusedAnswer(parsed.reply);
      if (refused) this.agentResponse(refused, JSON.stringify(refused));
      return;
    }
    const message = parsed.message;
    if (!isResponse(message) && this.tables.meta !== undefined && !viaEdge) {
      const admission = this.ports.agent.admit(epoch, message.method, isRequest(message) ? message.id : undefined);
      if (typeof admission === "object") this.gone(epoch, admission.closed);
      if (admission !== "ok") return;
    }
    if (!isResponse(message) && isGatewayMethod(message.method)) {
      if (isRequest(message)) line?.send(JSON.stringify(errorResponse(message.id, gatewayMethodRefused(message.method))));
      return;
    }
    if (stripGatewayMarks(message)) data = JSON.stringify(message);
    if (isResponse(message)) return this.agentResponse(message, data);
    if (message.method === CANCEL_REQUEST && !isRequest(message))
      return this.cancelFromAgent(message.params, epoch, data, viaEdge, edgeSession);
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined || !this.tables.ownsSession(sessionId)) {
      if (isRequest(message)) {
        const error =
          sessionId === undefined
            ? new RpcError(ErrorCode.methodNotFound, `The gateway routes agent requests by params.sessionId; ${message.method} has none`)
            : RpcError.sessionNotFound(sessionId);
        line?.send(JSON.stringify(errorResponse(message.id, error)));
      } else if (sessionId === undefined) {
        this.tables.notices = withAgentNotice(this.tables.notices, message.method, message.params, Date.now());
      }
      return;
    }
    // The edge answers each of its connection's requests once itself (edge-routing.ts `EdgeAnswers`).
    if (isRequest(message) && !viaEdge) {
      const key = inboundKey(message.id, epoch);
      this.inbound.set(key, { epoch, sessionId });
      this.answered.delete(key);
    }
    this.markActive(sessionId, epoch);
    this.enqueue(sessionId, { kind: "frame", epoch, text: data });
  }

  /**
   * A frame on the edge's control socket (protocol/agent-edge-wire.ts): the agent's own, as it sent
   * it, with the session the edge counts it as, or frames the edge numbered and hands back. The edge
   * has already held it to the connection's message rates.
   */
  controlFrame(data: string, epoch: number): void {
    if (epoch !== this.tables.epoch) return;
    const control = decodeControl(data);
    if (!control) return this.log("warn", "agent.control_frame_malformed", "a malformed frame on the edge's control socket was dropped");
    if (control.t === "plain") return this.agentFrame(control.text, epoch, true);
    if (control.t === "attributed") {
      this.edgeCounts.set(control.s, control.c);
      this.agentFrame(control.text, epoch, true, control.s);
      return this.maybeGrant(control.s);
    }
    if (control.t === "handover") {
      this.edgeCounts.set(control.s, control.c);
      // Only what the edge numbered under a grant, so only for a session of this agent.
      if (!this.tables.ownsSession(control.s)) return;
      const items: Stamped[] = control.texts.map((text, k) => ({ kind: "frame", epoch, text, seq: control.seqs[k] as number }));
      this.outbox.addNumbered(control.s, items);
      return this.sendBatch(control.s);
    }
  }

  private agentResponse(message: ResponseMessage, text: string): void {
    if (typeof message.id !== "number") return;
    const outbound = this.tables.outbound(message.id);
    if (!outbound) return;
    if (outbound.kind === "forward") {
      // The entry stays until the session has the answer: if this object is lost before, the request
      // counts as unanswered (`started`) and its turn ends, rather than waiting for ever.
      if (outbound.sessionId !== null && outbound.gwId !== null) {
        this.enqueue(outbound.sessionId, { kind: "response", gwId: outbound.gwId, text, agentId: outbound.agentId });
      }
      return;
    }
    this.tables.takeOutbound(message.id);
    if (outbound.kind === "initialize") {
      // An error is no connection: kept as the agent's failure, never as its capabilities (decision 0042).
      if (message.error !== undefined && message.error !== null) {
        this.tables.initFailure = initFailureOf(message.error, outbound.epoch);
        return this.ports.waits.initialized();
      }
      const result = isObject(message.result) ? message.result : {};
      // Answered with another version than the gateway's (ACP lets an agent answer its latest): its
      // frames would not be v1, and the gateway relays them unchanged, so it is failing (decision 0060).
      if (typeof result.protocolVersion === "number" && result.protocolVersion !== PROTOCOL_VERSION) {
        this.tables.initFailure = otherVersion(result.protocolVersion, outbound.epoch);
        return this.ports.waits.initialized();
      }
      if (this.tables.initFailure !== null) this.tables.initFailure = null;
      this.tables.info = {
        protocolVersion: typeof result.protocolVersion === "number" ? result.protocolVersion : PROTOCOL_VERSION,
        agentCapabilities: isObject(result.agentCapabilities) ? result.agentCapabilities : {},
        agentInfo: result.agentInfo,
        authMethods: Array.isArray(result.authMethods) ? result.authMethods : [],
        initializedAt: Date.now(),
        epoch: outbound.epoch,
      };
      return this.ports.waits.initialized();
    }
    this.ports.waits.opened(outbound.agentId, message);
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
    const named = edgeSession !== undefined && this.tables.ownsSession(edgeSession) ? [edgeSession] : [];
    const unknown = viaEdge ? named : epoch === this.wholeEpoch ? [] : this.tables.activeSessions(epoch);
    const sessions = open ? [open.sessionId] : unknown;
    for (const sessionId of sessions) this.enqueue(sessionId, { kind: "frame", epoch, text });
  }

  /** Connection `epoch` ended: every session that heard from or spoke to it learns it is gone. */
  gone(epoch: number, reason: string): void {
    if (epoch <= 0) return;
    if (this.tables.goneEpoch < epoch) this.tables.goneEpoch = epoch;
    const lost = this.tables.takeOutboundOfEpoch(epoch);
    this.ports.waits.gone(reason);
    const sessions = new Set(this.tables.activeSessions(epoch));
    for (const o of lost) if (o.sessionId) sessions.add(o.sessionId);
    if (this.tables.meta) {
      for (const sessionId of sessions) {
        const gwIds = lost.filter((o) => o.sessionId === sessionId && o.gwId !== null).map((o) => o.gwId as number);
        // Queued behind what the agent said before it went, so that comes first.
        this.enqueue(sessionId, { kind: "gone", epoch, reason, gwIds });
      }
    }
    for (const [key, open] of this.inbound) if (open.epoch <= epoch) this.inbound.delete(key);
    this.answered.clear();
  }

  // ── from a session, towards the agent ───────────────────────────────────────────────────────
  /** Whether `frame` may go to the agent at all: this agent's own session, as the session names it. */
  mayHandOn(tenantId: string, agent: string, sessionId: string): boolean {
    const meta = this.tables.meta;
    return meta !== undefined && meta.tenantId === tenantId && meta.name === agent && this.tables.ownsSession(sessionId);
  }

  /**
   * A session's frame for the agent, on the current connection (the shell has awaited the agent's
   * initialize, or dialled a dial_out agent). False when it did not reach the agent.
   */
  handOn(sessionId: string, frame: ToAgent): boolean {
    const line = this.ports.agent.current();
    const epoch = this.tables.epoch;
    switch (frame.type) {
      case "request": {
        if (!line) return false;
        // The session's second try of a call whose answer it lost: the request went already.
        if (this.tables.outboundFor(sessionId, frame.gwId)) return true;
        const agentId = this.tables.nextId();
        this.tables.addOutbound({ agentId, epoch, kind: "forward", sessionId, gwId: frame.gwId });
        this.markActive(sessionId, epoch);
        this.ports.alarm.watch();
        const text = JSON.stringify(withParams({ jsonrpc: "2.0", id: agentId, method: frame.method }, frame.params));
        // The edge routes the answer to the session itself, in order with the session's notifications.
        line.send(line.edge ? encodeControl({ t: "request", s: sessionId, id: agentId, text }) : text);
        return true;
      }
      case "notification":
        line?.send(JSON.stringify(withParams({ jsonrpc: "2.0", method: frame.method }, frame.params)));
        return line !== undefined;
      case "response": {
        if (!line || frame.epoch !== epoch) return false;
        const body = agentAnswer(frame);
        // The edge keeps its connection's open requests and sends each one answer, whichever way
        // it came (the session's edge link, or this object: a second try after that link failed).
        if (line.edge) {
          line.send(encodeControl({ t: "answer", s: sessionId, id: frame.id, text: JSON.stringify(body) }));
          stage("agent.out", body);
          return true;
        }
        // Each request of the agent is answered once: a second try finds it answered already.
        if (!this.takeInbound(frame.id, epoch, sessionId)) return true;
        line.send(JSON.stringify(body));
        stage("agent.out", body);
        return true;
      }
      case "cancel_request": {
        const outbound = this.tables.outboundFor(sessionId, frame.gwId);
        if (line && outbound && outbound.epoch === epoch) {
          line.send(JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: outbound.agentId } }));
          return true;
        }
        return false;
      }
    }
  }

  /** A session's request found no connection: it is answered with `error`, in order with the session's other items. */
  unreachable(sessionId: string, gwId: number, error: RpcError): void {
    this.enqueue(sessionId, { kind: "response", gwId, text: JSON.stringify(errorResponse(gwId, error)) });
  }

  /**
   * Whether the session's answer to the agent's request is to be sent now: once per request, by the
   * session the request went to. An instance woken during the epoch sends an answer it has no entry
   * for (the request came before it), and remembers it so a second try is not sent again.
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

  // ── session/new and session/load ────────────────────────────────────────────────────────────
  /** A client's session/new or /load is about to go to the agent: its agent-side id, awaited by the shell. */
  opening(): { agentId: number; epoch: number } {
    const agentId = this.tables.nextId();
    const epoch = this.tables.epoch;
    this.tables.addOutbound({ agentId, epoch, kind: "open", sessionId: null, gwId: null });
    return { agentId, epoch };
  }

  /** The shell stopped waiting for that answer (refused before it was sent, or timed out). */
  openAbandoned(agentId: number): void {
    this.tables.takeOutbound(agentId);
  }

  /** The agent created or loaded `sessionId` on connection `epoch`, and the session is set up: it is the agent's. */
  sessionOpened(sessionId: string, epoch: number): void {
    this.tables.addSession(sessionId, epoch);
    this.markedActive.add(`${epoch}:${sessionId}`);
  }

  // ── deliveries to the sessions ──────────────────────────────────────────────────────────────
  private enqueue(sessionId: string, item: SessionItem): void {
    this.outbox.add(sessionId, item);
    this.sendBatch(sessionId);
  }

  /**
   * Frames for a session are delivered in batches under load: while a delivery to the session is in
   * flight, what the agent sends for it waits and then goes in one, which the session handles as one
   * event with one storage commit. A frame that finds nothing in flight goes at once, so a quiet
   * session pays no added latency. Order is kept: frames, answers and the agent's departure share one
   * queue per session, one delivery at a time.
   */
  private sendBatch(sessionId: string): void {
    if (this.inFlight.has(sessionId) || !this.tables.meta) return;
    const waiting = this.outbox.pendingFor(sessionId);
    // One delivery stays well under the RPC message limit (32 MiB): what does not fit goes in the next.
    const items = waiting.slice(0, batchPrefix(waiting, MAX_BATCH_BYTES));
    const last = items.at(-1)?.seq;
    if (last === undefined) return;
    this.inFlight.set(sessionId, last);
    this.ports.sessions.deliver(sessionId, items);
  }

  /** The delivery under way to the session was applied. */
  delivered(sessionId: string, items: readonly Stamped[]): void {
    const last = this.inFlight.get(sessionId);
    if (last === undefined) return;
    this.outbox.delivered(sessionId, last);
    for (const item of items) if (item.kind === "response" && item.agentId !== undefined) this.tables.takeOutbound(item.agentId);
    this.inFlight.delete(sessionId);
    this.sendBatch(sessionId);
    this.maybeGrant(sessionId);
  }

  /** The delivery under way to the session may not have been applied: it waits in the table for the alarm. */
  deliveryFailed(sessionId: string): void {
    const last = this.inFlight.get(sessionId);
    if (last === undefined) return;
    if (this.outbox.failed(sessionId, last)) {
      this.log("error", "agent.delivery_abandoned", "gave up delivering to a session after repeated failures", { sessionId });
    } else this.ports.alarm.redeliverSoon();
    this.inFlight.delete(sessionId);
  }

  /** The alarm: what sessions have not taken goes again (after a restart nothing is in flight, so all of it). */
  alarm(): void {
    for (const sessionId of this.outbox.sessions()) this.sendBatch(sessionId);
    if (!this.outbox.isEmpty()) this.ports.alarm.redeliverSoon();
    if (this.tables.awaitsAgent()) this.ports.alarm.watch();
  }

  /**
   * The edge may deliver the session's notifications itself once everything it sent for the session
   * through this object has been applied: nothing of the session is queued here or in flight. The
   * grant names the count it covers, so the edge takes it only if it sent nothing since.
   */
  private maybeGrant(sessionId: string): void {
    const c = this.edgeCounts.get(sessionId);
    const line = this.ports.agent.current();
    if (c === undefined || !line?.edge) return;
    if (this.inFlight.has(sessionId) || this.outbox.pendingFor(sessionId).length > 0 || !this.tables.ownsSession(sessionId)) return;
    this.edgeCounts.delete(sessionId);
    this.sendGrant(line, sessionId, c);
  }

  private sendGrant(line: AgentLine, sessionId: string, c: number): void {
    const { from, to } = this.outbox.reserveRange(GRANT_NUMBERS);
    try {
      line.send(encodeControl({ t: "grant", s: sessionId, c, from, to, epoch: this.tables.epoch }));
    } catch {
      // closing: the edge is going too
    }
  }

  private markActive(sessionId: string, epoch: number): void {
    const key = `${epoch}:${sessionId}`;
    if (this.markedActive.has(key)) return;
    this.tables.markActive(sessionId, epoch);
    this.markedActive.add(key);
  }

  /** A log line carrying this agent's tenant and name (core/log.ts). */
  private log(level: LogLevel, event: string, msg: string, context: LogContext = {}): void {
    const meta = this.tables.meta;
    log(level, event, msg, { tenantId: meta?.tenantId, agent: meta?.name, ...context });
  }
}

/** Keeps the newest `kept` entries of a Set or Map (both iterate in insertion order). */
export function dropOldest(entries: { size: number; keys(): Iterator<string>; delete(key: string): boolean }, kept: number): void {
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
    { method, reason: "gateway_namespace" },
  );
}
