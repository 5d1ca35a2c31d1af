// The one timer of a pure table of things awaited (protocol/pending-table.ts, and the channel's:
// protocol/object-channel.ts): the clock read and the timer armed here, the rules there. The timer is
// armed exactly while something waits (a pending timer would keep an object from hibernating), never
// later than the oldest entry's deadline.

import { PendingTable, type Settled } from "../protocol/pending-table";

export type { Settled };

/** A timer that follows a machine's next deadline and ticks it then. */
export class DeadlineTimer {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private armedFor: number | undefined;

  constructor(
    private readonly nextDeadline: () => number | undefined,
    private readonly tick: (now: number) => void,
  ) {}

  /** Runs an operation on the machine, then follows its next deadline (also when the operation throws). */
  after<T>(operation: () => T): T {
    try {
      return operation();
    } finally {
      this.follow();
    }
  }

  /**
   * Keeps the one timer armed while something waits, never later than the next deadline, and none
   * while nothing waits. A timer armed earlier is kept (answers usually come oldest first, and moving
   * the timer on at each would cost a timer per answer): when it fires, it times out what is due and
   * arms itself for the next deadline.
   */
  follow(): void {
    const at = this.nextDeadline();
    if (at !== undefined && this.armedFor !== undefined && this.armedFor <= at) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = at;
    if (at === undefined) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.armedFor = undefined;
        this.after(() => this.tick(Date.now()));
      },
      Math.max(0, at - Date.now()),
    );
  }
}

export class Pending<K, L, V> {
  private readonly table: PendingTable<K, L, V>;
  private readonly timer: DeadlineTimer;

  constructor(timeoutMs: number) {
    const table = (this.table = new PendingTable(timeoutMs));
    this.timer = new DeadlineTimer(
      () => table.nextDeadline(),
      (now) => table.tick(now),
    );
  }

  get size(): number {
    return this.table.size;
  }

  /** Waits for `key`'s answer on `link`; false (and nothing added) when the key waits already. */
  add(key: K, link: L, settle: (outcome: Settled<V>) => void): boolean {
    return this.timer.after(() => this.table.add(key, link, Date.now(), settle));
  }

  answer(key: K, value: V): boolean {
    return this.timer.after(() => this.table.answer(key, value));
  }

  close(link: L, reason: string): number {
    return this.timer.after(() => this.table.close(link, reason));
  }

  closeAll(reason: string): number {
    return this.timer.after(() => this.table.closeAll(reason));
  }
}
