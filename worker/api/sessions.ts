// GET /v1/sessions and GET /v1/sessions/:id — the tenant's sessions, and one session's
// authoritative snapshot from its SessionObject. Another tenant's session is simply not found.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../http-error";
import { sessionIndexed, sessionsPage } from "../../db/queries/sessions";
import { requireRole } from "../middleware/require-key";
import { PageQuery, json, pageOf, pageParams, pageSchema } from "./pagination";
import type { AppEnv } from "../types";
import { errorResponses, validationHook } from "./openapi";
import { objects } from "../../durable-objects/objects";

const SessionSchema = z
  .object({
    id: z.string(),
    agent: z.string(),
    cwd: z.string(),
    title: z.string().nullable(),
    createdBy: z.string().nullable(),
    createdAt: z.number(),
    updatedAt: z.number(),
    /** As the session last published it (durable-objects/session/live-index.ts): a list call needs no object. */
    state: z.object({
      turn: z.enum(["idle", "running", "cancelling"]),
      waiting: z.number().int().describe("Permission requests waiting on a person"),
    }),
  })
  .openapi("Session");

/** Why a session takes no prompt: the tool call its agent ran without asking anyone (decision 0056), or a forbidden mode it switched to (0061). */
const HoldSchema = z
  .union([
    z.object({
      reason: z.literal("ran_unasked"),
      toolCallId: z.string(),
      kind: z.string(),
      command: z.string().optional(),
      changes: z.array(z.string()),
      at: z.number(),
    }),
    // The agent switched itself into a mode the tenant forbids (decision 0061).
    z.object({ reason: z.literal("mode_forbidden"), mode: z.string(), at: z.number() }),
  ])
  .openapi("SessionHold");

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
    held: HoldSchema.optional(),
    modes: z
      .object({
        currentModeId: z.string().nullable(),
        currentGoverned: z.boolean(),
        available: z.array(z.object({ id: z.string(), name: z.string().nullable(), governed: z.boolean() })),
      })
      .nullable()
      .describe("The agent's modes; `governed`: switching to it needs an approver (and four eyes where the tenant holds it)"),
  })
  .openapi("SessionSnapshot");

const errors = errorResponses;

/** The index's turn column as the API shows it (a value this version does not know reads as idle). */
function turnShown(value: string): "idle" | "running" | "cancelling" {
  return value === "running" || value === "cancelling" ? value : "idle";
}

export const sessionsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

sessionsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/sessions",
    tags: ["sessions"],
    summary: "The tenant's sessions",
    middleware: [requireRole("watch")] as const,
    request: { query: PageQuery },
    responses: {
      200: json(pageSchema(SessionSchema), "A page of sessions"),
      ...errors,
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const rows = await sessionsPage(c.env.DB, tenantId, cursor, limit);
    return c.json(
      pageOf(
        rows,
        limit,
        (r) => r.sessionId,
        (r) => ({
          id: r.sessionId,
          agent: r.agent,
          cwd: r.cwd,
          title: r.title,
          createdBy: r.createdBy,
          createdAt: r.createdAt,
          updatedAt: r.updatedAt,
          state: { turn: turnShown(r.turnState), waiting: r.waiting },
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
    middleware: [requireRole("watch")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: { 200: { description: "The snapshot", content: { "application/json": { schema: SnapshotSchema } } }, ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const sessionId = c.req.valid("param").id;
    if (!(await sessionIndexed(c.env.DB, tenantId, sessionId))) throw ApiError.notFound("Session");
    const stub = objects.session(c.env, tenantId, sessionId);
    const snapshot = await stub.snapshot();
    if (!snapshot) throw ApiError.notFound("Session");
    // SAFETY: the snapshot is the object SnapshotSchema describes, built by SessionObject.snapshot.
    return c.json(snapshot as unknown as z.infer<typeof SnapshotSchema>, 200);
  },
);

sessionsApi.openapi(
  createRoute({
    method: "delete",
    path: "/v1/sessions/{id}/hold",
    tags: ["sessions"],
    summary: 'Resume a session stopped after its agent ran a tool call unasked (settings.unaskedRuns "stop"); approvers',
    middleware: [requireRole("oversight")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: {
      200: json(z.object({ resumed: z.boolean().describe("false: the session was not held") }), "The session takes prompts"),
      ...errors,
    },
  }),
  async (c) => {
    const principal = c.get("principal");
    const sessionId = c.req.valid("param").id;
    if (!(await sessionIndexed(c.env.DB, principal.tenantId, sessionId))) throw ApiError.notFound("Session");
    const stub = objects.session(c.env, principal.tenantId, sessionId);
    const done = await stub.resumeHeld({ keyId: principal.keyId, user: principal.person?.name ?? principal.label, role: principal.role });
    if (!done) throw ApiError.notFound("Session");
    return c.json(done, 200);
  },
);
