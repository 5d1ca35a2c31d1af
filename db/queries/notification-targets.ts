// Where a tenant's waiting permission requests are sent (webhooks). Secrets are read only to sign.

import { and, asc, eq, gt } from "drizzle-orm";
import { dbOf } from "../client";
import { type NotificationTargetRow, notificationTargets, tenants } from "../schema";

export type TargetListing = Omit<NotificationTargetRow, "tenantId" | "secret">;

const listing = {
  id: notificationTargets.id,
  name: notificationTargets.name,
  url: notificationTargets.url,
  linkBaseUrl: notificationTargets.linkBaseUrl,
  createdAt: notificationTargets.createdAt,
};

export async function insertTarget(d1: D1Database, row: Omit<NotificationTargetRow, "createdAt">): Promise<TargetListing | undefined> {
  const [created] = await dbOf(d1).insert(notificationTargets).values(row).returning(listing);
  return created;
}

export async function targetsPage(d1: D1Database, tenantId: string, cursor: string | null, limit: number): Promise<TargetListing[]> {
  return dbOf(d1)
    .select(listing)
    .from(notificationTargets)
    .where(and(eq(notificationTargets.tenantId, tenantId), cursor ? gt(notificationTargets.id, cursor) : undefined))
    .orderBy(asc(notificationTargets.id))
    .limit(limit + 1);
}

export async function deleteTarget(d1: D1Database, tenantId: string, id: string): Promise<boolean> {
  const rows = await dbOf(d1)
    .delete(notificationTargets)
    .where(and(eq(notificationTargets.tenantId, tenantId), eq(notificationTargets.id, id)))
    .returning({ id: notificationTargets.id });
  return rows.length > 0;
}

/** Every target of the tenant, secrets included: for signing what is sent. */
export async function targetsOfTenant(d1: D1Database, tenantId: string): Promise<NotificationTargetRow[]> {
  return dbOf(d1).select().from(notificationTargets).where(eq(notificationTargets.tenantId, tenantId)).orderBy(asc(notificationTargets.id));
}

/** The tenant's settings and how many targets it has, in one statement. */
export async function notifySettings(d1: D1Database, tenantId: string): Promise<{ settings: string; targets: number } | undefined> {
  const [row] = await dbOf(d1)
    .select({
      settings: tenants.settings,
      targets: dbOf(d1).$count(notificationTargets, eq(notificationTargets.tenantId, tenantId)),
    })
    .from(tenants)
    .where(eq(tenants.id, tenantId));
  return row;
}

/** Whether the tenant still has this target: a deleted target's approval links stop working. */
export async function targetExists(d1: D1Database, tenantId: string, id: string): Promise<boolean> {
  const row = await dbOf(d1)
    .select({ id: notificationTargets.id })
    .from(notificationTargets)
    .where(and(eq(notificationTargets.tenantId, tenantId), eq(notificationTargets.id, id)))
    .limit(1);
  return row.length > 0;
}
