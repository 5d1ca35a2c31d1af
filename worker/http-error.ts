// The one HTTP error type of the REST API and the upgrade routes, and its JSON envelope:
// `{ "error": { "code", "message" } }`. Thrown anywhere; app.onError turns it into the response.

import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { log } from "../core/log";
import { StoredLimitExceeded } from "../db/queries/stored-limits";

export class ApiError extends HTTPException {
  constructor(
    status: ContentfulStatusCode,
    readonly code: string,
    message: string,
  ) {
    super(status, { message });
  }
  static unauthorized(message = "Missing or invalid API key: send Authorization: Bearer <key>") {
    return new ApiError(401, "unauthorized", message);
  }
  static forbidden(message: string) {
    return new ApiError(403, "forbidden", message);
  }
  static notFound(what: string) {
    return new ApiError(404, "not_found", `${what} not found`);
  }
  static badRequest(message: string) {
    return new ApiError(400, "invalid_request", message);
  }
}

export function errorBody(code: string, message: string) {
  return { error: { code, message } };
}

export function onError(error: Error, c: Context): Response {
  if (error instanceof ApiError) return c.json(errorBody(error.code, error.message), error.status);
  // A stored-data limit (rules, notification targets; decision 0041): 409 for a count, 413 for bytes.
  if (error instanceof StoredLimitExceeded) return c.json(errorBody("limit_exceeded", error.message), error.status);
  if (error instanceof HTTPException) return c.json(errorBody("http_error", error.message), error.status);
  log("error", "http.unhandled_error", "an unexpected failure answered 500", { traceId: c.get("traceId"), unexpected: true }, error);
  return c.json(errorBody("internal_error", "Internal error"), 500);
}
