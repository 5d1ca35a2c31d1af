// When a running turn last made progress: a word from the agent, a person's answer, the prompt
// itself. The session's alarm ends a turn that makes none for the tenant's turnIdleMs, unless it
// is waiting on a person (a pending permission request has its own deadline).
//
// The time is exact in memory and written at most once a second (a stream of updates would
// otherwise write a row per batch): after a restart it may be up to that much older. The turn ends
// no earlier than turnIdleMs after the last progress, and at most IDLE_GRAIN_MS later.

/** How often, at most, a touch is written. */
const WRITE_EVERY_MS = 1000;
/**
 * The idle time is rounded up to this grain, so a stream of progress moves the session's alarm a
 * few times a second rather than on every frame (setting it holds the next output behind it).
 */
const IDLE_GRAIN_MS = 250;

import { limitsOf } from "../../protocol/tenant-limits";
import type { SessionStore } from "./store";

export class TurnWatch {
  private latest: number | undefined;
  private written = 0;

  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS turn_watch (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL)");
  }

  touch(now = Date.now()): void {
    this.latest = now;
    if (now - this.written < WRITE_EVERY_MS) return;
    this.written = now;
    this.sql.exec("INSERT INTO turn_watch (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at", now);
  }

  lastProgressAt(): number | undefined {
    return this.latest ?? this.sql.exec<{ at: number }>("SELECT at FROM turn_watch WHERE id = 1").toArray()[0]?.at;
  }

  /** When a running turn that waits on no person has gone too long without progress (tenant's turnIdleMs). */
  idleAt(store: SessionStore): number | undefined {
    const turn = store.turn;
    const meta = store.meta;
    if (turn.state === "idle" || !meta || store.hasPending()) return undefined;
    const at = Math.max(turn.startedAt, this.lastProgressAt() ?? 0) + limitsOf(meta.limits).turnIdleMs;
    return Math.ceil(at / IDLE_GRAIN_MS) * IDLE_GRAIN_MS;
  }
}
