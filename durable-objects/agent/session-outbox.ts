// What the AgentObject has accepted for a session and not yet handed on. Every item is written to
// the object's SQLite before it is sent and deleted once the session has taken it, so a restart
// with a call in flight loses nothing: the rows are sent again (on the next frame for that session
// or on the object's alarm), and the session skips any it already applied by their sequence number.

import type { FromAgent } from "../session/agent-link";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_outbox (seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, item TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS session_outbox_session ON session_outbox (session_id, seq);
`;

/** A session whose deliveries keep failing gives up after this many tries, so nothing retries for ever. */
const MAX_DELIVERY_ATTEMPTS = 20;

export class SessionOutbox {
  /** The highest sequence number ever handed out; kept in memory after the first read. */
  private lastSeq: number;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
    sql.exec("CREATE TABLE IF NOT EXISTS session_outbox_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL)");
    this.lastSeq = sql.exec<{ last: number }>("SELECT last FROM session_outbox_seq WHERE id = 1").toArray()[0]?.last ?? 0;
  }

  /** Stores an item for a session, stamped with the next sequence number of this object. */
  add(sessionId: string, item: FromAgent): void {
    const seq = ++this.lastSeq;
    this.sql.exec("INSERT INTO session_outbox_seq (id, last) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET last = excluded.last", seq);
    this.sql.exec("INSERT INTO session_outbox (seq, session_id, item) VALUES (?, ?, ?)", seq, sessionId, JSON.stringify({ ...item, seq }));
  }

  /** Everything waiting for one session, oldest first. */
  pendingFor(sessionId: string): FromAgent[] {
    return this.sql
      .exec<{ item: string }>("SELECT item FROM session_outbox WHERE session_id = ? ORDER BY seq", sessionId)
      .toArray()
      .map((r) => JSON.parse(r.item) as FromAgent);
  }

  /** The sessions that have something waiting. */
  sessions(): string[] {
    return this.sql
      .exec<{ session_id: string }>("SELECT DISTINCT session_id FROM session_outbox")
      .toArray()
      .map((r) => r.session_id);
  }

  /** The session has taken every item up to `seq`. */
  delivered(sessionId: string, seq: number): void {
    this.sql.exec("DELETE FROM session_outbox WHERE session_id = ? AND seq <= ?", sessionId, seq);
  }

  /** A delivery up to `seq` failed; returns true when the session has used up its tries (the items are then dropped). */
  failed(sessionId: string, seq: number): boolean {
    this.sql.exec("UPDATE session_outbox SET attempts = attempts + 1 WHERE session_id = ? AND seq <= ?", sessionId, seq);
    const row = this.sql
      .exec<{ attempts: number | null }>("SELECT MAX(attempts) AS attempts FROM session_outbox WHERE session_id = ?", sessionId)
      .toArray()[0];
    if ((row?.attempts ?? 0) < MAX_DELIVERY_ATTEMPTS) return false;
    this.delivered(sessionId, seq);
    return true;
  }

  isEmpty(): boolean {
    return this.sql.exec("SELECT 1 FROM session_outbox LIMIT 1").toArray().length === 0;
  }
}
