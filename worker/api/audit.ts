// GET /v1/audit — how every permission request of the tenant was resolved, newest first.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { auditPage } from "../../db/queries/audit";
import { decisionAudit } from "../../db/schema";
import { objects } from "../../durable-objects/objects";
import { limitsOf } from "../../protocol/tenant-limits";
import { requireKey } from "../middleware/require-key";
import { json, pageOf, pageParams, pageSchema } from "./pagination";
import type { AppEnv } from "../types";
import { errorResponses, validationHook } from "./openapi";

const AuditEntrySchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    agent: z.string(),
    toolCallId: z.string().nullable(),
    kind: z.string().nullable(),
    name: z.string().nullable(),
    operation: z.string().nullable(),
    outcome: z.enum(["selected", "cancelled", "withdrawn"]),
    optionId: z.string().nullable(),
    optionKind: z.string().nullable(),
    decidedBy: z.object({
      type: z.enum(decisionAudit.decidedBy.enumValues),
      key: z.string().nullable(),
      user: z.string().nullable(),
      ruleId: z.string().nullable(),
      /** The person who decided, as their identity provider names them (issuer "key": a key issued to a user). */
      person: z.object({ issuer: z.string(), subject: z.string() }).nullable(),
    }),
    at: z.number(),
  })
  .openapi("AuditEntry");

const AuditBudgetSchema = z
  .object({
    bytesPerDay: z.number(),
    spentToday: z.number(),
    exhausted: z.boolean().openapi({
      description: "Today's budget is spent: entries since keep who decided and the operation's length and SHA-256, not its text.",
    }),
    resetsAt: z.number(),
  })
  .openapi("AuditBudget");

export const auditApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

auditApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/audit",
    tags: ["audit"],
    summary: "The decision audit: every permission request's resolution",
    middleware: [requireKey("client", "admin")] as const,
    request: {
      query: z.object({
        sessionId: z.string().optional(),
        agent: z.string().optional(),
        decidedBy: AuditEntrySchema.shape.decidedBy.shape.type.optional(),
        ruleId: z.string().optional(),
        user: z.string().optional(),
        cursor: z.string().optional(),
        limit: z.string().optional(),
      }),
    },
    responses: {
      200: json(
        pageSchema(AuditEntrySchema).extend({ budget: AuditBudgetSchema }),
        "A page of entries, and the tenant's audit budget today",
      ),
      400: errorResponses[400],
      401: errorResponses[401],
      403: errorResponses[403],
    },
  }),
  async (c) => {
    const { tenantId, settings } = c.get("principal");
    const q = c.req.valid("query");
    const { cursor, limit } = pageParams(q.cursor, q.limit);
    // The cursor is "at:id" of the last entry of the previous page.
    const before = cursor ? { at: Number(cursor.split(":")[0]), id: cursor.split(":").slice(1).join(":") } : undefined;
    const rows = await auditPage(c.env.DB, tenantId, {
      ...(q.sessionId !== undefined ? { sessionId: q.sessionId } : {}),
      ...(q.agent !== undefined ? { agent: q.agent } : {}),
      ...(q.decidedBy !== undefined ? { decidedBy: q.decidedBy } : {}),
      ...(q.ruleId !== undefined ? { ruleId: q.ruleId } : {}),
      ...(q.user !== undefined ? { user: q.user } : {}),
      ...(before && Number.isFinite(before.at) ? { before } : {}),
      limit,
    });
    const budget = await objects.tenantLimits(c.env, tenantId).auditBudget(limitsOf(settings.limits).auditBytesPerDay);
    const page = pageOf(
      rows,
      limit,
      (r) => `${r.at}:${r.id}`,
      (r) => ({
        id: r.id,
        sessionId: r.sessionId,
        agent: r.agent,
        toolCallId: r.toolCallId,
        kind: r.kind,
        name: r.name,
        operation: r.operation,
        outcome: r.outcome,
        optionId: r.optionId,
        optionKind: r.optionKind,
        decidedBy: {
          type: r.decidedBy,
          key: r.decidedByKey,
          user: r.decidedByUser,
          ruleId: r.ruleId,
          person:
            r.decidedByIssuer !== null && r.decidedBySubject !== null ? { issuer: r.decidedByIssuer, subject: r.decidedBySubject } : null,
        },
        at: r.at,
      }),
    );
    return c.json({ ...page, budget }, 200);
  },
);
