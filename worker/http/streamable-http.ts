// Streamable HTTP on /acp (the RFD "Streamable HTTP & WebSocket Transport", as the SDK's
// createHttpStream client speaks it): POST carries one client message, GET opens an SSE stream,
// DELETE ends the connection. The key is checked on every request; the connection itself lives in
// a ConnectionObject named `${tenantId}/${connectionId}`, so any Worker invocation can serve it.

import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type JsonRpcId, MAX_FRAME_BYTES, RpcError, errorResponse, isObject } from "../../protocol/jsonrpc";
import { checkFrameLimits } from "../../protocol/limits";
import { AGENT_METHODS } from "../../protocol/methods";
import { PRINCIPAL_HEADER, type PostedMessage } from "../../durable-objects/connection/contract";
import { ApiError } from "../http-error";
import { takeConnectionSlot } from "./connection-slot";
import type { AppEnv } from "../types";
import type { Principal } from "../../core/principal";
import { ErrorCode } from "../../core/rpc-errors";
import { objects } from "../../durable-objects/objects";

const CONNECTION_ID_HEADER = "Acp-Connection-Id";
const SESSION_ID_HEADER = "Acp-Session-Id";

/** Methods that name a session and so must carry Acp-Session-Id (as the SDK's server requires). */
const SESSION_SCOPED_METHODS: ReadonlySet<string> = new Set([
  "session/cancel",
  "session/close",
  "session/delete",
  "session/fork",
  "session/load",
  "session/prompt",
  "session/resume",
  "session/set_config_option",
  "session/set_mode",
  "session/set_model",
]);

const CONNECTION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** POST /acp: initialize opens a connection (200, the answer in the body); anything else is 202 and answered on SSE. */
export async function postMessage(c: Context<AppEnv>, agent: () => Promise<string>): Promise<Response> {
  const contentType = c.req.header("Content-Type")?.split(";")[0]?.trim().toLowerCase();
  if (contentType !== "application/json")
    throw new ApiError(415, "unsupported_media_type", "POST /acp takes one JSON-RPC message as application/json");
  const declared = Number(c.req.header("Content-Length"));
  if (Number.isFinite(declared) && declared > MAX_FRAME_BYTES) {
    const message = `Message too large: ${declared} bytes, the limit is ${MAX_FRAME_BYTES} bytes; send smaller messages`;
    return refused(null, new RpcError(ErrorCode.invalidRequest, message, { reason: "frame_too_large", limit: MAX_FRAME_BYTES }), 413);
  }
  const text = await c.req.text();
  // The same limits as a WebSocket frame (protocol/limits.ts), checked before parsing.
  const limited = checkFrameLimits(text);
  if (!limited.ok) {
    const error = new RpcError(ErrorCode.invalidRequest, limited.message, limited.data);
    return refused(limited.hasMethod ? limited.id : null, error, limited.data.reason === "frame_too_large" ? 413 : 400);
  }
  const parsed = parseMessage(text);
  if ("reply" in parsed) return c.json(parsed.reply, 400);
  const message = parsed.message;
  const principal = c.get("principal");
  const connectionId = c.req.header(CONNECTION_ID_HEADER);

  if (message.method === AGENT_METHODS.initialize && message.isRequest) {
    if (connectionId) throw ApiError.badRequest("initialize opens a new connection: send it without Acp-Connection-Id");
    if (message.id === undefined) throw ApiError.badRequest("initialize is a request: it needs an id");
    const newId = crypto.randomUUID();
    const agentName = await agent();
    await takeConnectionSlot(c.env, principal, newId);
    const outcome = await connectionStub(c, principal, newId).initialize(principal, agentName, newId, text, message.id);
    return new Response(outcome.answer, {
      status: outcome.status,
      headers: { "Content-Type": "application/json", ...(outcome.status === 200 ? { [CONNECTION_ID_HEADER]: newId } : {}) },
    });
  }
  if (!connectionId) throw ApiError.badRequest("Missing Acp-Connection-Id: the first POST of a connection is initialize");
  const sessionId = sessionRoute(c, message);
  const outcome = isConnectionId(connectionId)
    ? await connectionStub(c, principal, connectionId).post(principal, text, message, sessionId)
    : unknownConnection();
  if (outcome.status === 202) return new Response(null, { status: 202 });
  if (outcome.status === 429) {
    // Over a message rate, as on a WebSocket: the JSON-RPC error in the body, and when to retry.
    const retryAfter = String(Math.max(1, Math.ceil(outcome.retryAfterMs / 1000)));
    return Response.json(
      { jsonrpc: "2.0", id: message.id ?? null, error: outcome.error },
      { status: 429, headers: { "Retry-After": retryAfter } },
    );
  }
  throw new ApiError(outcome.status, outcome.status === 404 ? "unknown_connection" : "conflict", outcome.message);
}

