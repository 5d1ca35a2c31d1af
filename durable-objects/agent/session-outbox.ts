// The outbox's table in the AgentObject's SQLite (protocol/agent-outbox.ts holds the queues and the
// rules): waiting items as rows, and the last sequence number reserved.

import type { OutboxRows, Stamped } from "../../protocol/agent-outbox";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_outbox (seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, item TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS session_outbox_session ON session_outbox (session_id, seq);
CREATE TABLE IF NOT EXISTS session_outbox_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
`;

export class SessionOutboxTable implements OutboxRows {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
  }

  load(): ReturnType<OutboxRows["load"]> {
    const reservedUpTo = this.sql.exec<{ last: number }>("SELECT last FROM session_outbox_seq WHERE id = 1").toArray()[0]?.last ?? 0;
    const rows = this.sql
      .exec<{ session_id: string; item: string; attempts: number }>("SELECT session_id, item, attempts FROM session_outbox ORDER BY seq")
      .toArray()
      .map((row) => {
        // Rows hold one item (older objects) or a batch of items.
        const parsed = JSON.parse(row.item) as Stamped | Stamped[];
        return { sessionId: row.session_id, items: Array.isArray(parsed) ? parsed : [parsed], attempts: row.attempts };
      });
    return { reservedUpTo, rows };
  }

  reserve(last: number): void {
    this.sql.exec("INSERT INTO session_outbox_seq (id, last) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET last = excluded.last", last);
  }

  insert(sessionId: string, items: Stamped[], attempts: number): void {
    const last = items.at(-1);
    if (!last) return;
    this.sql.exec(
      "INSERT INTO session_outbox (seq, session_id, item, attempts) VALUES (?, ?, ?, ?)",
      last.seq,
      sessionId,
      JSON.stringify(items),
      attempts,
    );
  }

  deleteUpTo(sessionId: string, seq: number): void {
    this.sql.exec("DELETE FROM session_outbox WHERE session_id = ? AND seq <= ?", sessionId, seq);
  }

  setAttempts(sessionId: string, attempts: number): void {
    this.sql.exec("UPDATE session_outbox SET attempts = ? WHERE session_id = ?", attempts, sessionId);
  }
}
