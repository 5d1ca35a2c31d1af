// Where a tenant's waiting permission requests are sent (webhooks). Secrets are read only to sign.

import { and, asc, eq, gt } from "drizzle-orm";
import { dbOf } from "../client";
import { type NotificationTargetRow, notificationTargets, tenants } from "../schema";
import { HARD_LIMITS } from "../../protocol/tenant-limits";
import { StoredLimitExceeded, storedLimit, storedLimitSql } from "./stored-limits";

export type TargetListing = Omit<NotificationTargetRow, "tenantId" | "secret">;

const listing = {
  id: notificationTargets.id,
  name: notificationTargets.name,
  url: notificationTargets.url,
  linkBaseUrl: notificationTargets.linkBaseUrl,
  createdAt: notificationTargets.createdAt,
};

/**
 * Stores a target if the tenant stays within `notificationTargetsPerTenant` (decision 0041), checked
 * in the insert itself; else throws StoredLimitExceeded (409).
 */
export async function insertTarget(d1: D1Database, row: Omit<NotificationTargetRow, "createdAt">): Promise<TargetListing | undefined> {
  const limit = storedLimitSql("notificationTargetsPerTenant", row.tenantId);
  const inserted = await d1
    .prepare(
      `INSERT INTO notification_targets (id, tenant_id, name, url, secret, link_base_url, created_at)
       SELECT ?, ?, ?, ?, ?, ?, ?
       WHERE (SELECT count(*) FROM notification_targets WHERE tenant_id = ?) < ${limit.sql}`,
    )
    .bind(row.id, row.tenantId, row.name, row.url, row.secret, row.linkBaseUrl, Date.now(), row.tenantId, ...limit.binds)
    .run();
  if (inserted.meta.changes === 0) {
    const max = await storedLimit(d1, "notificationTargetsPerTenant", row.tenantId);
    throw new StoredLimitExceeded(
      "notificationTargetsPerTenant",
      max,
      `This tenant has ${max} notification targets, its limit (limits.notificationTargetsPerTenant): delete one it no longer needs, or ask the operator to raise the limit.`,
      409,
    );
  }
  const [created] = await dbOf(d1)
    .select(listing)
    .from(notificationTargets)
    .where(and(eq(notificationTargets.tenantId, row.tenantId), eq(notificationTargets.id, row.id)));
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

/**
 * The targets one waiting request is sent to, secrets included: for signing what is sent. At most
 * the hard limit of targets (decision 0041), so a tenant with more (made before the limit, or written
 * by hand) still fans each request out to a bounded number of webhooks: the oldest.
 */
export async function targetsOfTenant(d1: D1Database, tenantId: string): Promise<NotificationTargetRow[]> {
  return dbOf(d1)
    .select()
    .from(notificationTargets)
    .where(eq(notificationTargets.tenantId, tenantId))
    .orderBy(asc(notificationTargets.id))
    .limit(HARD_LIMITS.notificationTargetsPerTenant);
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
