// GET /v1/metrics — the tenant admin's summary of what the gateway holds for the tenant now: live
// sessions, open client connections, and how its permission requests were resolved in the last hour.
// The rates an operator graphs (messages, refusals by limit, errors by code, delivery lag) are
// written to Analytics Engine (core/metrics.ts) and queried there (docs/OPERATIONS.md).

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { liveSessionCount } from "../../db/queries/sessions";
import { decisionsSince } from "../../db/queries/metrics";
import { objects } from "../../durable-objects/objects";
import { LIVE_SESSION_WINDOW_MS } from "../../protocol/tenant-limits";
import { requireRole } from "../middleware/require-key";
import { json } from "./pagination";
import type { AppEnv } from "../types";
import { errorResponses, validationHook } from "./openapi";

const DECISIONS_WINDOW_MS = 3600_000;

const MetricsSchema = z
  .object({
    at: z.number(),
    liveSessions: z.number().openapi({ description: "Sessions used in the last 24 hours (the liveSessionsPerTenant limit counts these)" }),
    openClientConnections: z
      .number()
      .openapi({ description: "Client connections open under the tenant's keys (WebSocket and Streamable HTTP)" }),
    permissions: z.object({
      windowMs: z.number(),
      resolved: z.number(),
      perMinute: z.number(),
      byDecidedBy: z
        .record(z.string(), z.number())
        .openapi({ description: "rule, person, link, deadline, cancel, turn_end, agent_withdrew, …" }),
      autoAnswered: z.number().openapi({ description: "Resolved by a remembered rule, without a person" }),
    }),
  })
  .openapi("TenantMetrics");

export const metricsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

metricsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/metrics",
    tags: ["metrics"],
    summary: "The tenant's live sessions, open connections and recent permission decisions",
    middleware: [requireRole("administer")] as const,
    responses: {
      200: json(MetricsSchema, "The tenant's summary now"),
      401: errorResponses[401],
      403: errorResponses[403],
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const now = Date.now();
    const [liveSessions, openClientConnections, byDecidedBy] = await Promise.all([
      liveSessionCount(c.env.DB, tenantId, now - LIVE_SESSION_WINDOW_MS),
      objects.tenantLimits(c.env, tenantId).openConnections(),
      decisionsSince(c.env.DB, tenantId, now - DECISIONS_WINDOW_MS),
    ]);
    const resolved = Object.values(byDecidedBy).reduce((sum, n) => sum + n, 0);
    return c.json(
      {
        at: now,
        liveSessions,
        openClientConnections,
        permissions: {
          windowMs: DECISIONS_WINDOW_MS,
          resolved,
          perMinute: Math.round((resolved / (DECISIONS_WINDOW_MS / 60_000)) * 100) / 100,
          byDecidedBy,
          autoAnswered: byDecidedBy.rule ?? 0,
        },
      },
      200,
    );
  },
);
