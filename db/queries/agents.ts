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

/**
 * Who holds an agent name when a key dials in under it: the name's registration mode and owning key,
 * whether another live agent key of the tenant is bound to it (api_keys.agent), and when the dialling
 * key expires. One round trip (a batch of three reads).
 */
export async function agentNameClaim(
  d1: D1Database,
  tenantId: string,
  name: string,
  keyId: string,
  now: number,
): Promise<{ mode: string | null; owner: string | null; boundToOtherKey: boolean; expiresAt: number | null }> {
  const db = dbOf(d1);
  const [registered, bound, key] = await db.batch([
    db
      .select({ mode: agents.mode, owner: agents.ownerKeyId })
      .from(agents)
      .where(and(eq(agents.tenantId, tenantId), eq(agents.name, name)))
      .limit(1),
    db
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.agent, name), ne(apiKeys.id, keyId), liveAgentKey(now)))
      .limit(1),
    db.select({ expiresAt: apiKeys.expiresAt }).from(apiKeys).where(eq(apiKeys.id, keyId)).limit(1),
  ]);
  return {
    mode: registered[0]?.mode ?? null,
    owner: registered[0]?.owner ?? null,
    boundToOtherKey: bound.length > 0,
    expiresAt: key[0]?.expiresAt ?? null,
  };
}

const liveAgentKey = (now: number) =>
  and(eq(apiKeys.kind, "agent"), isNull(apiKeys.revokedAt), or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)));

/**
 * A key dials in under a name: registers it as dial_in if the tenant has not, and makes the key its
 * owner if nobody owns it yet (`rebind`: whoever owned it). One atomic batch; answers the name's owner
 * afterwards, so of two keys racing for a new name exactly one finds itself the owner.
 */
export async function claimDialIn(d1: D1Database, tenantId: string, name: string, keyId: string, rebind: boolean): Promise<string | null> {
  const db = dbOf(d1);
  const [, owner] = await db.batch([
    db
      .insert(agents)
      .values({ tenantId, name, mode: "dial_in", ownerKeyId: keyId })
      .onConflictDoUpdate({
        target: [agents.tenantId, agents.name],
        set: { ownerKeyId: keyId },
        setWhere: and(eq(agents.mode, "dial_in"), rebind ? undefined : isNull(agents.ownerKeyId)),
      }),
    db
      .select({ owner: agents.ownerKeyId })
      .from(agents)
      .where(and(eq(agents.tenantId, tenantId), eq(agents.name, name)))
      .limit(1),
  ]);
  return owner[0]?.owner ?? null;
}

/** An admin binds a dial_in name to a key (PUT /v1/agents/{name}/owner). */
export async function setAgentOwner(d1: D1Database, tenantId: string, name: string, keyId: string): Promise<void> {
  await dbOf(d1)
    .update(agents)
    .set({ ownerKeyId: keyId, updatedAt: Date.now() })
    .where(and(eq(agents.tenantId, tenantId), eq(agents.name, name)));
}

/** The live agent keys of the tenant, other than `keyId`, created for this one name (api_keys.agent). */
export async function otherKeysBoundTo(d1: D1Database, tenantId: string, name: string, keyId: string, now: number): Promise<string[]> {
  const rows = await dbOf(d1)
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.agent, name), ne(apiKeys.id, keyId), liveAgentKey(now)));
  return rows.map((r) => r.id);
}

/** What the gateway last saw an agent run without asking anyone (decision 0056); shown by GET /v1/agents. */
export interface DecidesItself {
  at: number;
  sessionId: string;
  toolCallId: string;
  kind: string;
}

/** Notes an unasked run on the agent's row (none for a name with no row). */
export async function noteDecidesItself(d1: D1Database, tenantId: string, name: string, run: DecidesItself): Promise<void> {
  await dbOf(d1)
    .update(agents)
    .set({ decidesItself: JSON.stringify(run) })
    .where(and(eq(agents.tenantId, tenantId), eq(agents.name, name)));
}
