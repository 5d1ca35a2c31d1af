// One Streamable HTTP client connection, held in its ConnectionObject: the same ClientConnection the
// WebSocket path runs, with a sink that routes each outgoing message to an SSE stream. A session's
// messages, and answers to requests that named a session (Acp-Session-Id), go to that session's
// stream; the rest (answers to initialize-less requests such as session/new and session/list) go to
// the connection's stream.

import { isObject, type JsonRpcId } from "../../protocol/jsonrpc";
import { AGENT_METHODS } from "../../protocol/methods";
import { ATTACH_METHODS } from "../../protocol/session-attach";
import { ClientConnection } from "../../connection/client-connection";
import type { ClientSink } from "../../connection/client-sink";
import type { Env } from "../../core/env";
import type { PostOutcome, PostedMessage } from "./contract";
import { type Opened, OutboundStream, type StreamLimits } from "./outbound-stream";
import { STREAM_METHODS, type ResumeRefusal, type TransportCapability } from "../../protocol/stream-cursor";
import { turnStateMeta } from "../../protocol/turn-state";
import type { Principal } from "../../core/principal";
import { gatewayObjects, objects } from "../objects";
import { Pending } from "../pending";

/** Requests whose answers are routed by the session they named; bounded, oldest forgotten first. */
const ROUTED_REQUESTS_MEMORY = 256;
/** Session streams one connection may hold. */
const MAX_SESSION_STREAMS = 256;
/** How long initialize may take before the POST fails. */
const INITIALIZE_TIMEOUT_MS = 30_000;

/** Methods that (re-)attach a session: allowed on a session the connection does not hold. */
const REATTACH_METHODS: ReadonlySet<string> = new Set([AGENT_METHODS.sessionLoad, AGENT_METHODS.sessionResume, ATTACH_METHODS.attach]);

export type StreamOutcome = { body: ReadableStream<Uint8Array> } | { status: 409; message: string; reason?: ResumeRefusal };

/** The 409's body for a resume refused (the draft RFD: never a live stream that skips what was missed). */
const REFUSED: Record<Exclude<Opened, { ok: true }>["reason"], string> = {
  busy: "This stream already has a reader; one reader per stream",
  unknown_cursor:
    "Last-Event-ID is not a cursor of this stream (another stream's, or not one the gateway issued): nothing was resumed; re-attach with session/load",
  expired_cursor:
    "The gateway no longer holds the messages after this Last-Event-ID (past the retention window): nothing was resumed; re-attach with session/load",
};

export class HttpConnection implements ClientSink {
  private readonly client: ClientConnection;
  private readonly connectionStream: OutboundStream;
  private readonly sessionStreams = new Map<string, OutboundStream>();
  /** Sessions whose stream overflowed: detached, and answered 409 until session/load or session/resume. */
  private readonly lost = new Set<string>();
  private readonly routedRequests = new Map<string, string>();
  /** The initialize under way (by its id as JSON), answered by the connection's answer to it. */
  private readonly awaitingInitialize = new Pending<string, null, string>(INITIALIZE_TIMEOUT_MS);
  private ended = false;

