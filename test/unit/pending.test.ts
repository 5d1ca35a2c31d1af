// The pending table's one timer (durable-objects/pending.ts), on vitest's fake clock: armed exactly
// while something waits, for the oldest entry's deadline, and re-armed for the next one.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Pending, type Settled } from "../../durable-objects/pending";

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(10_000);
});
afterEach(() => {
  vi.useRealTimers();
});

describe("pending: the one timer", () => {
  it("is armed only while something waits, and cleared by the last answer (a pending timer would keep an object awake)", () => {
    const pending = new Pending<number, string, string>(1000);
    expect(vi.getTimerCount()).toBe(0);
    pending.add(1, "a", () => undefined);
    pending.add(2, "a", () => undefined);
    expect(vi.getTimerCount()).toBe(1);
    pending.answer(1, "one");
    expect(vi.getTimerCount()).toBe(1);
    pending.answer(2, "two");
    expect(vi.getTimerCount()).toBe(0);
    pending.add(3, "b", () => undefined);
    pending.close("b", "gone");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("times out each entry at its own deadline, oldest first, and re-arms for the next", () => {
    const pending = new Pending<string, null, never>(1000);
    const ended: [string, string, number][] = [];
    const track = (key: string) => (outcome: Settled<never>) => ended.push([key, outcome.kind, Date.now()]);
    pending.add("first", null, track("first"));
    vi.advanceTimersByTime(400);
    pending.add("second", null, track("second"));
    vi.advanceTimersByTime(599);
    expect(ended).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(ended).toEqual([["first", "timedOut", 11_000]]);
    expect(pending.size).toBe(1);
    vi.advanceTimersByTime(400);
    expect(ended).toEqual([
      ["first", "timedOut", 11_000],
      ["second", "timedOut", 11_400],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("times out the next entry at its own deadline when the oldest is answered first (not early, not late)", () => {
    const pending = new Pending<string, null, string>(1000);
    const ended: string[] = [];
    pending.add("first", null, (outcome) => ended.push(`first ${outcome.kind}`));
    vi.advanceTimersByTime(500);
    pending.add("second", null, (outcome) => ended.push(`second ${outcome.kind}`));
    pending.answer("first", "yes");
    vi.advanceTimersByTime(999);
    expect(ended).toEqual(["first answered"]);
    vi.advanceTimersByTime(1);
    expect(ended).toEqual(["first answered", "second timedOut"]);
  });

  it("arms one timer for a run of entries answered oldest first (no timer per answer)", () => {
    const armed = vi.spyOn(globalThis, "setTimeout");
    const pending = new Pending<number, null, string>(1000);
    for (let n = 0; n < 100; n++) pending.add(n, null, () => undefined);
    for (let n = 0; n < 100; n++) pending.answer(n, "ok");
    expect(armed).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
    armed.mockRestore();
  });
});
