// API keys of a tenant. Secrets are never stored: only their SHA-256 and a short prefix.

import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { MintedKey } from "../../protocol/api-keys";
import { dbOf } from "../client";
import { type ApiKey, apiKeys, tenants } from "../schema";
import type { KeyKind } from "../../core/principal";

export type KeyListing = Omit<ApiKey, "tenantId" | "hash">;

export async function insertKey(
  d1: D1Database,
  tenantId: string,
  minted: MintedKey,
  k: { kind: KeyKind; label?: string | null; agent?: string | null; user?: string | null; role?: string | null; expiresAt?: number | null },
): Promise<void> {
  await dbOf(d1)
    .insert(apiKeys)
    .values({
      id: minted.id,
      tenantId,
      kind: k.kind,
      label: k.label ?? null,
      agent: k.agent ?? null,
      user: k.user ?? null,
      role: k.role ?? null,
      prefix: minted.prefix,
      hash: minted.hash,
      expiresAt: k.expiresAt ?? null,
    });
}

export async function keysPage(d1: D1Database, tenantId: string, cursor: string | null, limit: number): Promise<KeyListing[]> {
  return dbOf(d1)
    .select({
      id: apiKeys.id,
      prefix: apiKeys.prefix,
      kind: apiKeys.kind,
      label: apiKeys.label,
      agent: apiKeys.agent,
      user: apiKeys.user,
      role: apiKeys.role,
      expiresAt: apiKeys.expiresAt,
      createdAt: apiKeys.createdAt,
      lastUsedAt: apiKeys.lastUsedAt,
      revokedAt: apiKeys.revokedAt,
    })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), cursor ? gt(apiKeys.id, cursor) : undefined))
    .orderBy(asc(apiKeys.id))
    .limit(limit + 1);
}

/** Revokes a key of the tenant (keeping the first revocation time); false if the tenant has no such key. */
export async function revokeKey(d1: D1Database, tenantId: string, id: string, now: number): Promise<boolean> {
  const rows = await dbOf(d1)
    .update(apiKeys)
    .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, ${now})` })
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id)))
    .returning({ id: apiKeys.id });
  return rows.length > 0;
}

/** The key with this hash and its tenant, for authentication. */
export async function keyWithTenantByHash(d1: D1Database, hash: string) {
  const [row] = await dbOf(d1)
    .select({ key: apiKeys, tenant: { slug: tenants.slug, disabled: tenants.disabled, settings: tenants.settings } })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
    .where(eq(apiKeys.hash, hash))
    .limit(1);
  return row;
}

export async function markKeyUsed(d1: D1Database, keyId: string, now: number): Promise<void> {
  await dbOf(d1).update(apiKeys).set({ lastUsedAt: now }).where(eq(apiKeys.id, keyId));
}

/** Whether a key is still good: not revoked, not expired, its tenant not disabled. */
export async function keyValidity(d1: D1Database, keyId: string) {
  const [row] = await dbOf(d1)
    .select({
      revokedAt: apiKeys.revokedAt,
      expiresAt: apiKeys.expiresAt,
      disabled: tenants.disabled,
      kind: apiKeys.kind,
      role: apiKeys.role,
      settings: tenants.settings,
    })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
    .where(eq(apiKeys.id, keyId))
    .limit(1);
  return row;
}

/** One key of the tenant, without its hash: what an admin binding a name to it needs to check. */
export async function keyOfTenant(d1: D1Database, tenantId: string, id: string) {
  const [row] = await dbOf(d1)
    .select({ kind: apiKeys.kind, agent: apiKeys.agent, revokedAt: apiKeys.revokedAt, expiresAt: apiKeys.expiresAt })
    .from(apiKeys)
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id)))
    .limit(1);
  return row;
}

/** A key of the tenant by id, with what a principal needs (a ticket issued to a key is re-checked against it). */
export async function keyWithTenantById(d1: D1Database, tenantId: string, id: string) {
  const [row] = await dbOf(d1)
    .select({ key: apiKeys, tenant: { slug: tenants.slug, disabled: tenants.disabled, settings: tenants.settings } })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.id, apiKeys.tenantId))
    .where(and(eq(apiKeys.tenantId, tenantId), eq(apiKeys.id, id)))
    .limit(1);
  return row;
}
