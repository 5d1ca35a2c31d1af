// session/delete takes the session out of the tenant's index in D1 (session/list, session/load, the
// REST API). The deletion itself stands whatever D1 does (the state is already gone), so if D1
// fails, the row to remove is remembered in the session's SQLite and the alarm tries again until D1
// takes it: a deleted session never stays listed for good.

import { deleteSessionIndex } from "../../db/queries/sessions";
import type { SessionStore } from "./store";
import { log } from "../../core/log";

/** How long after a failed delete the session's alarm tries again. */
const UNINDEX_RETRY_MS = 15_000;

export class SessionUnindex {
  private running = false;
  private failedAt: number | undefined;

  constructor(
    private readonly store: SessionStore,
    /** Read at each try: the binding is the object's, as it is then. */
    private readonly db: () => D1Database,
  ) {}

  /** Remembers the row, then removes it from D1; a failure is kept for the alarm (retryAt). Never rejects. */
  remove(row: { tenantId: string; sessionId: string }): Promise<void> {
    this.store.unindexPending = row;
    return this.retry();
  }

  /** Tries again to remove the remembered row, if there is one. Never rejects. */
  async retry(): Promise<void> {
    const row = this.store.unindexPending;
    if (!row || this.running) return;
    this.running = true;
    try {
      await deleteSessionIndex(this.db(), row.tenantId, row.sessionId);
      this.failedAt = undefined;
      this.store.unindexPending = undefined;
    } catch (error) {
      this.failedAt = Date.now();
      log(
        "warn",
        "session.unindex_failed",
        "the index row of a deleted session is still in D1; the alarm retries",
        { tenantId: row.tenantId, sessionId: row.sessionId },
        error,
      );
    } finally {
      this.running = false;
    }
  }

  /** When the alarm should try again: after a failure, or at once for a row a restart left behind. */
  retryAt(now = Date.now()): number | undefined {
    if (this.running || !this.store.unindexPending) return undefined;
    return this.failedAt === undefined ? now : this.failedAt + UNINDEX_RETRY_MS;
  }
}
