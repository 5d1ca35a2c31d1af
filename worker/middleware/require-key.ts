// Middleware factory: resolves the request's API key to a principal and checks the key's kind.
// A missing or bad key is 401; a valid key of the wrong kind is 403.

import { createMiddleware } from "hono/factory";
import { authenticate, presentedKey, touchKey } from "../auth";
import { ApiError } from "../http-error";
import type { AppEnv } from "../types";
import type { KeyKind } from "../../core/principal";

export function requireKey(...kinds: KeyKind[]) {
  if (kinds.length === 0) throw new Error("requireKey needs at least one key kind");
  return createMiddleware<AppEnv>(async function requireKeyMiddleware(c, next) {
    const principal = await authenticate(c.env, presentedKey(c.req.raw));
    if (!principal) throw ApiError.unauthorized();
    if (!kinds.includes(principal.kind)) {
      throw ApiError.forbidden(`This endpoint needs a ${kinds.join(" or ")} key; this one is a ${principal.kind} key`);
    }
    // REST calls are limited per key; WebSocket upgrades are one call per connection.
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