/** GET /acp without Upgrade: the connection's SSE stream, or with Acp-Session-Id a session's. */
export async function openStream(c: Context<AppEnv>): Promise<Response> {
  if (!c.req.header("Accept")?.toLowerCase().includes("text/event-stream")) {
    throw new ApiError(406, "not_acceptable", "GET /acp is a WebSocket upgrade, or an SSE stream with Accept: text/event-stream");
  }
  const connectionId = c.req.header(CONNECTION_ID_HEADER);
  if (!connectionId) throw ApiError.badRequest("Missing Acp-Connection-Id: open a connection with POST /acp initialize first");
  if (!isConnectionId(connectionId)) throw new ApiError(404, "unknown_connection", unknownConnection().message);
  const principal = c.get("principal");
  const headers = new Headers({ [PRINCIPAL_HEADER]: JSON.stringify(principal) });
  const sessionId = c.req.header(SESSION_ID_HEADER);
  if (sessionId) headers.set(SESSION_ID_HEADER, sessionId);
  const lastEventId = c.req.header("Last-Event-ID");
  if (lastEventId) headers.set("Last-Event-ID", lastEventId);
  const response = await connectionStub(c, principal, connectionId).fetch("https://connection.internal/stream", { headers });
  if (response.ok) return response;
  // A cursor of a connection the gateway no longer has: the draft RFD refuses the resume with 409, as any other.
  if (response.status === 404 && lastEventId) throw new ApiError(409, "unknown_connection", await response.text());
  const status = response.status as ContentfulStatusCode;
  // A resume refused (decision 0050) says why in its code: unknown_cursor, expired_cursor.
  const refused = response.headers.get("Acp-Resume-Refused");
  throw new ApiError(status, status === 404 ? "unknown_connection" : (refused ?? "conflict"), await response.text());
}

/** DELETE /acp: ends the connection; its sessions go on for their other clients. */
export async function deleteConnection(c: Context<AppEnv>): Promise<Response> {
  const connectionId = c.req.header(CONNECTION_ID_HEADER);
  if (!connectionId) throw ApiError.badRequest("Missing Acp-Connection-Id");
  const principal = c.get("principal");
  const outcome = isConnectionId(connectionId) ? await connectionStub(c, principal, connectionId).end(principal) : unknownConnection();
  if (outcome.status === 202) return new Response(null, { status: 202 });
  throw new ApiError(404, "unknown_connection", outcome.message);
}

// ── plumbing ───────────────────────────────────────────────────────────────────────────────────
function parseMessage(text: string): { message: PostedMessage } | { reply: object } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { reply: errorResponse(null, new RpcError(ErrorCode.parseError, "Parse error: the body is not valid JSON")) };
  }
  if (Array.isArray(value)) {
    return {
      reply: errorResponse(
        null,
        new RpcError(ErrorCode.invalidRequest, "Invalid request: JSON-RPC batches are not supported by ACP; POST one message"),
      ),
    };
  }
  if (!isObject(value) || value.jsonrpc !== "2.0") {
    return {
      reply: errorResponse(
        null,
        new RpcError(ErrorCode.invalidRequest, 'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0"'),
      ),
    };
  }
  const id = typeof value.id === "string" || typeof value.id === "number" ? value.id : undefined;
  const method = typeof value.method === "string" ? value.method : undefined;
  const sessionId = isObject(value.params) && typeof value.params.sessionId === "string" ? value.params.sessionId : undefined;
  return { message: { method, id, isRequest: method !== undefined && id !== undefined, sessionId } };
}

/** The session a message is routed by: Acp-Session-Id, which must agree with params.sessionId. */
function sessionRoute(c: Context<AppEnv>, message: PostedMessage): string | undefined {
  const header = c.req.header(SESSION_ID_HEADER);
  const needsHeader = message.sessionId !== undefined || (message.method !== undefined && SESSION_SCOPED_METHODS.has(message.method));
  if (needsHeader && !header) throw ApiError.badRequest(`Missing Acp-Session-Id: ${message.method ?? "this message"} is session-scoped`);
  if (header && message.sessionId !== undefined && header !== message.sessionId) {
    throw ApiError.badRequest("Acp-Session-Id does not match params.sessionId");
  }
  return header ?? undefined;
}

function connectionStub(c: Context<AppEnv>, principal: Principal, connectionId: string) {
  return objects.connection(c.env, principal.tenantId, connectionId);
}

function isConnectionId(value: string): boolean {
  return CONNECTION_ID.test(value);
}

function unknownConnection(): { status: 404; message: string } {
  return { status: 404, message: "Unknown or ended Acp-Connection-Id; start a new connection with initialize" };
}

function refused(id: JsonRpcId | null, error: RpcError, status: 400 | 413): Response {
  return Response.json(errorResponse(id, error), { status });
}
