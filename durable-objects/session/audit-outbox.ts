// The session's decision audit entries on their way to D1. An entry is the `audit` column of its
// permission request's log entry (store.ts), written in the same UPDATE as the resolution, so the
// outbox costs no row of its own. A cursor (the store's `auditCursor`, in memory, its lower bound
// carried by every log write) says up to where D1 has them all: entries are written at once when D1
// answers, retried by the session's alarm when it does not, so a D1 outage delays the audit and
// never loses it. Entries carry their own id, and the insert ignores one D1 already has, so a retry
// after an insert whose answer was lost, or after a restart, writes nothing twice. Each written row
// is also appended to the tenant's hash chain (db/queries/audit-chain.ts), with the same guarantee.
//
// The cursor never passes an entry that may still change: a request still pending, or one whose
// answer is on its way to the agent (`held`: if it cannot be delivered, it is asked again or audited
// as withdrawn instead).

/**
 * Audit rows written within this long of each other go to D1 in one batch: an agent running tool
 * call after tool call under a rule pays one D1 write per batch, not one per request (each row is
 * in the session's SQLite first, so the wait loses nothing).
 */
const AUDIT_BATCH_MS = 100;
/** How long after a failed write the session's alarm tries again. */
const AUDIT_RETRY_MS = 15_000;
/** Entries per D1 batch. */
const BATCH = 100;

import type { AuditEntry } from "../../db/queries/audit";
import { recordAudit } from "../../db/queries/audit-chain";
import { auditDay, limitsOf } from "../../protocol/tenant-limits";
import type { PermissionPorts } from "../../protocol/permission-machine";
import { auditEntry, boundedEntry, outsideTurnSummary, summarisedEntry } from "./permission-audit";
import type { SessionStore } from "./store";
import { sessionLog } from "./session-log";

/** The tenant's daily audit budget (the TenantLimitsObject), and telling the session's clients it is spent. */
export interface AuditBudgetPort {
  charge(tenantId: string, full: number, summarised: number, bytesPerDay: number): Promise<{ kept: boolean; resetsAt: number }>;
  spent(bytesPerDay: number, resetsAt: number): void;
}

const utf8 = new TextEncoder();
const bytesOf = (entries: AuditEntry[]) => entries.reduce((n, e) => n + utf8.encode(JSON.stringify(e)).length, 0);

export class AuditOutbox {
  private flushing: Promise<boolean> | undefined;
  private failedAt: number | undefined;
  /** The UTC day this object last told its clients the budget was spent: once a day. */
  private toldSpentOn = -1;
  /** The batch charged but not yet written (D1 failed): its retry reuses the decision, not charged twice. */
  private charged: { ids: string; kept: boolean } | undefined;

  constructor(
    private readonly sql: SqlStorage,
    private readonly db: D1Database,
    private readonly store: SessionStore,
    private readonly budget: AuditBudgetPort,
  ) {}

  /**
   * The batch as it may go to D1: in full while the tenant's daily audit budget holds it, else each
   * entry summarised (who decided, the operation's length and hash). The budget's object being
   * unreachable keeps the batch in full: each row is bounded already (permission-audit.ts).
   */
  private async withinBudget(entries: AuditEntry[]): Promise<AuditEntry[]> {
    const meta = this.store.meta;
    if (!meta || entries.length === 0) return entries;
    const perDay = limitsOf(meta.limits).auditBytesPerDay;
    const summarised = entries.map(summarisedEntry);
    const ids = entries.map((e) => e.id).join(",");
    if (this.charged?.ids === ids) return this.charged.kept ? entries : summarised;
    const charged = await this.budget.charge(meta.tenantId, bytesOf(entries), bytesOf(summarised), perDay).catch((error: unknown) => {
      sessionLog(this.store).warn(
        "session.audit_budget_failed",
        "the tenant's audit budget could not be charged; writing the batch in full",
        {},
        error,
      );
      return { kept: true, resetsAt: 0 };
    });
    this.charged = { ids, kept: charged.kept };
    if (charged.kept) return entries;
    const today = auditDay(Date.now());
    if (this.toldSpentOn !== today) {
      this.toldSpentOn = today;
      this.budget.spent(perDay, charged.resetsAt);
    }
    return summarised;
  }

  /** The resolution of `seq` is not final until its answer reaches the agent: its entry waits. */
  hold(seq: number): void {
    this.store.held.add(seq);
  }
  release(seq: number): void {
    this.store.held.delete(seq);
  }

