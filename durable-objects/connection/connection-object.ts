// ConnectionObject: one per Streamable HTTP client connection, named `${tenantId}/${connectionId}`.
// An HTTP connection is many requests (POSTs, SSE GETs, a DELETE) that may each land on a different
// Worker invocation, so its state — the ClientConnection, its session attachments and its SSE
// streams — lives here. The edge Worker authenticates every request and calls in.
//
// The record in storage (who opened it, for which agent, with which initialize) lets a connection
// whose object was evicted come back: it is rebuilt with no sessions attached, so the client's
// session requests are answered 409 and it re-attaches with session/load, as after any loss.

import { DurableObject } from "cloudflare:workers";
import { isObject, type JsonRpcId } from "../../protocol/jsonrpc";
import type { Env } from "../../core/env";
import {
  type ConnectionContract,
  type InitializeOutcome,
  PRINCIPAL_HEADER,
  type PostOutcome,
  type PostedMessage,
  type Unknown,
} from "./contract";
import { HttpConnection } from "./http-connection";
import { DEFAULT_STREAM_LIMITS, type StreamLimits } from "./outbound-stream";
import type { Principal } from "../../core/principal";
import { ErrorCode } from "../../core/rpc-errors";

/** Header on the internal stream request: the session whose stream is asked for. */
const SESSION_HEADER = "Acp-Session-Id";

interface ConnectionRecord {
  tenantId: string;
  keyId: string;
  agent: string;
  connectionId: string;
  initialize: string;
}

/** A connection record outlives its object's eviction this long without a live connection. */
const RECORD_TTL_MS = 24 * 60 * 60 * 1000;

const UNKNOWN: Unknown = { status: 404, message: "Unknown or ended Acp-Connection-Id; start a new connection with initialize" };

export class ConnectionObject extends DurableObject<Env> implements ConnectionContract {
  private live: HttpConnection | undefined;
  private restoring: Promise<HttpConnection | undefined> | undefined;

  /** Opens the connection: runs initialize and answers it. */
  async initialize(principal: Principal, agent: string, connectionId: string, text: string, id: JsonRpcId): Promise<InitializeOutcome> {
    const record: ConnectionRecord = { tenantId: principal.tenantId, keyId: principal.keyId, agent, connectionId, initialize: text };
    await this.ctx.storage.put("connection", record);
    await this.ctx.storage.setAlarm(Date.now() + RECORD_TTL_MS);
    const connection = this.open(principal, record);
    try {
      const answer = await connection.initialize(text, id);
      return { status: 200, answer };
    } catch (error) {
      connection.end("initialize failed");
      const message = error instanceof Error ? error.message : String(error);
      return {
        status: 500,
        answer: JSON.stringify({ jsonrpc: "2.0", id, error: { code: ErrorCode.internalError, message: `Initialize failed: ${message}` } }),
      };
    }
  }

  /** A POSTed message on the connection. */
  async post(principal: Principal, text: string, message: PostedMessage, sessionId: string | undefined): Promise<PostOutcome | Unknown> {
    const connection = await this.connection(principal);
    if (!connection) return UNKNOWN;
    return connection.post(text, message, sessionId);
  }

  /** DELETE: ends the connection. */
  async end(principal: Principal): Promise<{ status: 202 } | Unknown> {
    const connection = await this.connection(principal);
    if (!connection) return UNKNOWN;
    connection.end("closed by the client");
    // The key's slot is free when DELETE answers, so the client may open another connection at once.
    await connection.slotReleased();
    return { status: 202 };
  }

  /** GET: an SSE stream, the connection's or (with Acp-Session-Id) a session's. */
  override async fetch(request: Request): Promise<Response> {
    const principal = parsePrincipal(request.headers.get(PRINCIPAL_HEADER));
    const connection = principal ? await this.connection(principal) : undefined;
    if (!connection) return text(UNKNOWN.status, UNKNOWN.message);
    const outcome = await connection.openStream(
      request.headers.get(SESSION_HEADER) ?? undefined,
      request.headers.get("Last-Event-ID") ?? undefined,
    );
    if (!("body" in outcome)) return text(outcome.status, outcome.message, outcome.reason);
    return new Response(outcome.body, {
      headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no" },
    });
  }

