// Agent registrations of a tenant: dial_in (the agent connects) or dial_out (the gateway dials its url).

import { and, asc, eq, gt, isNull, ne, or } from "drizzle-orm";
import { dbOf } from "../client";
import { type AgentRow, agents, apiKeys } from "../schema";

export type AgentFields = Pick<AgentRow, "description" | "mode" | "url" | "headers" | "isDefault">;

export async function agentByName(d1: D1Database, tenantId: string, name: string): Promise<AgentRow | undefined> {
  return dbOf(d1).query.agents.findFirst({ where: and(eq(agents.tenantId, tenantId), eq(agents.name, name)) });
}

export async function agentsPage(d1: D1Database, tenantId: string, cursor: string | null, limit: number): Promise<AgentRow[]> {
  return dbOf(d1)
    .select()
    .from(agents)
    .where(and(eq(agents.tenantId, tenantId), cursor ? gt(agents.name, cursor) : undefined))
    .orderBy(asc(agents.name))
    .limit(limit + 1);
}

export async function agentNames(d1: D1Database, tenantId: string): Promise<string[]> {
  const rows = await dbOf(d1).select({ name: agents.name }).from(agents).where(eq(agents.tenantId, tenantId));
  return rows.map((r) => r.name);
}

export async function defaultAgentName(d1: D1Database, tenantId: string): Promise<string | undefined> {
  const row = await dbOf(d1).query.agents.findFirst({
    columns: { name: true },
    where: and(eq(agents.tenantId, tenantId), eq(agents.isDefault, true)),
  });
  return row?.name;
}

/** Inserts or updates a registration; making it the default clears the flag on the others, atomically. */
export async function saveAgent(d1: D1Database, tenantId: string, name: string, fields: AgentFields, insert: boolean): Promise<void> {
  const db = dbOf(d1);
  const write = insert
    ? db.insert(agents).values({ tenantId, name, ...fields })
    : db
        .update(agents)
        .set({ ...fields, updatedAt: Date.now() })
        .where(and(eq(agents.tenantId, tenantId), eq(agents.name, name)));
  if (fields.isDefault) {
    await db.batch([
      db
        .update(agents)
        .set({ isDefault: false })
        .where(and(eq(agents.tenantId, tenantId), ne(agents.name, name))),
      write,
    ]);
  } else {
    await write;
  }
}

export async function deleteAgent(d1: D1Database, tenantId: string, name: string): Promise<void> {
  await dbOf(d1)
    .delete(agents)
    .where(and(eq(agents.tenantId, tenantId), eq(agents.name, name)));
}

/** An agent that dials in under a name the tenant has not registered registers it as dial_in. */
export async function registerDialIn(d1: D1Database, tenantId: string, name: string): Promise<void> {
  await dbOf(d1).insert(agents).values({ tenantId, name, mode: "dial_in" }).onConflictDoNothing();
}

/**
 * Who else holds an agent name when a key dials in under it: the name's registration mode, whether
 * another live agent key of the tenant is bound to it, and when the dialling key expires. One round
 * trip (a batch of three reads).
 */
export async function agentNameClaim(
  d1: D1Database,
  tenantId: string,
  name: string,
  keyId: string,
  now: number,
): Promise<{ mode: string | null; boundToOtherKey: boolean; expiresAt: number | null }> {
  const db = dbOf(d1);
  const [registered, bound, key] = await db.batch([
    db
      .select({ mode: agents.mode })
      .from(agents)
      .where(and(eq(agents.tenantId, tenantId), eq(agents.name, name)))
      .limit(1),
    db
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(
        and(
          eq(apiKeys.tenantId, tenantId),
          eq(apiKeys.kind, "agent"),
          eq(apiKeys.agent, name),
          ne(apiKeys.id, keyId),
          isNull(apiKeys.revokedAt),
          or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)),
        ),
      )
      .limit(1),
    db.select({ expiresAt: apiKeys.expiresAt }).from(apiKeys).where(eq(apiKeys.id, keyId)).limit(1),
  ]);
  return { mode: registered[0]?.mode ?? null, boundToOtherKey: bound.length > 0, expiresAt: key[0]?.expiresAt ?? null };
}
