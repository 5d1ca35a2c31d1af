// W3C trace context from ACP's `_meta.traceparent`: the gateway relays `_meta` untouched, so the
// agent receives the client's trace context as sent; the edge logs the trace id beside the request.

import { isObject } from "../protocol/jsonrpc";

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The trace id of a message's `params._meta.traceparent`, or undefined when there is none or it is malformed (or all zeros). */
export function traceIdOf(params: unknown): string | undefined {
  const meta = isObject(params) && isObject(params._meta) ? params._meta : undefined;
  const traceparent = meta?.traceparent;
  if (typeof traceparent !== "string") return undefined;
  const traceId = TRACEPARENT.exec(traceparent.trim().toLowerCase())?.[1];
  return traceId && !/^0+$/.test(traceId) ? traceId : undefined;
}

/** One structured log line for a traced client request, so the gateway's logs join the client's trace. */
export function logTracedRequest(connectionId: string, method: string, params: unknown): void {
  const traceId = traceIdOf(params);
  // eslint-disable-next-line no-console -- a deliberate structured log line (Workers Logs), not debugging output
  if (traceId) console.log(JSON.stringify({ event: "client_request", connectionId, method, traceId }));
}
