// The TenantLimitsObject's RPC contract (tenant-limits-object.ts implements it; the connections reach
// it through ../objects.ts, by way of connection/tenant-limits.ts).

import type { SlotOutcome } from "../../connection/gateway-objects";
import type { LeaseGrant } from "../../protocol/rate-limit";
import type { AuditBudget } from "../../protocol/tenant-limits";

export interface TenantLimitsContract extends Rpc.DurableObjectBranded {
  /** Up to `want` of the tenant's message tokens, at `ratePerSecond` with bursts of twice that (a lease shard's or the root's). */
  lease(want: number, ratePerSecond: number): LeaseGrant | Promise<LeaseGrant>;
  /** A new connection under `keyId`: refused when the key already has `limit` open. */
  openConnection(keyId: string, connectionId: string, limit: number): SlotOutcome;
  /** A live connection's slot, kept (or, after a restart of the object, taken again). */
  renewConnection(keyId: string, connectionId: string): void;
  closeConnection(keyId: string, connectionId: string): void;
  /** How many client connections are open under the tenant's keys (for GET /v1/metrics): a shard's own; the root's, summed over its shards. */
  openConnections(): number | Promise<number>;
  /**
   * A batch of audit rows about to be written: `full` bytes as they are, `summarised` bytes with the
   * operation's text replaced by its hash. Charges `full` if today's budget holds it (`kept: true`),
   * else `summarised` (which may pass the budget: summarised rows are small and still say who decided).
   */
  chargeAudit(full: number, summarised: number, bytesPerDay: number): AuditBudget & { kept: boolean };
  /** Webhooks due now, `posts` per request in order: how many requests may send this minute (the root's; decision 0061). */
  takeWebhookPosts(posts: number[], perMinute: number): { admitted: number; retryAt: number };
  /** Today's audit budget, for the REST audit API. */
  auditBudget(bytesPerDay: number): AuditBudget;
}
