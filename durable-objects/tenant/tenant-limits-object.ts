// TenantLimitsObject: one per tenant, named by the tenant id (the *root*), and LIMIT_SHARDS shards
// named `${tenantId}/${index}` (decisions 0031, 0035). The root holds the tenant's message-rate bucket,
// its audit budget and the minute's webhook POSTs. The bucket is leased to the shards (each a LeasePool, protocol/rate-limit.ts)
// in leases sized to their demand, and by them to the connections (TenantLease), so at ten thousand
// connections the root sees a few calls a second per shard and each shard the calls of its own
// connections. Each shard also counts the open connections of the keys that hash to it
// (`slotShardOf`): a key's slots are opened, renewed and closed in one shard, exact there, and never
// at the root. Leases and slots are in memory on purpose: they describe the last second and the live
// connections, which the connections re-establish (leases are asked for again, connections renew
// their slot every CONNECTION_RENEW_MS), so a restart forgets nothing that matters for longer than that.

import { DurableObject } from "cloudflare:workers";
import { type LeaseGrant, LeasePool, TenantBucket } from "../../protocol/rate-limit";
import type { Env } from "../../core/env";
import { type AuditBudget, LIMIT_SHARDS, SlotTable, admitWebhooks, auditDay, auditDayEnd } from "../../protocol/tenant-limits";
import { objects, splitName } from "../objects";
import type { SlotOutcome } from "../../connection/gateway-objects";
import type { TenantLimitsContract } from "./contract";

export class TenantLimitsObject extends DurableObject<Env> implements TenantLimitsContract {
  private readonly bucket = new TenantBucket();
  /** The open connections of the keys this shard counts (the root's stays empty but for connections opened before decision 0035). */
  private readonly slots = new SlotTable();
  /** A lease shard: its pool of the root's tokens, and the tenant rate its connections last named. */
  private readonly shard?: { pool: LeasePool; rate: number };
  private readonly tenantId: string;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const name = splitName(ctx.id.name);
    this.tenantId = name?.tenantId ?? ctx.id.name ?? "";
    if (name) {
      const root = objects.tenantLimits(env, name.tenantId);
      const shard: { pool: LeasePool; rate: number } = {
        pool: new LeasePool((want) => root.lease(want, shard.rate)),
        rate: 1,
      };
      this.shard = shard;
      return; // a shard keeps no audit budget
    }
    // The audit budget outlives a restart (a day, not a second): one row per UTC day, older ones dropped.
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS audit_budget (day INTEGER PRIMARY KEY, spent INTEGER NOT NULL, exhausted INTEGER NOT NULL)",
    );
    // The minute's webhook POSTs (decision 0061): kept across a restart, so a restart does not reopen the minute.
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS webhook_window (id INTEGER PRIMARY KEY CHECK (id = 1), minute INTEGER NOT NULL, used INTEGER NOT NULL)",
    );
  }

  /** The tenant's sessions' webhooks due now (`posts` per request, in order): how many requests may send this minute, and when the rest may. */
  takeWebhookPosts(posts: number[], perMinute: number): { admitted: number; retryAt: number } {
    const sql = this.ctx.storage.sql;
    const row = sql.exec<{ minute: number; used: number }>("SELECT minute, used FROM webhook_window WHERE id = 1").toArray()[0];
    const paced = admitWebhooks(row ?? { minute: 0, used: 0 }, posts, perMinute, Date.now());
    sql.exec(
      "INSERT INTO webhook_window (id, minute, used) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET minute = excluded.minute, used = excluded.used",
      paced.window.minute,
      paced.window.used,
    );
    return { admitted: paced.admitted, retryAt: paced.retryAt };
  }

  chargeAudit(full: number, summarised: number, bytesPerDay: number): AuditBudget & { kept: boolean } {
    const today = this.auditToday();
    const kept = !today.exhausted && today.spent + full <= bytesPerDay;
    const spent = today.spent + (kept ? full : summarised);
    const exhausted = today.exhausted || !kept;
    this.ctx.storage.sql.exec("UPDATE audit_budget SET spent = ?, exhausted = ? WHERE day = ?", spent, exhausted ? 1 : 0, today.day);
    return { kept, bytesPerDay, spentToday: spent, exhausted, resetsAt: auditDayEnd(today.day) };
  }

  auditBudget(bytesPerDay: number): AuditBudget {
    const today = this.auditToday();
    return { bytesPerDay, spentToday: today.spent, exhausted: today.exhausted, resetsAt: auditDayEnd(today.day) };
  }

  private auditToday(): { day: number; spent: number; exhausted: boolean } {
    const day = auditDay(Date.now());
    const sql = this.ctx.storage.sql;
    sql.exec("DELETE FROM audit_budget WHERE day < ?", day);
    sql.exec("INSERT OR IGNORE INTO audit_budget (day, spent, exhausted) VALUES (?, 0, 0)", day);
    const row = sql.exec<{ spent: number; exhausted: number }>("SELECT spent, exhausted FROM audit_budget WHERE day = ?", day).one();
    return { day, spent: row.spent, exhausted: row.exhausted === 1 };
  }

  /**
   * Up to `want` of the tenant's message tokens, at `ratePerSecond` with bursts of twice that: a
   * shard serves it from its pool; the root from the bucket (and says to wait until what was asked
   * for is there, at most MAX_LEASE_RETRY_MS, so shards at the tenant's limit do not ask in a loop).
   */
  lease(want: number, ratePerSecond: number): LeaseGrant | Promise<LeaseGrant> {
    if (this.shard) {
      this.shard.rate = ratePerSecond;
      return this.shard.pool.take(want);
    }
    return this.bucket.lease(want, ratePerSecond, Date.now());
  }

  /** A new connection under `keyId` (at the key's shard): refused when the key already has `limit` open. */
  openConnection(keyId: string, connectionId: string, limit: number): SlotOutcome {
    return this.slots.open(keyId, connectionId, limit, Date.now());
  }

  /** A live connection's slot, kept (or, after a restart of this object, taken again). */
  renewConnection(keyId: string, connectionId: string): void {
    this.slots.renew(keyId, connectionId, Date.now());
  }

  closeConnection(keyId: string, connectionId: string): void {
    this.slots.close(keyId, connectionId);
  }

  /** The tenant's open client connections: at the root, the sum over its shards (and its own, from before the shards counted them). */
  async openConnections(): Promise<number> {
    const own = this.slots.count(Date.now());
    if (this.shard) return own;
    const shards = await Promise.all(
      Array.from({ length: LIMIT_SHARDS }, (_, i) => objects.tenantLimits(this.env, this.tenantId, i).openConnections()),
    );
    return shards.reduce((a, b) => a + b, own);
  }
}
