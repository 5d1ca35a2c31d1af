// JSON-RPC 2.0 as ACP uses it: one message per frame, no batches.
// The gateway relays messages as parsed objects and re-serialises them with JSON.stringify, which keeps
// every field (unknown ones and `_meta` included); it only ever changes `id` and `requestId`.

import { ErrorCode } from "../core/rpc-errors";
import { MAX_FRAME_BYTES as MAX_LIMITED_FRAME_BYTES, MAX_JSON_DEPTH, checkFrameLimits } from "./limits";
import { log } from "../core/log";

export type JsonRpcId = string | number;

export type JsonObject = { [key: string]: unknown };

export interface RequestMessage {
  jsonrpc: "2.0";
  id: JsonRpcId;
  method: string;
  params?: unknown;
}
interface NotificationMessage {
  jsonrpc: "2.0";
  method: string;
  params?: unknown;
}
export interface ResponseMessage {
  jsonrpc: "2.0";
  id: JsonRpcId | null;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}
export type Message = RequestMessage | NotificationMessage | ResponseMessage;

/** The one JSON-RPC error type: thrown anywhere, turned into a response by `errorResponse`. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
  static invalidParams(message: string, data?: unknown) {
    return new RpcError(ErrorCode.invalidParams, message, data);
  }
  static methodNotFound(method: string) {
    return new RpcError(ErrorCode.methodNotFound, `Method not found: ${method}`, { method });
  }
  static sessionNotFound(sessionId: unknown) {
    return new RpcError(ErrorCode.resourceNotFound, `Session not found: ${String(sessionId)}`, { sessionId });
  }
  static internal(message: string, data?: unknown) {
    return new RpcError(ErrorCode.internalError, message, data);
  }
}

/** Any failure as a JSON-RPC error: an RpcError as thrown, anything else logged and hidden behind `message`. */
export function toRpcError(error: unknown, where: string, message: string): RpcError {
  if (error instanceof RpcError) return error;
  log(
    "error",
    `${where}.unexpected_failure`,
    `${where}: an unexpected failure was answered as an internal error`,
    { unexpected: true },
    error,
  );
  return RpcError.internal(message);
}

export function errorResponse(id: JsonRpcId | null, error: RpcError): ResponseMessage {
  const body: ResponseMessage["error"] = { code: error.code, message: error.message };
  if (error.data !== undefined) body.data = error.data;
  return { jsonrpc: "2.0", id, error: body };
}

export function resultResponse(id: JsonRpcId, result: unknown): ResponseMessage {
  return { jsonrpc: "2.0", id, result };
}

/** A JSON-RPC id: a string, or a finite number. */
export function isId(value: unknown): value is JsonRpcId {
  return typeof value === "string" || (typeof value === "number" && Number.isFinite(value));
}

export function isRequest(m: Message): m is RequestMessage {
  return "method" in m && "id" in m && isId((m as RequestMessage).id);
}
export function isResponse(m: Message): m is ResponseMessage {
  return !("method" in m) && "id" in m;
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The JSON object the text holds, or undefined for any other value or text that is not JSON. */
export function parseJsonObject(text: string): JsonObject | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** `params.sessionId` when it is a string, the routing key of every session-scoped message. */
export function sessionIdOf(m: Message): string | undefined {
  if (!("params" in m) || !isObject(m.params)) return undefined;
  const id = m.params.sessionId;
  return typeof id === "string" ? id : undefined;
}

/** Default bound on one frame (see limits.ts for why this figure). */
export const MAX_FRAME_BYTES = MAX_LIMITED_FRAME_BYTES;

export type ParsedFrame = { ok: true; message: Message } | { ok: false; reply: ResponseMessage | null };

/**
 * Parses one text frame into a message, or says what to answer instead.
 * `reply` is null when the frame was a malformed *response*, which must not be answered.
 */
export function parseFrame(text: string, maxBytes = MAX_FRAME_BYTES): ParsedFrame {
  // Size and nesting depth are checked on the text, before JSON.parse ever sees it.
  const limited = checkFrameLimits(text, { maxBytes, maxDepth: MAX_JSON_DEPTH });
  if (!limited.ok) {
    const error = new RpcError(ErrorCode.invalidRequest, limited.message, limited.data);
    if (limited.hasMethod) return { ok: false, reply: errorResponse(limited.id, error) };
    // A refused answer: not answered under its own id (that is the other side's request), but named in data.
    const data = { ...limited.data, requestId: limited.id };
    return { ok: false, reply: errorResponse(null, new RpcError(ErrorCode.invalidRequest, limited.message, data)) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return {
      ok: false,
      reply: errorResponse(null, new RpcError(ErrorCode.parseError, "Parse error: the frame is not valid JSON")),
    };
  }
  const id = isObject(value) && isId(value.id) ? value.id : null;
  if (Array.isArray(value)) {
    return {
      ok: false,
      reply: errorResponse(
        null,
        new RpcError(ErrorCode.invalidRequest, "Invalid request: JSON-RPC batches are not supported by ACP; send one message per frame"),
      ),
    };
  }
  if (!isObject(value) || value.jsonrpc !== "2.0") {
    return {
      ok: false,
      reply: errorResponse(
        id,
        new RpcError(ErrorCode.invalidRequest, 'Invalid request: expected a JSON-RPC 2.0 object with "jsonrpc": "2.0"'),
      ),
    };
  }
  if ("method" in value) {
    if (typeof value.method !== "string") {
      return { ok: false, reply: errorResponse(id, new RpcError(ErrorCode.invalidRequest, "Invalid request: method must be a string")) };
    }
    if ("id" in value && !isId(value.id)) {
      return {
        ok: false,
        reply: errorResponse(null, new RpcError(ErrorCode.invalidRequest, "Invalid request: id must be a string or a number")),
      };
    }
    if ("params" in value && value.params !== undefined && typeof value.params !== "object") {
      return { ok: false, reply: errorResponse(id, RpcError.invalidParams("Invalid params: params must be an object or an array")) };
    }
    // SAFETY: shape checked above: jsonrpc, a string method, an optional valid id.
    return { ok: true, message: value as unknown as Message };
  }
  if ("id" in value && ("result" in value || "error" in value)) {
    // SAFETY: a response: an id with a result or an error.
    return { ok: true, message: value as unknown as ResponseMessage };
  }
  return {
    ok: false,
    reply: errorResponse(id, new RpcError(ErrorCode.invalidRequest, "Invalid request: neither a request, a notification nor a response")),
  };
}
