// The pending table (protocol/pending-table.ts), model-based: random interleavings of add, answer,
// tick (the clock may step back), close of one link and close-all, some entries' callbacks calling
// back into the table (answering another entry, adding a new one), checked after every step against
// a plain list of what waits. Checked: every entry is settled exactly once (after a last close-all),
// each operation settles exactly the entries the model says, oldest first and with the right
// outcome; nothing is settled after it was settled once; duplicate adds and answers to keys not held
// are ignored; `nextDeadline` is the oldest entry's. FUZZ_RUNS sets the number of cases (2,000).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PendingTable, type Settled } from "../../protocol/pending-table";

const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
const TIMEOUT = 100;
const KEYS = 6;
const LINKS = ["a", "b", "c"];

type Step =
  | { op: "add"; key: number; link: number; reenter: number }
  | { op: "answer"; key: number }
  | { op: "tick"; dt: number }
  | { op: "close"; link: number }
  | { op: "closeAll" };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant("add" as const),
    key: fc.nat(KEYS - 1),
    link: fc.nat(LINKS.length - 1),
    reenter: fc.nat(5),
  }),
  fc.record({ op: fc.constant("answer" as const), key: fc.nat(KEYS + 1) }),
  fc.record({ op: fc.constant("tick" as const), dt: fc.integer({ min: -30, max: 2 * TIMEOUT }) }),
  fc.record({ op: fc.constant("close" as const), link: fc.nat(LINKS.length - 1) }),
  fc.constant({ op: "closeAll" as const }),
);

interface Waiting {
  /** The n-th successful add, so each entry is told apart from a later one under the same key. */
  id: number;
  key: number;
  link: string;
  deadline: number;
}

/** One run: the table, the model, and the log of what was settled. */
class World {
  readonly table = new PendingTable<number, string, string>(TIMEOUT);
  private now = 1000;
  private lastDeadline = -Infinity;
  private added = 0;
  /** The model: what waits, oldest first. */
  private waiting: Waiting[] = [];
  /** What the operation under way is to settle itself. */
  private settling = new Set<number>();
  /** Every settle call, in order: which entry, how. */
  settled: { id: number; outcome: Settled<string> }[] = [];
  private readonly ids = new Set<number>();

  run(s: Step): void {
    switch (s.op) {
      case "add":
        return this.add(s.key, LINKS[s.link] as string, s.reenter);
      case "answer":
        return this.expectSettled(
          () => this.table.answer(s.key, `answer ${s.key}`),
          (w) => w.key === s.key,
          { kind: "answered", value: `answer ${s.key}` },
        );
      case "tick":
        this.now += s.dt;
        return this.expectSettled(
          () => this.table.tick(this.now),
          (w) => w.deadline <= this.now,
          { kind: "timedOut" },
        );
      case "close": {
        const link = LINKS[s.link] as string;
        return this.expectSettled(
          () => this.table.close(link, `closed ${link}`),
          (w) => w.link === link,
          {
            kind: "closed",
            reason: `closed ${link}`,
          },
        );
      }
      case "closeAll":
        return this.closeAll();
    }
  }

  closeAll(): void {
    this.expectSettled(
      () => this.table.closeAll("all"),
      () => true,
      { kind: "closed", reason: "all" },
    );
  }

  /**
   * Adds an entry; with `reenter` 1 its callback answers the next key, with 2 it adds an entry under
   * KEYS (a key no step adds): what a callback does takes effect on its own, beside the operation.
   */
  private add(key: number, link: string, reenter: number): void {
    const holds = this.waiting.some((w) => w.key === key);
    const id = ++this.added;
    let calls = 0;
    const ok = this.table.add(key, link, this.now, (outcome) => {
      calls++;
      expect(calls, `entry ${id} settled twice`).toBe(1);
      this.settled.push({ id, outcome });
      if (!this.settling.has(id)) {
        // Not the operation's own: answered by another entry's callback, so it was waiting until now.
        expect(
          this.waiting.some((w) => w.id === id),
          `entry ${id} settled while not waiting`,
        ).toBe(true);
        expect(outcome.kind).toBe("answered");
        this.waiting = this.waiting.filter((w) => w.id !== id);
      }
      if (reenter === 1) this.table.answer((key + 1) % KEYS, "from a callback");
      if (reenter === 2) this.add(KEYS, link, 0);
    });
    expect(ok, `add of key ${key} (held: ${holds})`).toBe(!holds);
    if (!ok) return;
    this.lastDeadline = Math.max(this.lastDeadline, this.now + TIMEOUT);
    this.waiting.push({ id, key, link, deadline: this.lastDeadline });
    this.ids.add(id);
    this.checkTable();
  }

