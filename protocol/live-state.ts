// What the tenant's session list shows of a live session — its turn and the permission requests
// waiting on a person — published by the SessionObject to the D1 sessions index whenever it changes,
// so one list call (GET /v1/sessions, the console's badges) tells every session's state without
// waking any object.
//
// Guarantees (test/unit/live-state.test.ts, a property over changes, completions and failures):
// - At most one write is in flight per session, so writes land in the order of the changes.
// - Changes made before the port's `later` runs are written once (read then, not as they happen), and
//   not at all when the state is back to the one last written (a request asked and answered at once).
// - Once changes stop and the writes settle, the last write made carries the current state, unless
//   that write failed; a failed write is tried again at the next change.
// - A state equal to the one last written is not written again.

type TurnShown = "idle" | "running" | "cancelling";

export interface LiveState {
  turn: TurnShown;
  /** Permission requests asked of people and not yet answered. */
  waiting: number;
}

export interface LiveStatePort {
  /** The session's state now. */
  read(): LiveState | undefined;
  /** Writes it to the index; rejects when the write failed. */
  write(state: LiveState): Promise<void>;
  /** Runs `fn` later: after the current step at the earliest (the session waits LIVE_INDEX_MS, live-index.ts). */
  later(fn: () => void): void;
}

export class LiveStatePublisher {
  private written: LiveState | undefined;
  private inFlight = false;
  private scheduled = false;
  private again = false;

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

  private publish(): void {
    const state = this.port.read();
    if (!state || sameState(state, this.written)) return;
    this.inFlight = true;
    this.port.write(state).then(
      () => this.settled(state),
      () => this.settled(undefined),
    );
  }

  private settled(written: LiveState | undefined): void {
    this.written = written;
    this.inFlight = false;
    if (this.again) {
      this.again = false;
      this.changed();
    }
  }
}

function sameState(a: LiveState, b: LiveState | undefined): boolean {
  return b !== undefined && a.turn === b.turn && a.waiting === b.waiting;
}
