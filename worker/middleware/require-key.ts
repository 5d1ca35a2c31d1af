// Middleware factories: resolve the request's credential (an API key, a person's token, or on /acp a
// ticket; worker/auth.ts) to a principal, then check what it may do. A missing or bad credential is
// 401 with the reason; a valid one that may not do this is 403 naming what it would need.
// `requireKey(kinds)` checks the key's kind (an agent's dial-in); `requireRole(action)` checks a
// client's or administrator's role (decision 0028), whatever its kind.

import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import { authenticateRequest, touchKey } from "../auth";
import { ApiError } from "../http-error";
import type { AppEnv } from "../types";
import type { KeyKind, Principal } from "../../core/principal";
import { type Action, leastRoleFor, may } from "../../protocol/people/roles";

export function requireKey(...kinds: KeyKind[]) {
  if (kinds.length === 0) throw new Error("requireKey needs at least one key kind");
  return createMiddleware<AppEnv>(async function requireKeyMiddleware(c, next) {
    const principal = await authenticated(c);
    if (!kinds.includes(principal.kind)) {
      const what = principal.credential.type === "token" ? "a person's token acts as a client key" : `this one is a ${principal.kind} key`;
      throw ApiError.forbidden(`This endpoint needs a ${kinds.join(" or ")} key; ${what}`);
    }
    await admitted(c, principal);
    await next();
  });
}

/** A client or admin credential whose role may do `action` (protocol/people/roles.ts). */
export function requireRole(action: Action) {
  const least = leastRoleFor(action);
  return createMiddleware<AppEnv>(async function requireRoleMiddleware(c, next) {
    const principal = await authenticated(c);
    if (principal.kind === "agent") throw ApiError.forbidden("This endpoint is for people and their clients; this is an agent key");
    if (!may(principal.role, action)) {
      throw ApiError.forbidden(
        `This needs the role ${least} or higher; ${principal.credential.type === "token" ? "you are" : "this key is"} ${principal.role ?? "without a role"}. Ask a tenant admin for the role.`,
      );
    }
    await admitted(c, principal);
    await next();
  });
}

async function authenticated(c: Context<AppEnv>): Promise<Principal> {
  const auth = await authenticateRequest(c.env, c.req.raw);
  if (!auth.ok) throw ApiError.unauthorized(auth.reason);
  return auth.principal;
}

/** REST calls are limited per key (per person for a token); WebSocket upgrades are one call per connection. */
async function admitted(c: Context<AppEnv>, principal: Principal): Promise<void> {
  if (c.env.API_RATE_LIMIT && c.req.path.startsWith("/v1/")) {
    const { success } = await c.env.API_RATE_LIMIT.limit({ key: principal.keyId });
    if (!success) throw new ApiError(429, "rate_limited", "Too many requests for this key; slow down and retry in a minute");
  }
  c.set("principal", principal);
  const touched = touchKey(c.env, principal);
  if (touched) c.executionCtx.waitUntil(touched);
}
