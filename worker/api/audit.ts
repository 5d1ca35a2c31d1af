// GET /v1/audit — how every permission request of the tenant was resolved, newest first.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { requireKey } from "../middleware/require-key";
import { pageOf, pageParams } from "../routes/pagination";
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
      type: z.enum(["person", "link", "rule", "cancel", "deadline", "turn_end", "agent_disconnected", "agent_withdrew"]),
      key: z.string().nullable(),
      user: z.string().nullable(),
      ruleId: z.string().nullable(),
    }),
    at: z.number(),
  })
  .openapi("AuditEntry");

type AuditRow = {
  id: string;
  session_id: string;
  agent: string;
  tool_call_id: string | null;
  kind: string | null;
  name: string | null;
  operation: string | null;
  outcome: "selected" | "cancelled" | "withdrawn";
  option_id: string | null;
  option_kind: string | null;
  decided_by: z.infer<typeof AuditEntrySchema>["decidedBy"]["type"];
  decided_by_key: string | null;
  decided_by_user: string | null;
  rule_id: string | null;
  at: number;
};

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
      200: {
        description: "A page of entries",
        content: { "application/json": { schema: z.object({ items: z.array(AuditEntrySchema), nextCursor: z.string().nullable() }) } },
      },
      400: errorResponses[400],
      401: errorResponses[401],
      403: errorResponses[403],
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const q = c.req.valid("query");
    const { cursor, limit } = pageParams(q.cursor, q.limit);
    // The cursor is "at:id" of the last entry of the previous page.
    const [cursorAt, cursorId] = cursor ? [Number(cursor.split(":")[0]), cursor.split(":").slice(1).join(":")] : [null, null];
    const { results } = await c.env.DB.prepare(
      `SELECT * FROM decision_audit WHERE tenant_id = ?
         AND (?2 IS NULL OR session_id = ?2) AND (?3 IS NULL OR agent = ?3) AND (?4 IS NULL OR decided_by = ?4)
         AND (?5 IS NULL OR rule_id = ?5) AND (?6 IS NULL OR decided_by_user = ?6)
         AND (?7 IS NULL OR at < ?7 OR (at = ?7 AND id < ?8))
       ORDER BY at DESC, id DESC LIMIT ?9`,
    )
      .bind(
        tenantId,
        q.sessionId ?? null,
        q.agent ?? null,
        q.decidedBy ?? null,
        q.ruleId ?? null,
        q.user ?? null,
        cursorAt,
        cursorId,
        limit + 1,
      )
      .all<AuditRow>();
    return c.json(
      pageOf(
        results,
        limit,
        (r) => `${r.at}:${r.id}`,
        (r) => ({
          id: r.id,
          sessionId: r.session_id,
          agent: r.agent,
          toolCallId: r.tool_call_id,
          kind: r.kind,
          name: r.name,
          operation: r.operation,
          outcome: r.outcome,
          optionId: r.option_id,
          optionKind: r.option_kind,
          decidedBy: { type: r.decided_by, key: r.decided_by_key, user: r.decided_by_user, ruleId: r.rule_id },
          at: r.at,
        }),
      ),
      200,
    );
  },
);
