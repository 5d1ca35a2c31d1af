// GET /v1/sessions and GET /v1/sessions/:id — the tenant's sessions, and one session's
// authoritative snapshot from its SessionObject. Another tenant's session is simply not found.

import { Hono } from "hono";
import { ApiError } from "../http-error";
import { requireKey } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { pageParams } from "./pagination";

export const sessionRoutes = new Hono<AppEnv>();

sessionRoutes.get("/v1/sessions", requireKey("client", "admin"), async (c) => {
  const { tenantId } = c.get("principal");
  const { cursor, limit } = pageParams(c.req.query("cursor"), c.req.query("limit"));
  const rows = await c.env.DB.prepare(
    `SELECT session_id, agent, cwd, title, created_by, created_at, updated_at FROM sessions
      WHERE tenant_id = ? AND (? IS NULL OR session_id > ?) ORDER BY session_id LIMIT ?`,
  )
    .bind(tenantId, cursor, cursor, limit + 1)
    .all<{
      session_id: string;
      agent: string;
      cwd: string;
      title: string | null;
      created_by: string | null;
      created_at: number;
      updated_at: number;
    }>();
  const page = rows.results.slice(0, limit);
  return c.json({
    items: page.map((r) => ({
      id: r.session_id,
      agent: r.agent,
      cwd: r.cwd,
      title: r.title,
      createdBy: r.created_by,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
    })),
    nextCursor: rows.results.length > limit ? (page.at(-1)?.session_id ?? null) : null,
  });
});

sessionRoutes.get("/v1/sessions/:id", requireKey("client", "admin"), async (c) => {
  const { tenantId } = c.get("principal");
  const sessionId = c.req.param("id");
  const indexed = await c.env.DB.prepare("SELECT 1 AS found FROM sessions WHERE tenant_id = ? AND session_id = ?")
    .bind(tenantId, sessionId)
    .first();
  if (!indexed) throw ApiError.notFound("Session");
  const stub = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(`${tenantId}/${sessionId}`));
  const snapshot = await stub.snapshot({ tenantId, sessionId });
  if (!snapshot) throw ApiError.notFound("Session");
  return c.json(snapshot);
});