  constructor(
    private readonly env: Env,
    private readonly principal: Principal,
    agent: string,
    readonly connectionId: string,
    private readonly limits: StreamLimits,
    private readonly onEnd: (reason: string) => void,
  ) {
    this.client = new ClientConnection(env, gatewayObjects(env), principal, agent, connectionId, this);
    this.connectionStream = new OutboundStream(limits, () => this.end("no reader on the connection stream within the window"), true);
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Runs initialize through the connection and returns its answer, for the POST's body. */
  initialize(text: string, id: JsonRpcId): Promise<string> {
    return new Promise((resolve, reject) => {
      const added = this.awaitingInitialize.add(JSON.stringify(id), null, (outcome) => {
        if (outcome.kind === "answered") resolve(outcome.value);
        else if (outcome.kind === "timedOut") reject(new Error("initialize timed out"));
        else reject(new Error(`the connection ended (${outcome.reason}) before initialize was answered`));
      });
      if (!added) return reject(new Error("an initialize with this id is under way already"));
      this.client.receive(text);
    });
  }

  /** A POSTed message (not initialize). `sessionId` is the Acp-Session-Id header. */
  post(text: string, message: PostedMessage, sessionId: string | undefined): PostOutcome {
    if (sessionId !== undefined) {
      const reattaching = message.method !== undefined && REATTACH_METHODS.has(message.method);
      if (reattaching) this.lost.delete(sessionId);
      else if (!this.client.isAttached(sessionId)) {
        return { status: 409, message: `This connection is not attached to session ${sessionId}; re-attach with session/load` };
      }
    }
    // The same message rates as a WebSocket (answers to the gateway's requests are not counted); refused with 429, never closed.
    if (message.method !== undefined) {
      const admission = this.client.admit(message.method);
      if (!admission.ok) return { status: 429, error: admission.error, retryAfterMs: admission.retryAfterMs };
    }
    if (sessionId !== undefined && message.isRequest && message.id !== undefined) this.routeAnswer(message.id, sessionId);
    this.client.receive(text, true);
    return { status: 202 };
  }

  /** Settles once the connection's slot among its key's connections is freed (after end). */
  slotReleased(): Promise<void> {
    return this.client.slotReleased();
  }

  /**
   * A reader for the connection's stream (no session) or a session's; with `lastEventId` (a cursor of
   * that stream) a resume: the messages after it, then `stream/resumed` with the turn's state, then live.
   */
  async openStream(sessionId: string | undefined, lastEventId?: string): Promise<StreamOutcome> {
    if (sessionId !== undefined && this.lost.delete(sessionId)) {
      return {
        status: 409,
        message: `Messages of session ${sessionId} were lost past the reconnect window; re-attach with session/load`,
        reason: "expired_cursor",
      };
    }
    // Read before the stream opens: once it is open, replay, acknowledgement and live follow in one synchronous step.
    const turn = lastEventId !== undefined && sessionId !== undefined ? await this.turnState(sessionId) : undefined;
    const stream = sessionId === undefined ? this.connectionStream : this.sessionStream(sessionId);
    if (!stream) return { status: 409, message: `Too many session streams on this connection (${MAX_SESSION_STREAMS})` };
    const opened = stream.open(lastEventId, () =>
      JSON.stringify({
        jsonrpc: "2.0",
        method: STREAM_METHODS.resumed,
        params: { ...(sessionId ? { sessionId } : {}), _meta: turnStateMeta(turn) },
      }),
    );
    if (!opened.ok) return { status: 409, message: REFUSED[opened.reason], reason: opened.reason };
    return { body: opened.body };
  }

  /** What `initialize` advertises of this transport (decision 0050): the window a resume can cover, the keepalive. */
  get transport(): TransportCapability {
    return {
      resumable: { retentionMessages: this.limits.maxMessages, retentionSeconds: Math.floor(this.limits.windowMs / 1000) },
      keepaliveSeconds: this.limits.keepaliveMs / 1000,
    };
  }

  private async turnState(sessionId: string) {
    // A session the client may not see (another tenant's cannot be named: the stub is by this tenant's name) tells nothing.
    if (!this.client.isAttached(sessionId)) return undefined;
    return (
      (await objects
        .session(this.env, this.principal.tenantId, sessionId)
        .turnState(this.connectionId)
        .catch(() => null)) ?? undefined
    );
  }

  /** DELETE, a revoked key, an unread connection stream: the connection ends and its sessions go on without it. */
  end(reason = "closed"): void {
    if (this.ended) return;
    this.ended = true;
    this.client.close(false);
    this.connectionStream.end();
    for (const stream of this.sessionStreams.values()) stream.end();
    this.sessionStreams.clear();
    this.awaitingInitialize.closeAll(reason);
    this.onEnd(reason);
  }

  // ── ClientSink ────────────────────────────────────────────────────────────────────────────────
  send(text: string, sessionId?: string): void {
    if (this.ended) return;
    if (sessionId !== undefined) {
      this.toSession(sessionId, text);
      return;
    }
    const message = parseOutgoing(text);
    const key = message?.id !== undefined && message.method === undefined ? JSON.stringify(message.id) : undefined;
    if (key !== undefined && this.awaitingInitialize.answer(key, text)) return;
    const routed = key !== undefined ? this.routedRequests.get(key) : undefined;
    if (key !== undefined) this.routedRequests.delete(key);
    if (routed !== undefined) this.toSession(routed, text);
    else this.connectionStream.push(text);
  }

  close(_code: number, reason: string): void {
    this.end(reason);
  }

  // ── plumbing ──────────────────────────────────────────────────────────────────────────────────
  private toSession(sessionId: string, text: string): void {
    if (this.lost.has(sessionId)) return; // detached already; the client re-attaches with session/load
    this.sessionStream(sessionId)?.push(text);
  }

  private sessionStream(sessionId: string): OutboundStream | undefined {
    const existing = this.sessionStreams.get(sessionId);
    if (existing) return existing;
    if (this.sessionStreams.size >= MAX_SESSION_STREAMS) return undefined;
    const stream = new OutboundStream(this.limits, () => this.loseSession(sessionId, stream));
    this.sessionStreams.set(sessionId, stream);
    return stream;
  }

  /** Past the window, a session's stream is given up: the client must re-attach to see the session again. */
  private loseSession(sessionId: string, stream: OutboundStream): void {
    if (this.sessionStreams.get(sessionId) === stream) this.sessionStreams.delete(sessionId);
    this.lost.add(sessionId);
    this.client.detach(sessionId);
  }

  private routeAnswer(id: JsonRpcId, sessionId: string): void {
    this.routedRequests.set(JSON.stringify(id), sessionId);
    if (this.routedRequests.size > ROUTED_REQUESTS_MEMORY) {
      const oldest = this.routedRequests.keys().next().value;
      if (oldest !== undefined) this.routedRequests.delete(oldest);
    }
  }
}

function parseOutgoing(text: string): { id?: JsonRpcId; method?: string } | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (!isObject(value)) return undefined;
    const id = typeof value.id === "string" || typeof value.id === "number" ? value.id : undefined;
    return { id, method: typeof value.method === "string" ? value.method : undefined };
  } catch {
    return undefined;
  }
}
