// The tenant's unseen changes (protocol/unseen.ts, decision 0046), kept by its RulesObject root in
// SQLite: what rule-answered steps may have written that no person saw, in every session of the tenant;
// the readers each session reported open; and the sessions that may hold a clean lease (decision 0058,
// protocol/unseen-lease.ts: the root's logic, which this store serves).

import { isObject } from "../../protocol/jsonrpc";
import {
  ANYTHING,
  type NewUnseenChange,
  type OpenReader,
  UNSEEN_LISTED,
  type UnseenChange,
  type UnseenDiff,
  type UnseenHold,
} from "../../protocol/unseen";
import type { LeaseHolder, ReaderReport, UnseenRootStore } from "../../protocol/unseen-lease";

/**
 * A reader no session said finished (its session evicted mid-turn, then gone) stops holding writes
 * after this long: the bound on a leak, longer than any turn a person waits through. A lease holder
 * that never reported (its readers unknown) is forgotten as long after its lease ended.
 */
const READER_LEASE_MS = 6 * 60 * 60 * 1000;

/**
 * The most changes kept one by one. Past it a change is kept as one ANYTHING entry (the newest), so the
 * table stays bounded however long no person looks, and a person's allow still clears only what they saw.
 */
export const MAX_UNSEEN_ROWS = 1000;

type ReaderRow = { session_id: string; tool_call_id: string; at: number };
type HolderRow = { session_id: string; lease_id: number; ends_at: number };
type Row = {
  id: number;
  path: string;
  session_id: string;
  tool_call_id: string | null;
  rule_id: string | null;
  at: number;
  diff: string | null;
  step: string | null;
  running: number;
};

