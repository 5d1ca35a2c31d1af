// Middleware: the operator's bootstrap secret (GATEWAY_ADMIN_TOKEN) for the tenants API.
// Both sides are hashed before the constant-time compare, so their lengths leak nothing either.

import { createMiddleware } from "hono/factory";
import { sha256Hex } from "../../protocol/ids";
import { constantTimeEqual } from "../auth";
import { ApiError } from "../http-error";
import type { AppEnv } from "../types";

export const requireOperator = createMiddleware<AppEnv>(async function requireOperator(c, next) {
  const expected = c.env.GATEWAY_ADMIN_TOKEN;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("Authorization") ?? "");
  if (!expected || !match?.[1] || !constantTimeEqual(await sha256Hex(match[1]), await sha256Hex(expected))) {
    throw ApiError.unauthorized("Operator endpoints need Authorization: Bearer $GATEWAY_ADMIN_TOKEN");
  }
  await next();
});