  override async alarm(): Promise<void> {
    // A record left by a connection whose client vanished while the object was evicted.
    if (this.live && !this.live.isEnded) await this.ctx.storage.setAlarm(Date.now() + RECORD_TTL_MS);
    else await this.ctx.storage.deleteAll();
  }

  /** The live connection, rebuilt from its record after an eviction; undefined if unknown, ended or another key's. */
  private async connection(principal: Principal): Promise<HttpConnection | undefined> {
    if (this.live && !this.live.isEnded) return this.owns(principal) ? this.live : undefined;
    this.restoring ??= this.restore(principal).finally(() => {
      this.restoring = undefined;
    });
    const restored = await this.restoring;
    return restored && this.owns(principal) ? restored : undefined;
  }

  private owner: { tenantId: string; keyId: string } | undefined;

  /** Only the key that opened a connection may use it (its connection id is not a credential). */
  private owns(principal: Principal): boolean {
    return this.owner?.tenantId === principal.tenantId && this.owner.keyId === principal.keyId;
  }

  private async restore(principal: Principal): Promise<HttpConnection | undefined> {
    const record = await this.ctx.storage.get<ConnectionRecord>("connection");
    if (!record || record.keyId !== principal.keyId || record.tenantId !== principal.tenantId) return undefined;
    const connection = this.open(principal, record);
    const id = initializeId(record.initialize);
    if (id === undefined) return undefined;
    await connection.initialize(record.initialize, id).catch(() => undefined);
    return connection.isEnded ? undefined : connection;
  }

  private open(principal: Principal, record: ConnectionRecord): HttpConnection {
    this.live?.end("replaced");
    this.owner = { tenantId: record.tenantId, keyId: record.keyId };
    const connection = new HttpConnection(this.env, principal, record.agent, record.connectionId, streamLimits(this.env), () => {
      if (this.live === connection) this.live = undefined;
      this.ctx.waitUntil(this.ctx.storage.deleteAll());
    });
    this.live = connection;
    return connection;
  }
}

function streamLimits(env: Env): StreamLimits {
  const positive = (value: string | undefined, fallback: number) => {
    const n = Number(value);
    return Number.isFinite(n) && n > 0 ? n : fallback;
  };
  return {
    maxMessages: positive(env.HTTP_STREAM_MAX_MESSAGES, DEFAULT_STREAM_LIMITS.maxMessages),
    maxBytes: positive(env.HTTP_STREAM_MAX_BYTES, DEFAULT_STREAM_LIMITS.maxBytes),
    windowMs: positive(env.HTTP_STREAM_WINDOW_MS, DEFAULT_STREAM_LIMITS.windowMs),
    keepaliveMs: positive(env.HTTP_KEEPALIVE_MS, DEFAULT_STREAM_LIMITS.keepaliveMs),
  };
}

function parsePrincipal(header: string | null): Principal | undefined {
  if (!header) return undefined;
  try {
    // SAFETY: the header is set by the edge Worker from an authenticated Principal; clients cannot reach this object.
    return JSON.parse(header) as Principal;
  } catch {
    return undefined;
  }
}

function initializeId(text: string): JsonRpcId | undefined {
  const value: unknown = JSON.parse(text);
  return isObject(value) && (typeof value.id === "string" || typeof value.id === "number") ? value.id : undefined;
}

/** A refusal's body; a resume refused names why in `Acp-Resume-Refused` too (protocol/stream-cursor.ts `ResumeRefusal`). */
function text(status: number, body: string, reason?: string): Response {
  return new Response(body, {
    status,
    headers: { "Content-Type": "text/plain; charset=utf-8", ...(reason ? { "Acp-Resume-Refused": reason } : {}) },
  });
}
