// The bill at scale (issues 26 and 40): per million updates, per million permission requests and per
// idle session-hour for a tenant with 10,000 live sessions, from the counts the scale bench measured
// (bench/scale-limits.ts, the sessions' stored bytes) and the code path, at Cloudflare's published
// prices; beside it, what each guarantee adds.

/**
 * Workers Paid, before the monthly allowances. Durable Objects (developers.cloudflare.com/durable-objects/platform/pricing):
 * requests $0.15/M and duration $12.50/M GB-s (read 2026-12-03, 2026-12-06 and 2026-12-07); the SQLite
 * storage table: rows written $1.00/M, stored data $0.20/GB-month (as read 2026-12-03; billed since
 * 2026-01-07, changelog "Billing for SQLite Storage", 2025-12-12). D1 (developers.cloudflare.com/d1/platform/pricing):
 * rows written $1.00/M. Workers (developers.cloudflare.com/workers/platform/pricing): CPU $0.02/M CPU-ms.
 */
const PRICES = {
  read: "2026-12-07",
  doRequestPerM: 0.15,
  durationPerMGbS: 12.5,
  rowWrittenPerM: 1,
  storedGbMonth: 0.2,
  d1RowWrittenPerM: 1,
  workersCpuMsPerM: 0.02,
};

/** An object's billed memory, and the time one event keeps it busy (as BENCHMARKS.md's Cost table estimates). */
const GB = 0.128;
const EVENT_S = 0.001;
const HOURS_A_MONTH = 730;

interface Bill {
  /** SQLite rows written in the gateway's objects. */
  rowsWritten: number;
  /** D1 rows written (the decision's audit row, its chain staging row in and out, its chain link). */
  d1RowsWritten: number;
  doRequests: number;
  /** Object events (each billed EVENT_S of duration). */
  events: number;
}

const dollarsPerMillion = (b: Bill) =>
  Math.round(
    (b.rowsWritten * PRICES.rowWrittenPerM +
      b.d1RowsWritten * PRICES.d1RowWrittenPerM +
      b.doRequests * PRICES.doRequestPerM +
      b.events * EVENT_S * GB * PRICES.durationPerMGbS +
      0.1 * PRICES.workersCpuMsPerM) *
      1000,
  ) / 1000;

/** D1 rows written per decision: the audit row, the chain's staging row in and out, the link (indexes not counted). */
const AUDIT_D1_ROWS = 4;

/**
 * `leaseCallsPerMessage`: the tenant-rate lease calls each agent message costs at 10,000 connections
 * (the simulation's figure). `storedBytesPerSession`: a session's SQLite on disk, as the scale bench
 * measured it (undefined when it did not run). The single-session figures are BENCHMARKS.md's Cost
 * table (rows by the runtime's count; requests from the code path): an update 1 row and 0.05 requests
 * (WebSocket messages billed 20:1); a permission request answered by a client 3 rows and 0.3 requests.
 */
export function costAtScale(leaseCallsPerMessage: number, storedBytesPerSession?: number) {
  const lease = leaseCallsPerMessage;
  const update: Bill = { rowsWritten: 1, d1RowsWritten: 0, doRequests: 0.05 + lease, events: 1 + lease };
  // By a rule, a step that reads content (npm test, make test): with requests sparser than the
  // half-second lease, a check at the session's shard and a batch of hits to it (counted as one per
  // request, the worst case); since decision 0046 the root's gate before the answer and its reader
  // closed when the tool call finishes (two calls, a row in and out at the root), and the request
  // written twice in the session (asking, then resolved: 3 rows where a step the gate skips, ls, writes 2).
  const byRule: Bill = { rowsWritten: 3 + 2, d1RowsWritten: AUDIT_D1_ROWS, doRequests: 0.05 + lease + 2 + 2, events: 1 + lease + 2 + 2 };
  // By a client, a step that may read content: since decision 0046 one read of the root after the copies.
  const byClient: Bill = { rowsWritten: 3, d1RowsWritten: AUDIT_D1_ROWS, doRequests: 0.3 + lease + 1, events: 2 + lease + 1 };
  const sessions = 10_000;
  const storedGb = storedBytesPerSession === undefined ? undefined : (storedBytesPerSession * sessions) / 1e9;
  return {
    prices: PRICES,
    perMillionUpdates: { ...update, dollars: dollarsPerMillion(update) },
    perMillionPermissionsByRule: { ...byRule, dollars: dollarsPerMillion(byRule) },
    perMillionPermissionsByClient: { ...byClient, dollars: dollarsPerMillion(byClient) },
    /**
     * Idle sessions: every socket a SessionObject holds is hibernatable and no timer of the rules,
     * limits or stream path keeps it awake (a dropped stream's window is checked when the streams are
     * next touched, decision 0050), so an idle session is billed no duration, only what it stores.
     * Without hibernation, one object held in memory costs 3,600 s × 0.128 GB an hour.
     */
    idleSessionHour: {
      sessions,
      duration: 0,
      storedGb,
      storagePerHourAllSessions: storedGb === undefined ? undefined : round6((storedGb * PRICES.storedGbMonth) / HOURS_A_MONTH),
      ifHeldInMemoryEach: round6((3600 * GB * PRICES.durationPerMGbS) / 1e6),
      ifHeldInMemoryAllPerHour: round6((sessions * 3600 * GB * PRICES.durationPerMGbS) / 1e6),
    },
    /** What each guarantee landed since 2026-12-06 adds per unit (rows and object calls), from the code path and the runs' row counts. */
    guarantees: {
      agentAdapters0039: "CPU only (the operation read by the agent's adapter): no row, no call",
      frozenOperation0040:
        "no row since 09c907c (the operation kept in its entry; 5 rows per client-answered request at 19dcb58, 3 again after)",
      unseenChanges0046:
        "a rule-answered reader: 2 root calls, 2 root rows, 1 more session row; a request asked of people that may read: 1 root call",
      fenceFreeAllow0049: "nothing per request; a new allow waits for no lease",
      streamCursors0050: "no row per update (1 before and after, counted): a cursor spliced into each message to a client",
    },
  };
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;
