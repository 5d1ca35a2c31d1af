// The tenant's unseen changes (protocol/unseen.ts, decision 0046), kept by its RulesObject root in
// SQLite: what rule-answered steps may have written that no person saw, in every session of the tenant.
// One object per tenant, so a check and a note are one step: no session's change can fall between
// another session's check and its run.

import {
  ANYTHING,
  type NewUnseenChange,
  type OpenReader,
  UNSEEN_LISTED,
  type UnseenChange,
  type UnseenGateRequest,
  type UnseenHold,
} from "../../protocol/unseen";

/**
 * A reader no session said finished (its session evicted mid-turn, then gone) stops holding writes
 * after this long: the bound on a leak, longer than any turn a person waits through.
 */
const READER_LEASE_MS = 6 * 60 * 60 * 1000;

/**
 * The most changes kept one by one. Past it a change is kept as one ANYTHING entry (the newest), so the
 * table stays bounded however long no person looks, and a person's allow still clears only what they saw.
 */
export const MAX_UNSEEN_ROWS = 1000;

type ReaderRow = { session_id: string; tool_call_id: string; at: number };
type Row = { id: number; path: string; session_id: string; tool_call_id: string | null; rule_id: string | null; at: number };

export class UnseenChanges {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS unseen_changes (id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, session_id TEXT NOT NULL, tool_call_id TEXT, rule_id TEXT, at INTEGER NOT NULL)",
    );
    sql.exec(
      "CREATE TABLE IF NOT EXISTS open_readers (session_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (session_id, tool_call_id))",
    );
  }

  /**
   * A step an allow rule would answer, in one step: held (what people are shown) when it reads content
   * and a change is unseen, or when it would write while another rule-answered step may be reading;
   * otherwise what it may write is noted, it is opened as a reader if it reads, and null lets it go.
   */
  gate(request: UnseenGateRequest, now: number): UnseenHold | null {
    if (request.reads) {
      const hold = this.hold();
      if (hold) return hold;
    }
    if (request.note.length > 0) {
      this.sql.exec("DELETE FROM open_readers WHERE at < ?", now - READER_LEASE_MS);
      const readers = this.sql
        .exec<ReaderRow>(
          "SELECT * FROM open_readers WHERE NOT (session_id = ? AND tool_call_id = ?) ORDER BY at LIMIT ?",
          request.sessionId,
          request.toolCallId ?? "",
          UNSEEN_LISTED,
        )
        .toArray();
      if (readers.length > 0) return { total: 0, changes: [], upTo: 0, readers: readers.map(readerOf) };
    }
    for (const change of request.note) this.add(change);
    if (request.reads && request.toolCallId !== null)
      this.sql.exec(
        "INSERT OR REPLACE INTO open_readers (session_id, tool_call_id, at) VALUES (?, ?, ?)",
        request.sessionId,
        request.toolCallId,
        now,
      );
    return null;
  }

  /** What an agent changed with nobody asked (a tool call it ran by itself): unseen, whatever reader is open. */
  note(changes: NewUnseenChange[]): void {
    for (const change of changes) this.add(change);
  }

  /** A reader's tool call finished (`toolCallId`), or its session's turn ended (every reader of the session). */
  readerDone(sessionId: string, toolCallId: string | null): void {
    if (toolCallId === null) this.sql.exec("DELETE FROM open_readers WHERE session_id = ?", sessionId);
    else this.sql.exec("DELETE FROM open_readers WHERE session_id = ? AND tool_call_id = ?", sessionId, toolCallId);
  }

  /** A person allowed a step that showed the changes up to `upTo`: they are seen. How many were cleared. */
  seen(upTo: number): number {
    if (!Number.isSafeInteger(upTo) || upTo <= 0) return 0;
    return this.sql.exec("DELETE FROM unseen_changes WHERE id <= ?", upTo).rowsWritten;
  }

  /** What people would be shown now: the count, the first few, the newest id; null when nothing is unseen. */
  hold(): UnseenHold | null {
    const stats = this.sql.exec<{ n: number; top: number | null }>("SELECT COUNT(*) AS n, MAX(id) AS top FROM unseen_changes").one();
    if (stats.n === 0 || stats.top === null) return null;
    const changes = this.sql.exec<Row>("SELECT * FROM unseen_changes ORDER BY id LIMIT ?", UNSEEN_LISTED).toArray().map(fromRow);
    return { total: stats.n, changes, upTo: stats.top, readers: [] };
  }

  private add(change: NewUnseenChange): void {
    const count = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM unseen_changes").one().n;
    let path = change.path;
    if (count >= MAX_UNSEEN_ROWS) {
      // Over the bound: the newest entry becomes one ANYTHING (a new id, so an earlier look does not clear it).
      this.sql.exec("DELETE FROM unseen_changes WHERE id = (SELECT MAX(id) FROM unseen_changes) AND path = ?", ANYTHING);
      path = ANYTHING;
    }
    this.sql.exec(
      "INSERT INTO unseen_changes (path, session_id, tool_call_id, rule_id, at) VALUES (?, ?, ?, ?, ?)",
      path,
      change.sessionId,
      change.toolCallId,
      change.ruleId,
      change.at,
    );
  }
}

function readerOf(r: ReaderRow): OpenReader {
  return { sessionId: r.session_id, toolCallId: r.tool_call_id, at: r.at };
}

function fromRow(r: Row): UnseenChange {
  return { id: r.id, path: r.path, sessionId: r.session_id, toolCallId: r.tool_call_id, ruleId: r.rule_id, at: r.at };
}
