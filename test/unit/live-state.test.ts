// The session's published state (protocol/live-state.ts): one write in flight, changes of one step
// written once, the last write carries the current state once everything settles, no repeats.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type LiveState, LiveStatePublisher } from "../../protocol/live-state";

/** A publisher over a state the test sets, a queue of "later" callbacks and writes it settles by hand. */
function harness() {
  let state: LiveState = { turn: "idle", waiting: 0 };
  const later: (() => void)[] = [];
  const writes: { state: LiveState; settle(ok: boolean): void }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const publisher = new LiveStatePublisher({
    read: () => state,
    write: (s) =>
      new Promise<void>((resolve, reject) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        writes.push({
          state: { ...s },
          settle: (ok) => {
            inFlight--;
            if (ok) resolve();
            else reject(new Error("D1 failed"));
          },
        });
      }),
    later: (fn) => later.push(fn),
  });
  return {
    publisher,
    writes,
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
  });

  it("writes the changes of one step once, with the state after the step", () => {
    const h = harness();
    h.set({ turn: "running", waiting: 0 });
    h.set({ turn: "running", waiting: 1 });
    expect(h.writes).toHaveLength(0);
    h.runLater();
    expect(h.writes.map((w) => w.state)).toEqual([{ turn: "running", waiting: 1 }]);
  });

  it("does not write a state equal to the last one written", async () => {
    const h = harness();
    h.set({ turn: "running", waiting: 0 });
    h.runLater();
    h.writes[0]!.settle(true);
    await flush();
    h.set({ turn: "running", waiting: 0 });
    h.runLater();
    expect(h.writes).toHaveLength(1);
  });

  it("writes again after a failed write, at the next change", async () => {
    const h = harness();
    h.set({ turn: "running", waiting: 0 });
    h.runLater();
    h.writes[0]!.settle(false);
    await flush();
    h.set({ turn: "running", waiting: 0 });
    h.runLater();
    expect(h.writes.map((w) => w.state)).toEqual([
      { turn: "running", waiting: 0 },
      { turn: "running", waiting: 0 },
    ]);
  });

  it("property: one write at a time, no write repeats a successful one, and once all settle the last write is the current state", async () => {
    const states = fc.record({ turn: fc.constantFrom("idle", "running", "cancelling" as const), waiting: fc.nat(3) });
    const step = fc.oneof(
      states.map((s) => ({ type: "change" as const, s })),
      fc.constant({ type: "later" as const }),
      fc.boolean().map((ok) => ({ type: "settle" as const, ok })),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const h = harness();
        const outcomes: boolean[] = [];
        const settleNext = async (ok: boolean) => {
          h.writes[outcomes.length]!.settle(ok);
          outcomes.push(ok);
          await flush();
        };
        for (const s of steps) {
          if (s.type === "change") h.set(s.s);
          else if (s.type === "later") h.runLater();
          else if (outcomes.length < h.writes.length) await settleNext(s.ok);
        }
        // Quiesce: one more change at the current state (what retries a failed write), then every write succeeds.
        h.set(h.state);
        for (let i = 0; i < 100; i++) {
          h.runLater();
          if (outcomes.length === h.writes.length) break;
          await settleNext(true);
        }
        expect(outcomes.length, "every write settled").toBe(h.writes.length);
        expect(h.maxInFlight).toBeLessThanOrEqual(1);
        const last = h.writes.at(-1);
        if (last) expect(last.state).toEqual(h.state);
        else expect(h.state, "nothing written only while nothing ever differed from idle").toEqual({ turn: "idle", waiting: 0 });
        for (let i = 1; i < h.writes.length; i++)
          if (outcomes[i - 1]) expect(h.writes[i]!.state, "no write repeats a successful one").not.toEqual(h.writes[i - 1]!.state);
      }),
      { numRuns: 300 },
    );
  });
});
