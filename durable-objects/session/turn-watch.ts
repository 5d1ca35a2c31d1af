// When a running turn last made progress: a word from the agent, a person's answer, the prompt
// itself. The session's alarm ends a turn that makes none for the tenant's turnIdleMs, unless it
// is waiting on a person (a pending permission request has its own deadline).
//
// The time is exact in memory. It costs no row of its own when the progress writes one anyway: an
// agent frame that is logged (the log entry's `at`; a merged chunk moves it on), a person's answer
// (the request's `resolved_at`). Only a batch from the agent that writes no log entry (an answer to
// a client's request, a routed fs/terminal request) marks it in `turn_watch`, at most once a second.
// After a restart the time is read back as the newest of these, so it may be up to a second older:
// the turn ends no earlier than turnIdleMs after the last progress, and at most IDLE_GRAIN_MS + 1 s later.

/** How often, at most, a mark is written. */
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

  /** `sql`: the session's, with the table `turn_watch` (store-migrations.ts). */
  constructor(private readonly sql: SqlStorage) {}

  /** Progress now (in memory: see persist). */
  touch(now = Date.now()): void {
    this.latest = now;
  }

  /** After a batch from the agent: the progress is marked only if no log entry recorded it within WRITE_EVERY_MS. */
  persist(store: SessionStore): void {
    const now = this.latest;
    if (now === undefined || now - Math.max(this.written, store.lastLogWriteAt) < WRITE_EVERY_MS) return;
    this.written = now;
    this.sql.exec("INSERT INTO turn_watch (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at", now);
  }

  /** The last progress: in memory, or after a restart the newest of the mark, the log's newest entry and this turn's answers. */
  lastProgressAt(store: SessionStore): number | undefined {
    if (this.latest !== undefined) return this.latest;
    const turn = store.turn;
    const marks = [
      this.sql.exec<{ at: number }>("SELECT at FROM turn_watch WHERE id = 1").toArray()[0]?.at,
      store.newestAt(),
      turn.state === "idle" ? undefined : store.lastResolvedAt(turn.fromSeq ?? 0),
    ].filter((at): at is number => at !== undefined);
    this.latest = marks.length > 0 ? Math.max(...marks) : undefined;
    return this.latest;
  }

  /** When a running turn that waits on no person has gone too long without progress (tenant's turnIdleMs). */
  idleAt(store: SessionStore): number | undefined {
    const turn = store.turn;
    const meta = store.meta;
    if (turn.state === "idle" || !meta || store.hasPending()) return undefined;
    const at = Math.max(turn.startedAt, this.lastProgressAt(store) ?? 0) + limitsOf(meta.limits).turnIdleMs;
    return Math.ceil(at / IDLE_GRAIN_MS) * IDLE_GRAIN_MS;
  }
}
