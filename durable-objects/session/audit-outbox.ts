// The session's decision audit rows on their way to D1. A row is kept in the session's SQLite until
// D1 has taken it: written at once when D1 answers, retried by the session's alarm when it does not,
// so a D1 outage delays the audit and never loses it. Rows carry their own id, and the insert ignores
// one D1 already has, so a retry after an insert whose answer was lost writes nothing twice.

/** How long after a failed write the session's alarm tries again. */
const AUDIT_RETRY_MS = 15_000;

import { type AuditEntry, insertAuditRows } from "../../db/queries/audit";

export class AuditOutbox {
  private flushing: Promise<boolean> | undefined;
  private failedAt: number | undefined;

  constructor(
    private readonly sql: SqlStorage,
    private readonly db: D1Database,
  ) {
    sql.exec("CREATE TABLE IF NOT EXISTS audit_outbox (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL)");
  }

  add(entry: AuditEntry): void {
    this.sql.exec("INSERT INTO audit_outbox (entry) VALUES (?)", JSON.stringify(entry));
  }

  waiting(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM audit_outbox").one().n;
  }

  /** When the alarm should try again: only after a failed write (rows left by a restart go with the next write or alarm). */
  retryAt(): number | undefined {
    if (this.failedAt === undefined || this.waiting() === 0) return undefined;
    return this.failedAt + AUDIT_RETRY_MS;
  }

  /** Writes every waiting row to D1 in one batch; true when none is left. One flush at a time. */
  flush(): Promise<boolean> {
    this.flushing ??= this.write().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async write(): Promise<boolean> {
    const rows = this.sql.exec<{ seq: number; entry: string }>("SELECT seq, entry FROM audit_outbox ORDER BY seq LIMIT 100").toArray();
    if (rows.length === 0) return true;
    try {
      await insertAuditRows(
        this.db,
        rows.map((r) => JSON.parse(r.entry) as AuditEntry),
      );
    } catch (error) {
      this.failedAt = Date.now();
      console.error(`session: ${this.waiting()} audit row(s) wait for D1`, error);
      return false;
    }
    this.failedAt = undefined;
    this.sql.exec("DELETE FROM audit_outbox WHERE seq <= ?", rows.at(-1)?.seq ?? 0);
    return this.waiting() === 0 ? true : this.write();
  }
}
