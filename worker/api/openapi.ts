// What every OpenAPI route of the REST API shares: the error envelope and the validation hook that
// answers an invalid body, query or path with 400 in that envelope.

import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { errorBody } from "../http-error";

const ErrorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) }).openapi("Error");

type HookResult = { success: true } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };

/** defaultHook of every OpenAPIHono app: a failed validation is a 400 in the error envelope. */
export function validationHook(result: HookResult, c: Context) {
  if (result.success) return;
  const message = result.error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.map(String).join(".") || "body"}: ${issue.message}`)
    .join("; ");
  return c.json(errorBody("invalid_request", `Invalid request: ${message}`), 400);
}

const errorOf = (description: string) => ({ description, content: { "application/json": { schema: ErrorSchema } } });

/** The error responses every route documents (409 where a route can conflict). */
export const errorResponses = {
  400: errorOf("Invalid request"),
  401: errorOf("Missing or bad credentials"),
  403: errorOf("A key of the wrong kind"),
  404: errorOf("Not found"),
} as const;
export const conflictResponse = { 409: errorOf("Conflict") } as const;
export const rateLimitedResponse = { 429: errorOf("Too many requests") } as const;
/** A stored-data limit of the tenant (decision 0041): 409 for a count reached, 413 for bytes. */
export const storedLimitResponses = {
  409: errorOf("The tenant's limit on how many it may store is reached (limit_exceeded)"),
  413: errorOf("Over the tenant's byte limit, or one item too large (limit_exceeded)"),
} as const;