  /** Entries below this seq are final: no pending request, no held resolution, is below it. */
  private bound(): number {
    return this.store.unsettledBelow(this.store.lastSeq() + 1);
  }

  waiting(): number {
    return this.sql
      .exec<{ n: number }>(
        "SELECT COUNT(*) AS n FROM log WHERE seq > ? AND seq < ? AND audit IS NOT NULL",
        this.store.auditCursor,
        this.bound(),
      )
      .one().n;
  }

  /** When the alarm should try again: only after a failed write (entries left by a restart go with the next write or alarm). */
  retryAt(): number | undefined {
    if (this.failedAt === undefined || this.waiting() === 0) return undefined;
    return this.failedAt + AUDIT_RETRY_MS;
  }

  /** Writes every final entry past the cursor to D1, in batches; true when none is left. One flush at a time. */
  flush(): Promise<boolean> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Flushes; what is left (D1 failed) is retried by the alarm, which `retry` sets. */
  async flushOrRetry(retry: () => void): Promise<void> {
    if (!(await this.flush())) retry();
  }

  private async write(): Promise<boolean> {
    const bound = this.bound();
    const rows = this.sql
      .exec<{ seq: number; audit: string }>(
        "SELECT seq, audit FROM log WHERE seq > ? AND seq < ? AND audit IS NOT NULL ORDER BY seq LIMIT ?",
        this.store.auditCursor,
        bound,
        BATCH,
      )
      .toArray();
    if (rows.length > 0) {
      try {
        // A summarising row (permission-audit.ts outsideTurnSummary) is replaced by each later
        // request of its window: only its last version in the batch is written.
        const entries = new Map<string, AuditEntry>();
        for (const r of rows) {
          const entry = JSON.parse(r.audit) as AuditEntry;
          entries.delete(entry.id as string);
          entries.set(entry.id as string, entry);
        }
        const batch = await this.withinBudget([...entries.values()]);
        // The rows and the tenant's hash chain (decisions 0024, 0035): one link per row as written,
        // staged with the rows in one D1 call and chained with whatever the tenant's other sessions are
        // writing; a retry of this batch finds what it wrote, staged or chained and adds only what is missing.
        const tenantId = batch[0]?.tenantId;
        if (tenantId !== undefined) await recordAudit(this.db, tenantId, batch);
        this.charged = undefined;
      } catch (error) {
        this.failedAt = Date.now();
        sessionLog(this.store).warn(
          "session.audit_waiting",
          "audit entries wait for D1; the alarm retries",
          { waiting: this.waiting() },
          error,
        );
        return false;
      }
    }
    this.failedAt = undefined;
    // Everything below the bound was final when read, and stays so: the cursor moves past it all
    // (or to the last entry written, when the batch was full).
    const reached = rows.length === BATCH ? (rows.at(-1)?.seq ?? 0) : bound - 1;
    this.store.auditCursor = Math.max(this.store.auditCursor, reached);
    return rows.length === BATCH ? this.write() : true;
  }
}

/**
 * The permission machine's `audit` port (protocol/permission-machine.ts): the entry of an outcome
 * (permission-audit.ts), kept back until the agent has the answer, and every entry written goes to
 * D1 off the hot path, batched (AUDIT_BATCH_MS).
 */
export function auditPort(
  ctx: DurableObjectState,
  store: SessionStore,
  audits: AuditOutbox,
  scheduleDeadline: () => void,
): PermissionPorts<WebSocket>["audit"] {
  let flushWaiting = false;
  return {
    entry: (pending, outcome, by, chosen) => {
      const meta = store.meta;
      if (!meta) return null;
      // The operation as frozen when it was asked: what people were shown and the rules judged.
      return boundedEntry(auditEntry(meta, pending, outcome, by, chosen));
    },
    // SAFETY: the machine hands back what `entry` made.
    outsideTurnSummary: (latest, start, over, rate) => outsideTurnSummary(latest as AuditEntry, start, over, rate),
    hold: (permId) => audits.hold(permId),
    release: (permId) => audits.release(permId),
    queued: () => {
      if (flushWaiting) return;
      flushWaiting = true;
      ctx.waitUntil(
        scheduler.wait(AUDIT_BATCH_MS).then(() => {
          flushWaiting = false;
          return audits.flushOrRetry(scheduleDeadline);
        }),
      );
    },
  };
}
