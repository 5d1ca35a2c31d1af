// The tenant's sessions index: answers session/list and GET /v1/sessions without waking objects.

import { and, asc, count, desc, eq, gt, lt, sql } from "drizzle-orm";
import { dbOf } from "../client";
import { type SessionRow, sessions } from "../schema";

export async function sessionIndexed(d1: D1Database, tenantId: string, sessionId: string): Promise<boolean> {
  const row = await dbOf(d1).query.sessions.findFirst({
    columns: { sessionId: true },
    where: and(eq(sessions.tenantId, tenantId), eq(sessions.sessionId, sessionId)),
  });
  return row !== undefined;
}

/** A page by session id (the REST API). */
export async function sessionsPage(d1: D1Database, tenantId: string, cursor: string | null, limit: number): Promise<SessionRow[]> {
  return dbOf(d1)
    .select()
    .from(sessions)
    .where(and(eq(sessions.tenantId, tenantId), cursor ? gt(sessions.sessionId, cursor) : undefined))
    .orderBy(asc(sessions.sessionId))
    .limit(limit + 1);
}

/** The tenant's sessions whose published state has requests waiting on people (GET /v1/approvals?waiting=me), oldest activity first. */
export async function sessionsWaiting(d1: D1Database, tenantId: string, limit: number): Promise<SessionRow[]> {
  return dbOf(d1)
    .select()
    .from(sessions)
    .where(and(eq(sessions.tenantId, tenantId), gt(sessions.waiting, 0)))
    .orderBy(asc(sessions.updatedAt))
    .limit(limit);
}

/** An agent's sessions, most recently active first (session/list), optionally in one cwd. */
export async function recentSessionsOfAgent(
  d1: D1Database,
  q: { tenantId: string; agent: string; cwd: string | null; updatedBefore: number; limit: number },
): Promise<SessionRow[]> {
  return dbOf(d1)
    .select()
    .from(sessions)
    .where(
      and(
        eq(sessions.tenantId, q.tenantId),
        eq(sessions.agent, q.agent),
        q.cwd !== null ? eq(sessions.cwd, q.cwd) : undefined,
        lt(sessions.updatedAt, q.updatedBefore),
      ),
    )
    .orderBy(desc(sessions.updatedAt))
    .limit(q.limit + 1);
}

export async function touchSession(
  d1: D1Database,
  tenantId: string,
  sessionId: string,
  patch: { updatedAt: number; title?: string },
): Promise<void> {
  await dbOf(d1)
    .update(sessions)
    .set(patch)
    .where(and(eq(sessions.tenantId, tenantId), eq(sessions.sessionId, sessionId)));
}

/**
 * The session's live state (session/live-index.ts), kept only over an older version: a write that
 * lands late (its instance gone, a newer one written since) changes nothing.
 */
export async function publishLiveState(
  d1: D1Database,
  tenantId: string,
  sessionId: string,
  state: { updatedAt: number; turnState: string; waiting: number; liveVersion: number },
): Promise<void> {
  await dbOf(d1)
    .update(sessions)
    .set(state)
    .where(and(eq(sessions.tenantId, tenantId), eq(sessions.sessionId, sessionId), lt(sessions.liveVersion, state.liveVersion)));
}

/** session/delete: the session leaves the tenant's index (session/list, session/load, the REST API). */
export async function deleteSessionIndex(d1: D1Database, tenantId: string, sessionId: string): Promise<void> {
  await dbOf(d1)
    .delete(sessions)
    .where(and(eq(sessions.tenantId, tenantId), eq(sessions.sessionId, sessionId)));
}

/** How many of a tenant's sessions were active since `since` (the live-sessions limit). */
export async function liveSessionCount(d1: D1Database, tenantId: string, since: number): Promise<number> {
  const [row] = await dbOf(d1)
    .select({ n: count() })
    .from(sessions)
    .where(and(eq(sessions.tenantId, tenantId), gt(sessions.updatedAt, since)));
  return row?.n ?? 0;
}

/** The agent a session id belongs to in the tenant's index, if the tenant holds it. */
export async function sessionOwner(d1: D1Database, tenantId: string, sessionId: string): Promise<string | undefined> {
  const row = await dbOf(d1).query.sessions.findFirst({
    columns: { agent: true },
    where: and(eq(sessions.tenantId, tenantId), eq(sessions.sessionId, sessionId)),
  });
  return row?.agent;
}

/** Indexes a session; an existing row is only touched for its own agent (never re-assigned). */
export async function indexSession(
  d1: D1Database,
  row: { tenantId: string; sessionId: string; agent: string; cwd: string; createdBy: string | null },
): Promise<void> {
  await dbOf(d1)
    .insert(sessions)
    .values(row)
    .onConflictDoUpdate({
      target: [sessions.tenantId, sessions.sessionId],
      set: { updatedAt: sql`unixepoch() * 1000` },
      setWhere: sql`${sessions.agent} = excluded.agent`,
    });
}
