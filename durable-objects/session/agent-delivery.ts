// Exactly-once delivery from the AgentObject. It re-sends what it has not seen taken (after a restart
// or a failed call), so the session remembers the highest item number it has applied and skips the
// rest. Items are numbered by the AgentObject in the order it accepted them, and arrive in that order.

import type { FromAgent } from "./agent-link";

export class AgentDelivery {
  private last: number;

  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS agent_delivery (id INTEGER PRIMARY KEY CHECK (id = 1), last_seq INTEGER NOT NULL)");
    this.last = sql.exec<{ last_seq: number }>("SELECT last_seq FROM agent_delivery WHERE id = 1").toArray()[0]?.last_seq ?? 0;
  }

  /**
   * True the first time an item is seen, and it is then recorded as taken: it is recorded before it
   * is applied, so an item whose handling throws is not applied again and again.
   */
  take(item: FromAgent): boolean {
    if (item.seq === undefined) return true;
    if (item.seq <= this.last) return false;
    this.last = item.seq;
    this.sql.exec(
      "INSERT INTO agent_delivery (id, last_seq) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET last_seq = excluded.last_seq",
      item.seq,
    );
    return true;
  }
}
