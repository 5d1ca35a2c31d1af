// What the tenant's session list shows of a live session — its turn and the permission requests
// waiting on a person — published by the SessionObject to the D1 sessions index whenever it changes,
// so one list call (GET /v1/sessions, the console's badges, "waiting on you") tells every session's
// state without waking any object.
//
// The property (decision 0049): the index converges to the session's own state, by construction.
// The session keeps, in its own storage, the state D1 last took (`record.published`, under
// `publishedVersion`) and the version of the last write it began (`version`). It *owes* a write
// whenever its state differs from the one D1 took, or a write was begun and never confirmed (it may
// have landed, or land later): the debt is not a mark that could be lost, it is the difference
// between durable things. Whatever ends an instance (an eviction or a restart inside
// the quarter-second window, a crash mid-write, a write D1 refused), the debt stays and something runs
// it: the live instance's timer (`later`, the usual way), the next instance's start (`resume`), or the
// session's alarm, due `OWED_MS` after the debt was seen or `RETRY_MS` after a failed write
// (`dueAt`, which the session puts into its alarm; the alarm calls `flush`). So once changes stop and
// D1 takes writes again, the index holds the session's state within OWED_MS, usually LIVE_INDEX_MS.
//
// Every write carries a version, persisted before it is sent and only ever higher; D1 keeps a write
// only over an older version, so a write of a dead instance that lands late cannot undo a newer one.
//
// And as before (test/unit/live-state.test.ts, a property over changes, completions and failures):
// - At most one write is in flight per instance, so writes land in the order of the changes.
// - Changes made before the port's `later` runs are written once (read then, not as they happen), and
//   not at all when the state is back to the one D1 holds (a request asked and answered at once).
// - A state equal to the one D1 holds (confirmed, with no write begun since) is not written again.

type TurnShown = "idle" | "running" | "cancelling";

export interface LiveState {
  turn: TurnShown;
  /** Permission requests asked of people and not yet answered. */
  waiting: number;
}

/** Kept in the session's storage: the state D1 last took (and its version), and the version of the last write begun. */
export interface LiveRecord {
  published?: LiveState;
  publishedVersion: number;
  version: number;
}

export interface LiveStatePort {
  /** The session's state now. */
  read(): LiveState | undefined;
  /** The durable record (session storage). */
  load(): LiveRecord;
  save(record: LiveRecord): void;
  /** Writes it to the index under `version`; rejects when the write failed. */
  write(state: LiveState, version: number): Promise<void>;
  /** Runs `fn` later: after the current step at the earliest (the session waits LIVE_INDEX_MS, live-index.ts). */
  later(fn: () => void): void;
  /** A write settled (the session sets its alarm again from `dueAt`). */
  settled(): void;
  now(): number;
}

/** An owed write the timer did not run (a lost instance): the alarm runs it this long after it was seen. */
export const OWED_MS = 10_000;
/** After a failed write, the alarm tries again this much later (and so does any later change). */
export const RETRY_MS = 5_000;

export class LiveStatePublisher {
  private inFlight = false;
  private scheduled = false;
  private again = false;
  private owedSince: number | undefined;
  private failedAt: number | undefined;
  /** The write in flight, settled (never rejects). */
  private writing: Promise<void> | undefined;

  constructor(private readonly port: LiveStatePort) {}

  /** The state may have changed: publish it after the current step, once. */
  changed(): void {
    if (this.inFlight) {
      this.again = true;
      return;
    }
    if (this.scheduled) return;
    this.scheduled = true;
    this.port.later(() => {
      this.scheduled = false;
      this.publish();
    });
  }

  /** A new instance: whatever an earlier one owed is owed still (compared with the durable record). */
  resume(): void {
    this.changed();
  }

  /** The alarm: write what is owed now, without waiting for the window; resolves when the write in flight settled. */
  flush(): Promise<void> {
    this.publish();
    return this.writing ?? Promise.resolve();
  }

  /** Owed: the session's state differs from the one D1 last took, or a write begun since was never confirmed. */
  owed(): boolean {
    const state = this.port.read();
    return state !== undefined && owes(state, this.port.load());
  }

  /** When the alarm must run what is owed: undefined when nothing is, or a write is in flight. */
  dueAt(): number | undefined {
    if (this.inFlight) return undefined;
    if (!this.owed()) {
      this.owedSince = undefined;
      return undefined;
    }
    if (this.failedAt !== undefined) return this.failedAt + RETRY_MS;
    this.owedSince ??= this.port.now();
    return this.owedSince + OWED_MS;
  }

  private publish(): void {
    // The alarm and the timer can both come: one write at a time, the other after it.
    if (this.inFlight) {
      this.again = true;
      return;
    }
    const state = this.port.read();
    const record = this.port.load();
    if (!state || !owes(state, record)) return;
    const version = record.version + 1;
    this.port.save({ ...record, version });
    this.inFlight = true;
    this.writing = this.port.write(state, version).then(
      () => {
        this.port.save({ published: state, publishedVersion: version, version });
        this.failedAt = undefined;
        this.settle();
      },
      () => {
        this.failedAt = this.port.now();
        this.settle();
      },
    );
  }

  private settle(): void {
    this.inFlight = false;
    this.writing = undefined;
    if (this.again) {
      this.again = false;
      this.changed();
    }
    this.port.settled();
  }
}

function owes(state: LiveState, record: LiveRecord): boolean {
  return record.version !== record.publishedVersion || !sameState(state, record.published);
}

function sameState(a: LiveState, b: LiveState | undefined): boolean {
  return b !== undefined && a.turn === b.turn && a.waiting === b.waiting;
}
