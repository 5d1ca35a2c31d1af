// One client's connection at the edge: a WebSocket the edge Worker terminated, or a Streamable HTTP
// connection held in its ConnectionObject (durable-objects/connection/http-connection.ts); the
// transport is the sink. A shell: it holds the connection's state and hands each frame to the module
// that decides — the role and mode gate (mode-gate.ts), what the gateway answers itself
// (gateway-answers.ts: initialize, session/new|load|resume|close|list, attach, detach), the sessions'
// sockets (session-sockets.ts), the id rewriting between them and this client
// (protocol/connection-ids.ts), the message rates (tenant-limits.ts) and the key re-check
// (key-recheck.ts). Every other message is relayed as it is to the SessionObject of its sessionId.

import { CLOSE, closeQuietly } from "../core/close-codes";
import type { Env } from "../core/env";
import { log } from "../core/log";
import type { Principal } from "../core/principal";
import { ErrorCode } from "../core/rpc-errors";
import { ConnectionIds } from "../protocol/connection-ids";
import {
  type JsonRpcId,
  type Message,
  RpcError,
  errorResponse,
  isRequest,
  isResponse,
  parseFrame,
  resultResponse,
  sessionIdOf,
  toRpcError,
} from "../protocol/jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST } from "../protocol/methods";
import { type Admission, type RateGate } from "../protocol/rate-limit";
import { readSessionFrame } from "../protocol/session-wire";
import { STREAM_METHODS } from "../protocol/stream-cursor";
import { resumeRequest } from "../protocol/stream-resume";
import { stage, stageTimingFrom } from "../protocol/stage-timing";
import type { ClientSink } from "./client-sink";
import { ConnectionMetrics } from "./connection-metrics";
import { GatewayAnswers, notRoutable } from "./gateway-answers";
import type { GatewayObjects } from "./gateway-objects";
import { DEFAULT_KEY_RECHECK_MS, DEFAULT_KEY_UNVERIFIED_GRACE_MS, KeyRecheck } from "./key-recheck";
import { HOLD, type ModeGateContext, gateNotification, gateRequest } from "./mode-gate";
import { SessionSockets } from "./session-sockets";
import { ConnectionSlot, floodReason, rateGate } from "./tenant-limits";
import { logTracedRequest } from "./trace";

export class ClientConnection {
  /** The sessions' sockets, and who this connection is towards them (its id, its capabilities). */
  private readonly sockets: SessionSockets;
  private readonly answers: GatewayAnswers;
  /** This connection's ids for requests the sessions sent to the client. */
  private readonly ids = new ConnectionIds();
  private closed = false;
  /** ACP's lifecycle: the first message must be initialize (RFD: anything else ends the connection). */
  private initialized = false;
  private readonly recheck: ReturnType<typeof setInterval>;
  private readonly keyCheck: KeyRecheck;
  private readonly rate: RateGate;
  /** This connection's place among its key's connections (connectionsPerKey), freed on close. */
  private readonly slot: ConnectionSlot;
  private readonly metrics: ConnectionMetrics;

  constructor(
    private readonly env: Env,
    /** The gateway's objects, as this layer sees them (durable-objects/objects.ts `gatewayObjects`). */
    objects: GatewayObjects,
    private readonly principal: Principal,
    private readonly agent: string,
    connectionId: string,
    private readonly sink: ClientSink,
  ) {
    this.sockets = new SessionSockets(env.DB, objects, principal, connectionId, {
      frame: (sessionId, text) => this.onSessionFrame(sessionId, text),
      lost: (code, reason) => this.end(code, reason),
    });
    this.answers = new GatewayAnswers({
      env,
      objects,
      principal,
      agent,
      sockets: this.sockets,
      transport: () => this.sink.transport,
      reply: (message) => this.reply(message),
    });
    stageTimingFrom(env);
    const every = Number(env.KEY_RECHECK_MS ?? DEFAULT_KEY_RECHECK_MS);
    this.recheck = setInterval(() => void this.recheckKey(), every > 0 ? every : DEFAULT_KEY_RECHECK_MS);
    this.rate = rateGate(objects, principal.tenantId, principal.settings.limits, "client");
    this.slot = new ConnectionSlot(objects, principal.tenantId, principal.keyId, connectionId);
    this.keyCheck = new KeyRecheck(Number(env.KEY_UNVERIFIED_GRACE_MS ?? DEFAULT_KEY_UNVERIFIED_GRACE_MS));
    this.metrics = new ConnectionMetrics(env.METRICS, principal.tenantId, "client", agent);
  }

