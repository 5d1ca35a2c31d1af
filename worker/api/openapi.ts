// What every OpenAPI route of the REST API shares: the error envelope and the validation hook that
// answers an invalid body, query or path with 400 in that envelope.

import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { errorBody } from "../http-error";

export const ErrorSchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) }).openapi("Error");

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