export class UnseenChanges implements UnseenRootStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS unseen_changes (id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL, session_id TEXT NOT NULL, tool_call_id TEXT, rule_id TEXT, at INTEGER NOT NULL, diff TEXT)",
    );
    // The diff a change is shown by (decision 0064), added to a table made before it: a change kept without one cannot be shown.
    if (
      !sql
        .exec<{ name: string }>("PRAGMA table_info(unseen_changes)")
        .toArray()
        .some((c) => c.name === "diff")
    )
      sql.exec("ALTER TABLE unseen_changes ADD COLUMN diff TEXT");
    // What a card says of a change no diff shows (decision 0068): the step's command and directory, as JSON.
    if (
      !sql
        .exec<{ name: string }>("PRAGMA table_info(unseen_changes)")
        .toArray()
        .some((c) => c.name === "step")
    )
      sql.exec("ALTER TABLE unseen_changes ADD COLUMN step TEXT");
    sql.exec(
      "CREATE TABLE IF NOT EXISTS open_readers (session_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (session_id, tool_call_id))",
    );
    // The newest report each session sent (its number): an older one arriving late changes nothing.
    sql.exec("CREATE TABLE IF NOT EXISTS reader_reports (session_id TEXT PRIMARY KEY, seq INTEGER NOT NULL)");
    // Sessions that may hold a clean lease, or readers they have not reported: the newest lease granted.
    sql.exec("CREATE TABLE IF NOT EXISTS clean_leases (session_id TEXT PRIMARY KEY, lease_id INTEGER NOT NULL, ends_at INTEGER NOT NULL)");
    // Lease ids only grow, across restarts: a session drops every lease up to an id.
    sql.exec("CREATE TABLE IF NOT EXISTS clean_lease_seq (id INTEGER PRIMARY KEY CHECK (id = 0), value INTEGER NOT NULL)");
  }

  add(changes: NewUnseenChange[]): void {
    for (const change of changes) this.addOne(change);
  }

  report(sessionId: string, report: ReaderReport, now: number): void {
    const last = this.sql.exec<{ seq: number }>("SELECT seq FROM reader_reports WHERE session_id = ?", sessionId).toArray()[0];
    if (!last || report.seq > last.seq) {
      this.sql.exec("INSERT OR REPLACE INTO reader_reports (session_id, seq) VALUES (?, ?)", sessionId, report.seq);
      const open = new Map(report.readers);
      const known = this.sql.exec<ReaderRow>("SELECT * FROM open_readers WHERE session_id = ?", sessionId).toArray();
      for (const row of known)
        if (!open.has(row.tool_call_id))
          this.sql.exec("DELETE FROM open_readers WHERE session_id = ? AND tool_call_id = ?", sessionId, row.tool_call_id);
      const had = new Set(known.map((r) => r.tool_call_id));
      for (const [toolCallId, at] of open)
        if (!had.has(toolCallId))
          this.sql.exec(
            "INSERT INTO open_readers (session_id, tool_call_id, at) VALUES (?, ?, ?)",
            sessionId,
            toolCallId,
            Number.isFinite(at) ? Math.min(at, now) : now,
          );
    }
    this.sql.exec("DELETE FROM clean_leases WHERE session_id = ? AND lease_id <= ?", sessionId, report.dropped);
  }

  readers(except: { sessionId: string; toolCallId: string }, now: number): OpenReader[] {
    this.sql.exec("DELETE FROM open_readers WHERE at < ?", now - READER_LEASE_MS);
    return this.sql
      .exec<ReaderRow>(
        "SELECT * FROM open_readers WHERE NOT (session_id = ? AND tool_call_id = ?) ORDER BY at LIMIT ?",
        except.sessionId,
        except.toolCallId,
        UNSEEN_LISTED,
      )
      .toArray()
      .map(readerOf);
  }

  holders(): LeaseHolder[] {
    this.sql.exec("DELETE FROM clean_leases WHERE ends_at < ?", Date.now() - READER_LEASE_MS);
    return this.sql
      .exec<HolderRow>("SELECT * FROM clean_leases")
      .toArray()
      .map((r) => ({ sessionId: r.session_id, leaseId: r.lease_id, endsAt: r.ends_at }));
  }

  grant(sessionId: string, endsAt: number): number {
    const last = this.sql.exec<{ value: number }>("SELECT value FROM clean_lease_seq").toArray()[0]?.value ?? 0;
    const leaseId = last + 1;
    this.sql.exec("INSERT OR REPLACE INTO clean_lease_seq (id, value) VALUES (0, ?)", leaseId);
    this.sql.exec(
      "INSERT INTO clean_leases (session_id, lease_id, ends_at) VALUES (?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET lease_id = excluded.lease_id, ends_at = MAX(ends_at, excluded.ends_at)",
      sessionId,
      leaseId,
      endsAt,
    );
    return leaseId;
  }

  /** A person allowed a step whose card showed these changes (protocol/unseen.ts `seenBy`): they are seen. How many were cleared. */
  seen(ids: number[]): number {
    let cleared = 0;
    for (const id of ids)
      if (Number.isSafeInteger(id) && id > 0) cleared += this.sql.exec("DELETE FROM unseen_changes WHERE id = ?", id).rowsWritten;
    return cleared;
  }

  /** What people would be shown now: the count, the first few with their diffs, the newest id, a fresh list id; null when nothing is unseen. */
  hold(): UnseenHold | null {
    const stats = this.sql.exec<{ n: number; top: number | null }>("SELECT COUNT(*) AS n, MAX(id) AS top FROM unseen_changes").one();
    if (stats.n === 0 || stats.top === null) return null;
    // A change whose step is still an open reader (it has not reported finishing) may still be written: it is listed as running.
    const changes = this.sql
      .exec<Row>(
        "SELECT u.*, EXISTS (SELECT 1 FROM open_readers r WHERE r.session_id = u.session_id AND r.tool_call_id = u.tool_call_id) AS running FROM unseen_changes u ORDER BY u.id LIMIT ?",
        UNSEEN_LISTED,
      )
      .toArray()
      .map(fromRow);
    return { total: stats.n, changes, upTo: stats.top, readers: [], listId: crypto.randomUUID() };
  }

  private addOne(change: NewUnseenChange): void {
    const count = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM unseen_changes").one().n;
    let path = change.path;
    if (count >= MAX_UNSEEN_ROWS) {
      // Over the bound: the newest entry becomes one ANYTHING (a new id, so an earlier look does not clear it).
      this.sql.exec("DELETE FROM unseen_changes WHERE id = (SELECT MAX(id) FROM unseen_changes) AND path = ?", ANYTHING);
      path = ANYTHING;
    }
    // A diff is kept only with the path it shows (not with the ANYTHING that replaces a change past the bound).
    const diff = path === change.path && change.diff ? JSON.stringify(change.diff) : null;
    const step = change.command !== undefined ? JSON.stringify({ command: change.command, cwd: change.cwd ?? null }) : null;
    this.sql.exec(
      "INSERT INTO unseen_changes (path, session_id, tool_call_id, rule_id, at, diff, step) VALUES (?, ?, ?, ?, ?, ?, ?)",
      path,
      change.sessionId,
      change.toolCallId,
      change.ruleId,
      change.at,
      diff,
      step,
    );
  }
}

function readerOf(r: ReaderRow): OpenReader {
  return { sessionId: r.session_id, toolCallId: r.tool_call_id, at: r.at };
}

function fromRow(r: Row): UnseenChange {
  const change: UnseenChange = { id: r.id, path: r.path, sessionId: r.session_id, toolCallId: r.tool_call_id, ruleId: r.rule_id, at: r.at };
  const diff = r.diff === null ? undefined : diffFrom(r.diff);
  if (diff) change.diff = diff;
  else Object.assign(change, r.step === null ? {} : stepFrom(r.step));
  if (r.running) change.running = true;
  return change;
}

/** A stored step read back; what does not read as one is not said. */
function stepFrom(text: string): Pick<UnseenChange, "command" | "cwd"> {
  try {
    const s = JSON.parse(text) as unknown;
    if (isObject(s) && typeof s.command === "string") return { command: s.command, ...(typeof s.cwd === "string" ? { cwd: s.cwd } : {}) };
  } catch {
    // not JSON: not said
  }
  return {};
}

/** A stored diff read back; one that does not read as a diff is not shown (and so the change stays as one that cannot be). */
function diffFrom(text: string): UnseenDiff | undefined {
  try {
    const d = JSON.parse(text) as unknown;
    if (isObject(d) && typeof d.newText === "string" && (typeof d.oldText === "string" || d.oldText === null))
      return { oldText: d.oldText, newText: d.newText };
  } catch {
    // not JSON: not shown
  }
  return undefined;
}