  /** The connection's id towards the sessions: its own, or the dropped connection's whose streams it resumed (decision 0050). */
  get connectionId(): string {
    return this.sockets.connId;
  }

  /** One message from the client: a text frame, or an HTTP POST's body (`admitted`: its rate checked already, by admit). */
  receive(data: string | ArrayBuffer, admitted = false): void {
    stage("edge.answer", data);
    if (typeof data !== "string") {
      this.reply(
        errorResponse(null, new RpcError(ErrorCode.invalidRequest, "Binary frames are not supported; send JSON-RPC as text frames")),
      );
      return;
    }
    this.metrics.message();
    void this.onClientFrame(data, admitted).catch((error: unknown) =>
      log("error", "edge.client_frame_failed", "a client frame failed", this.logContext(), error),
    );
  }

  /** Whether this connection is attached to the session (HTTP answers 409 for one it is not). */
  isAttached(sessionId: string): boolean {
    return this.sockets.has(sessionId);
  }

  /** Leaves one session; the session goes on for its other clients. */
  detach(sessionId: string): void {
    void this.sockets.leave(sessionId);
  }

  /** The message rates (the connection's and the tenant's) for one request or notification; HTTP answers a refusal 429. */
  admit(method: string): Admission {
    const admission = this.rate.admit(method);
    if (!admission.ok) this.metrics.refused(admission.error.data.reason);
    return admission;
  }

  /** Settles once the connection's slot among its key's connections is freed (after close). */
  slotReleased(): Promise<void> {
    return this.slot.release();
  }

