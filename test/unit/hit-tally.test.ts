// The rule-hit tally both the session's rules cache and the RulesObject keep (protocol/hit-tally.ts).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HitTally } from "../../protocol/hit-tally";

const adds = fc.array(fc.tuple(fc.constantFrom("r1", "r2", "r3"), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 0, max: 1e12 })), {
  maxLength: 60,
});

describe("HitTally", () => {
  it("a batch holds, per rule, the sum of the counts and the latest time, whatever order they came in", () => {
    fc.assert(
      fc.property(adds, (list) => {
        const tally = new HitTally();
        for (const [rule, count, at] of list) tally.add(rule, count, at);
        const batch = tally.take();
        for (const rule of ["r1", "r2", "r3"]) {
          const mine = list.filter(([r]) => r === rule);
          if (mine.length === 0) expect(batch.has(rule)).toBe(false);
          else
            expect(batch.get(rule)).toEqual({
              count: mine.reduce((sum, [, c]) => sum + c, 0),
              at: Math.max(...mine.map(([, , at]) => at)),
            });
        }
      }),
    );
  });

  it("take empties the tally: nothing is sent twice, and what is added after goes in the next batch", () => {
    const tally = new HitTally();
    tally.add("r1", 2, 10);
    expect(tally.size).toBe(1);
    const first = tally.take();
    expect(tally.size).toBe(0);
    expect(tally.take().size).toBe(0);
    tally.add("r1", 1, 5);
    expect(tally.take().get("r1")).toEqual({ count: 1, at: 5 });
    expect(first.get("r1")).toEqual({ count: 2, at: 10 }); // a taken batch is not changed by later adds
  });
});
