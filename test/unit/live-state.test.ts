// The session's published state (protocol/live-state.ts): one write in flight, changes of one step
// written once, no repeats; and the index converges to the session's state whatever happens to the
// instance (a crash inside the window or mid-write, a write that fails, a dead instance's write that
// lands late), once the alarm runs what is owed and D1 takes writes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type LiveRecord, type LiveState, LiveStatePublisher, OWED_MS, RETRY_MS } from "../../protocol/live-state";

interface Write {
  state: LiveState;
  version: number;
  /** The instance that sent it died: its callbacks never run, but D1 may still take it. */
  orphaned: boolean;
  settle(ok: boolean): void;
}

/** A session over a durable record and a D1 row (kept only over an older version); instances can crash. */
function harness() {
  let state: LiveState = { turn: "idle", waiting: 0 };
  let record: LiveRecord = { publishedVersion: 0, version: 0 };
  const d1 = { state: { turn: "idle", waiting: 0 } as LiveState, version: 0 };
  let later: (() => void)[] = [];
  const writes: Write[] = [];
  let now = 1000;
  let maxInFlight = 0;
  const inFlight = () => writes.filter((w) => !w.orphaned && !settled.has(w)).length;
  const settled = new Set<Write>();

  const instance = () =>
    new LiveStatePublisher({
      read: () => state,
      load: () => record,
      save: (r) => {
        record = { ...r };
      },
      write: (s, version) =>
        new Promise<void>((resolve, reject) => {
          const w: Write = {
            state: { ...s },
            version,
            orphaned: false,
            settle: (ok) => {
              settled.add(w);
              if (ok && version > d1.version) Object.assign(d1, { state: { ...s }, version });
              if (w.orphaned) return;
              if (ok) resolve();
              else reject(new Error("D1 failed"));
            },
          };
          writes.push(w);
          maxInFlight = Math.max(maxInFlight, inFlight());
        }),
      later: (fn) => later.push(fn),
      settled: () => undefined,
      now: () => now,
    });

  let publisher = instance();
  return {
    writes,
    d1,
    get publisher() {
      return publisher;
    },
    set(next: LiveState) {
      state = next;
      publisher.changed();
    },
    get state() {
      return state;
    },
    runLater() {
      for (const fn of later.splice(0)) fn();
    },
    /** The instance ends (eviction, restart, crash): its timer and callbacks are gone; its writes may still land. */
    crash() {
      later = [];
      for (const w of writes) if (!settled.has(w)) w.orphaned = true;
      publisher = instance();
      publisher.resume();
    },
    pending: () => writes.filter((w) => !settled.has(w)),
    tick(ms: number) {
      now += ms;
    },
    get maxInFlight() {
      return maxInFlight;
    },
  };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the session's published state", () => {
  it("writes nothing when the state is back to the one written before `later` runs (a request asked and answered at once)", async () => {
    const h = harness();
    h.set({ turn: "running", waiting: 0 });
    h.runLater();
    expect(h.writes).toHaveLength(1);
    h.writes[0]!.settle(true);
    await flush();
    h.set({ turn: "running", waiting: 1 });
    h.set({ turn: "running", waiting: 0 });
    h.runLater();
    expect(h.writes).toHaveLength(1);
    expect(h.publisher.dueAt()).toBeUndefined();
  });

  it("writes the changes of one step once, with the state after the step", () => {
    const h = harness();
    h.set({ turn: "running", waiting: 0 });
    h.set({ turn: "running", waiting: 1 });
    expect(h.writes).toHaveLength(0);
    h.runLater();
    expect(h.writes.map((w) => w.state)).toEqual([{ turn: "running", waiting: 1 }]);
  });

  it("a change the instance never wrote (it ended inside the window) is owed: the alarm is due, and the next instance writes it", () => {
    const h = harness();
    h.set({ turn: "running", waiting: 1 });
    expect(h.publisher.dueAt()).toBe(1000 + OWED_MS);
    h.crash();
    h.runLater();
    expect(h.writes.map((w) => w.state)).toEqual([{ turn: "running", waiting: 1 }]);
  });

  it("a failed write is owed even when the state went back to the one D1 took (it may have landed): the alarm retries it", async () => {
    const h = harness();
    h.set({ turn: "running", waiting: 1 });
    h.runLater();
    h.writes[0]!.settle(false);
    await flush();
    h.set({ turn: "idle", waiting: 0 });
    h.runLater();
    // Back to the state D1 confirmed (the default row), but the failed write may have landed: written again.
    expect(h.writes.map((w) => w.state)).toEqual([
      { turn: "running", waiting: 1 },
      { turn: "idle", waiting: 0 },
    ]);
  });

  it("the alarm after a failure is due RETRY_MS after it", async () => {
    const h = harness();
    h.set({ turn: "running", waiting: 1 });
    h.runLater();
    h.tick(7);
    h.writes[0]!.settle(false);
    await flush();
    expect(h.publisher.dueAt()).toBe(1007 + RETRY_MS);
    void h.publisher.flush();
    expect(h.writes).toHaveLength(2);
  });

  it("a dead instance's write that lands after the next instance's does not undo it (versions)", async () => {
    const h = harness();
    h.set({ turn: "running", waiting: 1 });
    h.runLater();
    h.crash(); // the write is in flight, its instance gone
    h.set({ turn: "idle", waiting: 0 });
    h.runLater();
    const [old, next] = h.writes;
    next!.settle(true);
    old!.settle(true);
    await flush();
    expect(h.d1.state).toEqual({ turn: "idle", waiting: 0 });
  });

  it("property: one write in flight per instance, no write repeats a confirmed one with nothing begun since, and D1 converges to the session's state after any crashes and failures", async () => {
    const states = fc.record({ turn: fc.constantFrom("idle", "running", "cancelling" as const), waiting: fc.nat(3) });
    const step = fc.oneof(
      states.map((s) => ({ type: "change" as const, s })),
      fc.constant({ type: "later" as const }),
      fc.record({ ok: fc.boolean(), pick: fc.nat() }).map((x) => ({ type: "settle" as const, ...x })),
      fc.constant({ type: "crash" as const }),
      fc.constant({ type: "alarm" as const }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), fc.array(fc.boolean(), { maxLength: 10 }), async (steps, lateLands) => {
        const h = harness();
        for (const s of steps) {
          if (s.type === "change") h.set(s.s);
          else if (s.type === "later") h.runLater();
          else if (s.type === "crash") h.crash();
          else if (s.type === "alarm") {
            if (h.publisher.dueAt() !== undefined) void h.publisher.flush();
          } else {
            const pending = h.pending();
            if (pending.length > 0) pending[s.pick % pending.length]!.settle(s.ok);
            await flush();
          }
        }
        expect(h.maxInFlight).toBeLessThanOrEqual(1);
        // Quiesce: the dead instances' writes land or are lost; then the timer and the alarm run
        // what is owed while D1 takes every write.
        for (const [i, w] of h
          .pending()
          .filter((p) => p.orphaned)
          .entries())
          w.settle(lateLands[i] ?? false);
        for (let i = 0; i < 100; i++) {
          h.runLater();
          const live = h.pending();
          if (live.length > 0) {
            for (const w of live) w.settle(true);
            await flush();
            continue;
          }
          if (h.publisher.dueAt() === undefined) break;
          void h.publisher.flush();
        }
        expect(h.pending(), "every write settled").toEqual([]);
        expect(h.publisher.dueAt(), "nothing owed").toBeUndefined();
        expect(h.d1.state, "D1 holds the session's state").toEqual(h.state);
      }),
      { numRuns: 500 },
    );
  });
});
