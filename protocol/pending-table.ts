// What a socket between two objects has sent and not had answered yet: one table per socket kind,
// as vscode-jsonrpc's connection keeps one for its requests. Pure and synchronous: the caller passes
// the time in and arms one timer from `nextDeadline()` (durable-objects/pending.ts does both), and
// the entries' owners hear how each ended through the settle callback they gave. The model test
// (test/unit/pending-table.test.ts) drives it with random interleavings of every operation.
//
// The guarantees, and how:
// - Exactly once: every entry is settled once — answered, timed out, or closed (its link's close, or
//   `closeAll`) — and then forgotten: it is removed before its callback runs, so a second answer, a
//   later tick or close, or a callback that calls back into the table, finds nothing to settle again.
//   An answer for a key the table does not hold (answered already, never added, sent by an instance
//   before this one) is ignored.
// - Oldest first: an operation that settles several entries settles them in the order they were
//   added. Deadlines never decrease in that order (each is at least the one before it, so a clock
//   that steps back cannot reorder them): the overdue entries are always the oldest ones, and
//   `nextDeadline` is the oldest entry's.
// - One operation, one set: an operation settles exactly the entries that matched when it began;
//   what a callback adds meanwhile waits for a later operation. A callback that throws does not stop
//   the others: the first error is thrown once all are settled.

/** How an entry ended. */
export type Settled<V> = { kind: "answered"; value: V } | { kind: "timedOut" } | { kind: "closed"; reason: string };

interface Entry<L, V> {
  link: L;
  deadline: number;
  settle(outcome: Settled<V>): void;
}

export class PendingTable<K, L, V> {
  /** Oldest first (a Map keeps insertion order). */
  private readonly entries = new Map<K, Entry<L, V>>();
  private lastDeadline = -Infinity;

  /** `timeoutMs`: how long an entry may wait for its answer. */
  constructor(private readonly timeoutMs: number) {}

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Waits for `key`'s answer on `link` from `now`; false (and nothing added) when the key waits already. */
  add(key: K, link: L, now: number, settle: (outcome: Settled<V>) => void): boolean {
    if (this.entries.has(key)) return false;
    this.lastDeadline = Math.max(this.lastDeadline, now + this.timeoutMs);
    this.entries.set(key, { link, deadline: this.lastDeadline, settle });
    return true;
  }

  /** The answer for `key`: true if an entry waited for it (it is settled now), false if ignored. */
  answer(key: K, value: V): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    entry.settle({ kind: "answered", value });
    return true;
  }

  /** The time is `now`: every entry whose deadline has come times out. Returns how many did. */
  tick(now: number): number {
    const overdue: K[] = [];
    for (const [key, entry] of this.entries) {
      if (entry.deadline > now) break; // deadlines never decrease in insertion order
      overdue.push(key);
    }
    return this.settleAll(overdue, { kind: "timedOut" });
  }

  /** `link` closed: what waits on it is settled closed. Returns how many were. */
  close(link: L, reason: string): number {
    const keys: K[] = [];
    for (const [key, entry] of this.entries) if (entry.link === link) keys.push(key);
    return this.settleAll(keys, { kind: "closed", reason });
  }

  /** Every entry is settled closed (the table stays usable for what is added later). */
  closeAll(reason: string): number {
    return this.settleAll([...this.entries.keys()], { kind: "closed", reason });
  }

  /** When the next entry times out (the oldest's deadline); undefined when nothing waits. */
  nextDeadline(): number | undefined {
    for (const entry of this.entries.values()) return entry.deadline;
    return undefined;
  }

  /** Removes all of `keys` first, then settles them in order: a callback finds none of them left. */
  private settleAll(keys: K[], outcome: Settled<V>): number {
    const settled: Entry<L, V>[] = [];
    for (const key of keys) {
      const entry = this.entries.get(key);
      if (!entry) continue;
      this.entries.delete(key);
      settled.push(entry);
    }
    let failure: { error: unknown } | undefined;
    for (const entry of settled) {
      try {
        entry.settle(outcome);
      } catch (error) {
        failure ??= { error }; // the others are still settled; the first failure is thrown after
      }
    }
    if (failure) throw failure.error;
    return settled.length;
  }
}
