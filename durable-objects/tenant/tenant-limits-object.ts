// TenantLimitsObject: one per tenant, named by the tenant id (the *root*), and LIMIT_SHARDS lease
// shards named `${tenantId}/${index}` (decision 0031). The root holds the counts that span a
// tenant's connections, which live in many Worker isolates and objects: the tenant's message-rate
// bucket, and the connections open under each key. The bucket is leased to the shards (each a
// LeasePool, protocol/rate-limit.ts) in leases sized to their demand, and by them to the connections
// (TenantLease), so at ten thousand connections the root sees a few calls a second per shard and each
// shard the calls of its own connections. Both are in memory on purpose: they describe the last second and the live connections,
// which the connections re-establish (leases are asked for again, connections renew their slot
// every CONNECTION_RENEW_MS), so a restart forgets nothing that matters for longer than that.

import { DurableObject } from "cloudflare:workers";
import { type LeaseGrant, LeasePool, TokenBucket } from "../../protocol/rate-limit";
import type { Env } from "../../core/env";
import { type AuditBudget, CONNECTION_RENEW_MS, MAX_LEASE_RETRY_MS, auditDay, auditDayEnd } from "../../protocol/tenant-limits";
import { objects, splitName } from "../objects";
import type { SlotOutcome } from "../../connection/gateway-objects";
import type { TenantLimitsContract } from "./contract";

/** A connection whose isolate died without closing it frees its slot after this long. */
const CONNECTION_TTL_MS = 3 * CONNECTION_RENEW_MS;

export class TenantLimitsObject extends DurableObject<Env> implements TenantLimitsContract {
  private bucket: { rate: number; tokens: TokenBucket } | undefined;
  /** Per key: connection id → when its slot lapses. */
  private readonly slots = new Map<string, Map<string, number>>();
  /** A lease shard: its pool of the root's tokens, and the tenant rate its connections last named. */
  private readonly shard?: { pool: LeasePool; rate: number };

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const name = splitName(ctx.id.name);
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
    const now = Date.now();
    if (this.bucket?.rate !== ratePerSecond) {
      this.bucket = { rate: ratePerSecond, tokens: new TokenBucket(ratePerSecond, 2 * ratePerSecond, now) };
    }
    const granted = this.bucket.tokens.takeUpTo(Math.max(0, Math.floor(want)), now);
    const retryAfterMs = granted < want ? Math.min(MAX_LEASE_RETRY_MS, Math.max(1, this.bucket.tokens.msUntilTokens(want - granted))) : 0;
    return { granted, retryAfterMs };
  }

  /** A new connection under `keyId`: refused when the key already has `limit` open. */
  openConnection(keyId: string, connectionId: string, limit: number): SlotOutcome {
    const open = this.liveSlots(keyId);
    if (!open.has(connectionId) && open.size >= limit) return { ok: false, open: open.size };
    open.set(connectionId, Date.now() + CONNECTION_TTL_MS);
    return { ok: true };
  }

  /** A live connection's slot, kept (or, after a restart of this object, taken again). */
  renewConnection(keyId: string, connectionId: string): void {
    this.liveSlots(keyId).set(connectionId, Date.now() + CONNECTION_TTL_MS);
  }

  closeConnection(keyId: string, connectionId: string): void {
    const open = this.slots.get(keyId);
    open?.delete(connectionId);
    if (open?.size === 0) this.slots.delete(keyId);
  }

  openConnections(): number {
    let open = 0;
    for (const keyId of [...this.slots.keys()]) open += this.liveSlots(keyId).size;
    return open;
  }

  private liveSlots(keyId: string): Map<string, number> {
    let open = this.slots.get(keyId);
    if (!open) this.slots.set(keyId, (open = new Map()));
    const now = Date.now();
    for (const [id, lapses] of open) if (lapses <= now) open.delete(id);
    return open;
  }
}
