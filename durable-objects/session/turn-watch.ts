// When a running turn last made progress: a word from the agent, a person's answer, the prompt
// itself. The session's alarm ends a turn that makes none for the tenant's turnIdleMs, unless it
// is waiting on a person (a pending permission request has its own deadline).

import { limitsOf } from "../../protocol/tenant-limits";
import type { SessionStore } from "./store";

export class TurnWatch {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS turn_watch (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL)");
  }

  touch(now = Date.now()): void {
    this.sql.exec("INSERT INTO turn_watch (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at", now);
  }

  lastProgressAt(): number | undefined {
    return this.sql.exec<{ at: number }>("SELECT at FROM turn_watch WHERE id = 1").toArray()[0]?.at;
  }

  /** When a running turn that waits on no person has gone too long without progress (tenant's turnIdleMs). */
  idleAt(store: SessionStore): number | undefined {
    const turn = store.turn;
    const meta = store.meta;
    if (turn.state === "idle" || !meta || store.hasPending()) return undefined;
    return Math.max(turn.startedAt, this.lastProgressAt() ?? 0) + limitsOf(meta.limits).turnIdleMs;
  }
}
