// Tenants: created and managed by the operator.

import { asc, eq, gt } from "drizzle-orm";
import { dbOf } from "../client";
import { type Tenant, tenants } from "../schema";

export async function tenantBySlug(d1: D1Database, slug: string): Promise<Tenant | undefined> {
  return dbOf(d1).query.tenants.findFirst({ where: eq(tenants.slug, slug) });
}

export async function tenantById(d1: D1Database, id: string): Promise<Tenant | undefined> {
  return dbOf(d1).query.tenants.findFirst({ where: eq(tenants.id, id) });
}

export async function insertTenant(d1: D1Database, row: { id: string; slug: string; name: string }): Promise<void> {
  await dbOf(d1).insert(tenants).values(row);
}

/** A page of tenants by id, `limit + 1` rows so the caller can tell whether there is a next page. */
export async function tenantsPage(d1: D1Database, cursor: string | null, limit: number): Promise<Tenant[]> {
  return dbOf(d1)
    .select()
    .from(tenants)
    .where(cursor ? gt(tenants.id, cursor) : undefined)
    .orderBy(asc(tenants.id))
    .limit(limit + 1);
}

export async function updateTenant(d1: D1Database, id: string, patch: Pick<Tenant, "name" | "disabled" | "settings">): Promise<void> {
  await dbOf(d1).update(tenants).set(patch).where(eq(tenants.id, id));
}

export async function tenantDisabled(d1: D1Database, id: string): Promise<boolean | undefined> {
  const row = await dbOf(d1).query.tenants.findFirst({ columns: { disabled: true }, where: eq(tenants.id, id) });
  return row?.disabled;
}

/** What a person's live connection re-checks: whether the tenant is disabled, and its settings (roles may have changed). */
export async function tenantStanding(d1: D1Database, id: string): Promise<{ disabled: boolean; settings: string } | undefined> {
  return dbOf(d1).query.tenants.findFirst({ columns: { disabled: true, settings: true }, where: eq(tenants.id, id) });
}
