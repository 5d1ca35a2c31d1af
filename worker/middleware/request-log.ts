// One log line per HTTP request the Worker answers (core/log.ts): the route (its pattern, never the
// path itself — approval links carry their token in it), the status, the time taken, the tenant when
// a key or token named one, and a trace id — the request's `traceparent` header's when it sent one,
// else a fresh one — which the response carries back as `X-Trace-Id`, so a person reporting a problem
// can hand the operator the id of the very request.

import { createMiddleware } from "hono/factory";
import { routePath } from "hono/route";
import { log } from "../../core/log";
import { newTraceId, traceIdOfTraceparent } from "../../connection/trace";
import type { AppEnv } from "../types";

const TRACE_ID_HEADER = "X-Trace-Id";

export const requestLog = createMiddleware<AppEnv>(async function requestLogMiddleware(c, next) {
  const traceId = traceIdOfTraceparent(c.req.header("traceparent")) ?? newTraceId();
  c.set("traceId", traceId);
  const started = Date.now();
  await next();
  const status = c.res.status;
  if (status !== 101) {
    try {
      c.res.headers.set(TRACE_ID_HEADER, traceId);
    } catch {
      // a response whose headers are immutable (an asset fetched through): the log line still has it
    }
  }
  const principal = c.get("principal");
  log(status >= 500 ? "error" : "info", "http.request", `${c.req.method} ${routePath(c, -1)} ${status}`, {
    traceId,
    method: c.req.method,
    route: routePath(c, -1),
    status,
    ms: Date.now() - started,
    tenantId: principal?.tenantId,
    keyId: principal?.keyId,
  });
});
