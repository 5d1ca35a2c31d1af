// W3C trace context: from ACP's `_meta.traceparent` on a message, or the `traceparent` header on an
// HTTP request. The gateway relays `_meta` untouched, so the agent receives the client's trace
// context as sent; the gateway's own log lines carry the trace id so they join the client's trace.

import { type LogContext, log } from "../core/log";
import { isObject } from "../protocol/jsonrpc";

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The trace id of a `traceparent` value, or undefined when it is malformed (or all zeros). */
export function traceIdOfTraceparent(traceparent: unknown): string | undefined {
  if (typeof traceparent !== "string") return undefined;
  const traceId = TRACEPARENT.exec(traceparent.trim().toLowerCase())?.[1];
  return traceId && !/^0+$/.test(traceId) ? traceId : undefined;
}

/** The trace id of a message's `params._meta.traceparent`, or undefined when there is none or it is malformed. */
export function traceIdOf(params: unknown): string | undefined {
  const meta = isObject(params) && isObject(params._meta) ? params._meta : undefined;
  return traceIdOfTraceparent(meta?.traceparent);
}

/** A fresh trace id (W3C: 16 random bytes, hex) for a request that brought none. */
export function newTraceId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** One structured log line for a traced client request, so the gateway's logs join the client's trace. */
export function logTracedRequest(context: LogContext, method: string, params: unknown): void {
  const traceId = traceIdOf(params);
  if (traceId) log("info", "acp.client_request", `client request ${method}`, { ...context, method, traceId });
}