  /**
   * The connection ends. `resumable`: its sessions keep its streams for a `stream/resume` (a WebSocket
   * that dropped); false lets them go at once (an HTTP connection ended: it resumes in its own
   * ConnectionObject, never at the sessions), and the others learn it left now (decision 0060).
   */
  close(resumable = true): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.recheck);
    this.metrics.close();
    void this.slot.release();
    const [code, reason] = resumable ? [CLOSE.normal, "client gone"] : [CLOSE.detached, "connection ended"];
    this.sockets.close(code, reason);
    this.sink.close(CLOSE.normal, "closed");
  }

  // ── from the client ───────────────────────────────────────────────────────────────────────────
  private async onClientFrame(text: string, admitted: boolean): Promise<void> {
    const parsed = parseFrame(text);
    if (!parsed.ok) {
      if (parsed.reply) this.reply(parsed.reply);
      return;
    }
    const message = parsed.message;
    if (!this.initialized && isRequest(message) && message.method === STREAM_METHODS.resume) {
      return this.resumeStreams(message.id, "params" in message ? message.params : undefined);
    }
    if (!this.initialized) {
      if (!isRequest(message) || message.method !== AGENT_METHODS.initialize) {
        return this.end(CLOSE.protocolError, "the first message must be an initialize request");
      }
      this.initialized = true;
    }
    if (isResponse(message)) return this.onClientResponse(message);
    // A frame waits for the tenant's lease on its way, never refused for it (RateGate admitHeld).
    const held = admitted ? undefined : this.rate.admitHeld(message.method);
    if (held && !this.withinRate(held instanceof Promise ? await held : held, isRequest(message) ? message.id : null)) return;
    try {
      if (isRequest(message)) await this.onClientRequest(message.id, message.method, message, text);
      else await this.onClientNotification(message.method, message, text);
    } catch (error) {
      if (isRequest(message))
        this.reply(
          errorResponse(message.id, toRpcError(error, "edge", "Internal error in the gateway; the session is unharmed, try again")),
        );
    }
  }

  private async onClientRequest(id: JsonRpcId, method: string, message: Message, text: string): Promise<void> {
    const params = "params" in message ? message.params : undefined;
    logTracedRequest(this.logContext(), method, params);
    const gate = await gateRequest(this.gateContext(), method, params);
    if (gate === HOLD) return this.answers.holdModeChange(id, message);
    if (gate) throw gate;
    if (method === AGENT_METHODS.logout) {
      // Ends this connection's authentication only: never relayed (the agent's login is every client's).
      this.reply(resultResponse(id, {}));
      return this.end(CLOSE.normal, "logged out");
    }
    if (await this.answers.answer(id, method, params)) return;
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined) throw notRoutable(method, params);
    const session = await this.sockets.session(sessionId);
    session.send(text);
  }

  private async onClientNotification(method: string, message: Message, text: string): Promise<void> {
    const refusal = await gateNotification(this.gateContext(), method, "params" in message ? message.params : undefined);
    // A notification has no id to answer: the refusal is an error response with id null, so the client still learns why.
    if (refusal) return this.reply(errorResponse(null, refusal));
    if (method === CANCEL_REQUEST) {
      // Only the session that holds the request acts on it; the others find nothing to cancel.
      for (const pending of this.sockets.all()) (await pending).send(text);
      return;
    }
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined) return; // A notification has no answer; one we cannot route is dropped.
    try {
      (await this.sockets.session(sessionId)).send(text);
    } catch {
      // Unknown session: notifications get no error response.
    }
  }

  private onClientResponse(message: Message & { id: JsonRpcId | null }): void {
    const answer = this.ids.toSession(message);
    if (!answer) return; // Answer to a request that was withdrawn, or not ours: nothing to do.
    const session = this.sockets.get(answer.sessionId);
    if (!session) return;
    void session.then((ws) => ws.send(answer.text)).catch(() => undefined);
  }

  /** `stream/resume`, a new socket's first frame in place of initialize (decision 0050; session-sockets.ts `resume`). */
  private async resumeStreams(id: JsonRpcId, params: unknown): Promise<void> {
    const request = resumeRequest(params);
    if (typeof request === "string") return this.reply(errorResponse(id, RpcError.invalidParams(request)));
    // In place of initialize: what the client sends next waits on nothing (a refusal leaves it free to initialize).
    this.initialized = true;
    const { resumed, refused } = await this.sockets.resume(request);
    for (const r of refused) this.send(JSON.stringify({ jsonrpc: "2.0", method: STREAM_METHODS.resumeFailed, params: r }));
    this.reply(resultResponse(id, { connectionId: this.connectionId, resumed, refused }));
  }

  // ── from the sessions ────────────────────────────────────────────────────────────────────────
  private onSessionFrame(sessionId: string, text: string): void {
    stage("edge.in", text);
    const frame = readSessionFrame(text);
    if (frame.kind === "messages") {
      for (const message of frame.texts) this.send(message, sessionId);
      return;
    }
    const rewritten = this.ids.toClient(sessionId, frame.text);
    if (rewritten !== undefined) this.send(rewritten, sessionId);
  }

  /** A revoked or expired key, or a disabled tenant, ends the connection within one interval. */
  private async recheckKey(): Promise<void> {
    if (this.closed) return;
    this.metrics.flushIfDue();
    this.slot.renewIfDue();
    const ending = await this.keyCheck.recheck(this.env, this.principal);
    if (this.closed || !ending) return;
    if (ending.cause === "roleChanged") return this.end(ending.code, ending.reason);
    closeQuietly(this.sink, ending.code, ending.reason);
    this.close();
  }

  // ── plumbing ─────────────────────────────────────────────────────────────────────────────────
  /** Over a message rate: an error for what was refused; a sustained flood closes the connection. */
  private withinRate(admission: Admission, id: JsonRpcId | null): boolean {
    if (admission.ok) return true;
    this.metrics.refused(admission.error.data.reason);
    if (admission.close) this.end(CLOSE.rateExceeded, floodReason(admission.error.data));
    else this.reply({ jsonrpc: "2.0", id, error: admission.error });
    return false;
  }

  private gateContext(): ModeGateContext {
    return { db: this.env.DB, principal: this.principal, agent: this.agent, connectionId: this.connectionId };
  }

  private logContext() {
    return { tenantId: this.principal.tenantId, connectionId: this.connectionId, agent: this.agent };
  }

  private reply(message: object): void {
    const error = (message as { error?: { code?: unknown } }).error;
    if (typeof error?.code === "number") this.metrics.answeredError(error.code);
    this.send(JSON.stringify(message));
  }

  private send(text: string, sessionId?: string): void {
    if (this.closed) return;
    try {
      this.sink.send(text, sessionId);
      stage("edge.out", text);
    } catch {
      this.close();
    }
  }

  /** The gateway ends the connection: the client's transport closes with why, then the connection. */
  private end(code: number, reason: string): void {
    this.sink.close(code, reason);
    this.close();
  }
}
