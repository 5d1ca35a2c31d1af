// The bill at scale (issue 26): per million updates and per million permission requests for a tenant
// with 10,000 live sessions, and the Durable Object duration of its idle sessions, from the counts the
// scale bench measured (bench/scale-limits.ts) and the code path, at Cloudflare's published prices.

/**
 * Workers Paid, Durable Objects, as read on developers.cloudflare.com/durable-objects/platform/pricing
 * (requests and duration confirmed 2026-12-06; rows written as read 2026-12-03), before the monthly
 * allowances (1 million requests, 400,000 GB-s).
 */
const PRICES = {
  read: "2026-12-06",
  doRequestPerM: 0.15,
  durationPerMGbS: 12.5,
  rowWrittenPerM: 1,
};

/** An object's billed memory, and the time one event keeps it busy (as BENCHMARKS.md's Cost table estimates). */
const GB = 0.128;
const EVENT_S = 0.001;

interface Bill {
  rowsWritten: number;
  doRequests: number;
  /** Object events (each billed EVENT_S of duration). */
  events: number;
}

const dollarsPerMillion = (b: Bill) =>
  Math.round(
    (b.rowsWritten * PRICES.rowWrittenPerM + b.doRequests * PRICES.doRequestPerM + b.events * EVENT_S * GB * PRICES.durationPerMGbS) * 1000,
  ) / 1000;

/**
 * `leaseCallsPerMessage`: the tenant-rate lease calls each agent message costs at 10,000 connections
 * (the simulation's figure: a connection's lease and its shard's share of the root's).
 * The single-session figures are BENCHMARKS.md's Cost table (rows by the runtime's count; requests
 * from the code path): an update 1 row and 0.05 requests (WebSocket messages billed 20:1); a
 * permission request answered by a client 3 rows and 0.3 requests, by a rule 2 rows.
 */
export function costAtScale(leaseCallsPerMessage: number) {
  const update: Bill = { rowsWritten: 1, doRequests: 0.05 + leaseCallsPerMessage, events: 1 + leaseCallsPerMessage };
  // By a rule, with requests sparser than the half-second lease: one check at the session's shard,
  // and at most one batch of hits a second to it (counted as one per request, the worst case).
  const byRule: Bill = { rowsWritten: 2, doRequests: 0.05 + leaseCallsPerMessage + 2, events: 1 + leaseCallsPerMessage + 2 };
  const byClient: Bill = { rowsWritten: 3, doRequests: 0.3 + leaseCallsPerMessage, events: 2 + leaseCallsPerMessage };
  return {
    prices: PRICES,
    perMillionUpdates: { ...update, dollars: dollarsPerMillion(update) },
    perMillionPermissionsByRule: { ...byRule, dollars: dollarsPerMillion(byRule) },
    perMillionPermissionsByClient: { ...byClient, dollars: dollarsPerMillion(byClient) },
    /**
     * Idle sessions: every socket a SessionObject holds is hibernatable and no timer of the rules or
     * limits path keeps it awake, so an idle session is billed no duration. Without hibernation, one
     * object held in memory costs 3,600 s × 0.128 GB a hour.
     */
    idleSessionHour: {
      hibernating: 0,
      ifHeldInMemory: Math.round(3600 * GB * PRICES.durationPerMGbS * 1e6) / 1e12,
      tenThousandForADayIfHeld: Math.round(10_000 * 24 * 3600 * GB * PRICES.durationPerMGbS) / 1e6,
    },
  };
}
