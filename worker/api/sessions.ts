// GET /v1/sessions and GET /v1/sessions/:id — the tenant's sessions, and one session's
// authoritative snapshot from its SessionObject. Another tenant's session is simply not found.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../http-error";
import { requireKey } from "../middleware/require-key";
import { pageOf, pageParams } from "../routes/pagination";
import type { AppEnv } from "../types";
import { errorResponses, validationHook } from "./openapi";

const SessionSchema = z
  .object({
    id: z.string(),
    agent: z.string(),
    cwd: z.string(),
    title: z.string().nullable(),
    createdBy: z.string().nullable(),
    createdAt: z.number(),
    updatedAt: z.number(),
  })
  .openapi("Session");

const SnapshotSchema = z
  .object({
    sessionId: z.string(),
    agent: z.string(),
    cwd: z.string(),
    title: z.string().nullable(),
    createdAt: z.number(),
    turn: z.object({
      state: z.enum(["idle", "running", "cancelling"]),
      startedAt: z.number().optional(),
      user: z.string().nullable().optional(),
    }),
    toolCalls: z.array(z.record(z.string(), z.unknown())),
    pendingPermissions: z.array(
      z.object({
        requestId: z.number(),
        toolCallId: z.string().nullable(),
        toolCall: z.unknown(),
        options: z.unknown(),
        createdAt: z.number(),
        deadlineAt: z.number(),
      }),
    ),
    clients: z.array(z.object({ connectionId: z.string(), user: z.string().nullable(), attachedAt: z.number() })),
    lastSeq: z.number(),
  })
  .openapi("SessionSnapshot");

const errors = errorResponses;

type SessionRow = {
  session_id: string;
  agent: string;
  cwd: string;
  title: string | null;
  created_by: string | null;
  created_at: number;
  updated_at: number;
};

export const sessionsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

sessionsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/sessions",
    tags: ["sessions"],
    summary: "The tenant's sessions",
    middleware: [requireKey("client", "admin")] as const,
    request: { query: z.object({ cursor: z.string().optional(), limit: z.string().optional() }) },
    responses: {
      200: {
        description: "A page of sessions",
        content: { "application/json": { schema: z.object({ items: z.array(SessionSchema), nextCursor: z.string().nullable() }) } },
      },
      ...errors,
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const { results } = await c.env.DB.prepare(
      `SELECT session_id, agent, cwd, title, created_by, created_at, updated_at FROM sessions
        WHERE tenant_id = ?1 AND (?2 IS NULL OR session_id > ?2) ORDER BY session_id LIMIT ?3`,
    )
      .bind(tenantId, cursor, limit + 1)
      .all<SessionRow>();
    return c.json(
      pageOf(
        results,
        limit,
        (r) => r.session_id,
        (r) => ({
          id: r.session_id,
          agent: r.agent,
          cwd: r.cwd,
          title: r.title,
          createdBy: r.created_by,
          createdAt: r.created_at,
          updatedAt: r.updated_at,
        }),
      ),
      200,
    );
  },
);

sessionsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/sessions/{id}",
    tags: ["sessions"],
    summary: "One session's live snapshot: turn, tool calls, pending permission requests, attached clients",
    middleware: [requireKey("client", "admin")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: { 200: { description: "The snapshot", content: { "application/json": { schema: SnapshotSchema } } }, ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const sessionId = c.req.valid("param").id;
    const indexed = await c.env.DB.prepare("SELECT 1 AS found FROM sessions WHERE tenant_id = ? AND session_id = ?")
      .bind(tenantId, sessionId)
      .first();
    if (!indexed) throw ApiError.notFound("Session");
    const stub = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(`${tenantId}/${sessionId}`));
    const snapshot = await stub.snapshot({ tenantId, sessionId });
    if (!snapshot) throw ApiError.notFound("Session");
    // SAFETY: the snapshot is the object SnapshotSchema describes, built by SessionObject.snapshot.
    return c.json(snapshot as unknown as z.infer<typeof SnapshotSchema>, 200);
  },
);
