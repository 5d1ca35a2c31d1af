// Middleware factory: resolves the request's credential (an API key, a person's token, or on /acp a
// ticket; worker/auth.ts) to a principal and checks its kind. A missing or bad credential is 401 with
// the reason; a valid one of the wrong kind is 403.

import { createMiddleware } from "hono/factory";
import { authenticateRequest, touchKey } from "../auth";
import { ApiError } from "../http-error";
import type { AppEnv } from "../types";
import type { KeyKind } from "../../core/principal";

export function requireKey(...kinds: KeyKind[]) {
  if (kinds.length === 0) throw new Error("requireKey needs at least one key kind");
  return createMiddleware<AppEnv>(async function requireKeyMiddleware(c, next) {
    const auth = await authenticateRequest(c.env, c.req.raw);
    if (!auth.ok) throw ApiError.unauthorized(auth.reason);
    const principal = auth.principal;
    if (!kinds.includes(principal.kind)) {
      const what = principal.credential.type === "token" ? "a person's token acts as a client key" : `this one is a ${principal.kind} key`;
      throw ApiError.forbidden(`This endpoint needs a ${kinds.join(" or ")} key; ${what}`);
    }
    // REST calls are limited per key (per person for a token); WebSocket upgrades are one call per connection.
    if (c.env.API_RATE_LIMIT && c.req.path.startsWith("/v1/")) {
      const { success } = await c.env.API_RATE_LIMIT.limit({ key: principal.keyId });
      if (!success) throw new ApiError(429, "rate_limited", "Too many requests for this key; slow down and retry in a minute");
    }
    c.set("principal", principal);
    const touched = touchKey(c.env, principal);
    if (touched) c.executionCtx.waitUntil(touched);
    await next();
  });
}