  /** Runs an operation that is to settle exactly the waiting entries that `matches`, oldest first, with `outcome`. */
  private expectSettled(operation: () => unknown, matches: (w: Waiting) => boolean, outcome: Settled<string>): void {
    const expected = this.waiting.filter(matches).map((w) => w.id);
    const outer = this.settling;
    this.settling = new Set(expected);
    this.waiting = this.waiting.filter((w) => !this.settling.has(w.id));
    const before = this.settled.length;
    operation();
    const ours = this.settled.slice(before).filter((s) => this.settling.has(s.id));
    this.settling = outer;
    expect(
      ours.map((s) => s.id),
      "settled, oldest first",
    ).toEqual(expected);
    for (const s of ours) expect(s.outcome).toEqual(outcome);
    this.checkTable();
  }

  private checkTable(): void {
    if (this.settling.size > 0) return; // inside an operation
    expect(this.table.size).toBe(this.waiting.length);
    expect(this.table.nextDeadline()).toBe(this.waiting[0]?.deadline);
  }

  /** After a last close-all: every entry added was settled exactly once. */
  checkAllSettledOnce(): void {
    const counts = new Map<number, number>();
    for (const s of this.settled) counts.set(s.id, (counts.get(s.id) ?? 0) + 1);
    for (const id of this.ids) expect(counts.get(id), `entry ${id}`).toBe(1);
    expect(counts.size).toBe(this.ids.size);
    expect(this.table.size).toBe(0);
  }
}

describe("pending table (model-based)", () => {
  it("settles every entry exactly once, each operation its own entries oldest first, over random interleavings", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const world = new World();
        for (const s of steps) world.run(s);
        world.closeAll();
        world.closeAll(); // a second close-all settles nothing
        world.checkAllSettledOnce();
      }),
      { numRuns: RUNS },
    );
  });
});

describe("pending table", () => {
  it("ignores an answer to a key it does not hold, and a second answer to one it settled", () => {
    const table = new PendingTable<number, string, string>(TIMEOUT);
    const outcomes: Settled<string>[] = [];
    table.add(1, "a", 0, (outcome) => outcomes.push(outcome));
    expect(table.answer(2, "foreign")).toBe(false);
    expect(table.answer(1, "first")).toBe(true);
    expect(table.answer(1, "second")).toBe(false);
    expect(table.tick(10 * TIMEOUT)).toBe(0);
    expect(table.close("a", "gone")).toBe(0);
    expect(outcomes).toEqual([{ kind: "answered", value: "first" }]);
  });

  it("times out the oldest entries first, and a clock stepping back cannot put a later entry's deadline first", () => {
    const table = new PendingTable<string, null, never>(TIMEOUT);
    const order: string[] = [];
    table.add("first", null, 500, () => order.push("first"));
    table.add("second", null, 400, () => order.push("second")); // the clock stepped back
    expect(table.nextDeadline()).toBe(600);
    expect(table.tick(599)).toBe(0);
    expect(table.tick(600)).toBe(2);
    expect(order).toEqual(["first", "second"]);
    expect(table.nextDeadline()).toBeUndefined();
  });

  it("settles every entry of a close even when one callback throws, then throws its error", () => {
    const table = new PendingTable<number, string, never>(TIMEOUT);
    const settled: number[] = [];
    table.add(1, "a", 0, () => {
      settled.push(1);
      throw new Error("the first owner failed");
    });
    table.add(2, "a", 0, () => settled.push(2));
    expect(() => table.close("a", "gone")).toThrow("the first owner failed");
    expect(settled).toEqual([1, 2]);
    expect(table.size).toBe(0);
  });
});
