// What the edge holds of an agent's frames (protocol/agent-hold.ts), model-based: fast-check drives
// the hold with arrivals (notifications, requests, answers; small and large), a clock that moves, and
// a tenant share that grants, refuses for a while, or makes the hold wait for a lease. A model kept
// beside it says what must have happened. After every step:
// - what passed is, in order, exactly a prefix of what arrived and was not refused (order, no loss);
// - only a request is ever refused, and only when it would have taken the hold over its bound;
// - the frames that cost passed no faster than the bucket allows over any window (twice the rate at
//   once, then the rate), and each with a share the tenant granted;
// - the hold closed only when its bytes had stayed over the bound for sustainMs or reached the
//   ceiling, and it did close once either was true.
// At the end, with time and shares enough, everything not refused has passed (unless closed).
// FUZZ_RUNS sets the number of generated cases (1,000 by default).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AgentHold, type HoldClose, type HoldSettings, HostedSessions, type Share, utf8Bytes } from "../../protocol/agent-hold";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

type Kind = "notification" | "request" | "answer";
interface Frame {
  n: number;
  kind: Kind;
  bytes: number;
}
type ShareMode = "ok" | "retry" | "lease";
type Step = { op: "arrive"; kind: Kind; bytes: number; count: number } | { op: "tick"; ms: number } | { op: "share"; mode: ShareMode };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("arrive" as const),
      kind: fc.constantFrom<Kind>("notification", "notification", "request", "answer"),
      bytes: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 200, max: 3000 })),
      count: fc.integer({ min: 1, max: 40 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 1500 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("share" as const), mode: fc.constantFrom<ShareMode>("ok", "retry", "lease") }) },
);

const settingsArb: fc.Arbitrary<HoldSettings> = fc
  .record({
    rate: fc.integer({ min: 1, max: 50 }),
    maxBytes: fc.integer({ min: 500, max: 20_000 }),
    sustainMs: fc.integer({ min: 0, max: 5000 }),
    ceilingFactor: fc.integer({ min: 2, max: 4 }),
  })
  .map(({ ceilingFactor, ...s }) => ({ ...s, ceilingBytes: s.maxBytes * ceilingFactor }));

interface Run {
  passed: Frame[];
  refused: Frame[];
  closes: { at: number; why: HoldClose }[];
  /** When each frame that costs passed. */
  costedAt: number[];
  sharesGranted: number;
}

function run(settings: HoldSettings, steps: Step[]): void {
  let now = 0;
  let mode: ShareMode = "ok";
  const out: Run = { passed: [], refused: [], closes: [], costedAt: [], sharesGranted: 0 };
  const hold = new AgentHold<Frame>(
    settings,
    {
      share: (): Share => {
        if (mode === "ok") {
          out.sharesGranted++;
          return { ok: true };
        }
        return { ok: false, retryAfterMs: mode === "retry" ? 100 : undefined };
      },
      pass: (frame) => {
        out.passed.push(frame);
        if (frame.kind !== "answer") out.costedAt.push(now);
      },
      refuse: (frame) => out.refused.push(frame),
      close: (why) => out.closes.push({ at: now, why }),
    },
    now,
  );
  // The model: what arrived and was kept, the bytes held, since when they have been over the bound.
  const kept: Frame[] = [];
  let n = 0;
  let overSince: number | undefined;
  let closedAt: number | undefined;

  // Checked so far (the checks are incremental, so a long run stays linear).
  let checkedPasses = 0;
  let passedBytes = 0;
  let keptBytes = 0;
  let checkedCosted = 0;
  let least = Infinity;

  const check = (): void => {
    // Order and no loss: what passed is a prefix of what was kept.
    for (; checkedPasses < out.passed.length; checkedPasses++) {
      const frame = out.passed[checkedPasses] as Frame;
      expect(frame.n).toBe(kept[checkedPasses]?.n);
      passedBytes += frame.bytes;
    }
    const held = keptBytes - passedBytes;
    // The rate: between any two passes i ≤ j that cost, j - i + 1 ≤ 2·rate + rate·(t_j − t_i)/1 s: with
    // g(k) = k − rate·t_k/1 s, g(j) − min over i ≤ j of g(i) stays within the burst.
    for (; checkedCosted < out.costedAt.length; checkedCosted++) {
      const g = checkedCosted - (settings.rate * (out.costedAt[checkedCosted] as number)) / 1000;
      least = Math.min(least, g);
      expect(g - least).toBeLessThanOrEqual(2 * settings.rate + 1e-6);
    }
    expect(out.costedAt.length).toBe(out.sharesGranted);
    // Closing: the model's overflow clock runs while the bytes it says are held stay over the bound.
    if (closedAt === undefined) {
      if (held > settings.maxBytes) overSince ??= now;
      else overSince = undefined;
    }
    expect(out.closes.length).toBeLessThanOrEqual(1);
    if (closedAt === undefined && out.closes.length === 1) {
      const close = out.closes[0] as { at: number; why: HoldClose };
      closedAt = close.at;
      if (close.why.cause === "ceiling") expect(close.why.heldBytes).toBeGreaterThanOrEqual(settings.ceilingBytes);
      else {
        expect(held).toBeGreaterThan(settings.maxBytes);
        expect(overSince).toBeDefined();
        expect(now - (overSince ?? now)).toBeGreaterThanOrEqual(settings.sustainMs);
      }
    }
    if (closedAt === undefined) {
      expect(hold.heldBytes).toBe(held);
      expect(hold.held).toBe(kept.length - out.passed.length);
    }
    if (closedAt === undefined) {
      // Had it stayed over for long enough, or reached the ceiling, the hold would have closed.
      expect(held >= settings.ceilingBytes).toBe(false);
      if (overSince !== undefined) expect(now - overSince).toBeLessThan(settings.sustainMs);
    }
  };

  for (const step of steps) {
    if (step.op === "share") {
      mode = step.mode;
      continue;
    }
    if (step.op === "tick") {
      now += step.ms;
      hold.drain(now);
      check();
      continue;
    }
    for (let c = 0; c < step.count; c++) {
      const frame: Frame = { n: n++, kind: step.kind, bytes: step.bytes };
      const heldBefore = hold.heldBytes;
      const refusedBefore = out.refused.length;
      const wasClosed = hold.isClosed;
      hold.arrive(frame, { bytes: frame.bytes, costs: frame.kind !== "answer", refusable: frame.kind === "request" }, now);
      if (out.refused.length > refusedBefore) {
        // Only a request, only when it would not fit.
        expect(frame.kind).toBe("request");
        expect(heldBefore + frame.bytes).toBeGreaterThan(settings.maxBytes);
      } else if (!wasClosed) {
        kept.push(frame);
        keptBytes += frame.bytes;
      }
      check();
    }
  }
  // Time and shares enough: everything kept passes (unless the hold closed for overflow).
  mode = "ok";
  for (let i = 0; i < 10_000 && hold.held > 0 && !hold.isClosed; i++) {
    now += 1000;
    hold.drain(now);
    check();
  }
  if (closedAt === undefined) expect(out.passed.map((f) => f.n)).toEqual(kept.map((f) => f.n));
}

describe("agent hold: a burst is held and drained at the rate, never cut", () => {
  it("keeps order, drops nothing below the bound, drains no faster than the rate, and closes only after sustained overflow", () => {
    fc.assert(
      fc.property(settingsArb, fc.array(stepArb, { maxLength: 60 }), (settings, steps) => run(settings, steps)),
      { numRuns: RUNS },
    );
  });

  it("drains a burst of 5,000 at exactly the rate: twice the rate at once, then the rate each second, in order", () => {
    const passed: number[] = [];
    const hold = new AgentHold<number>(
      { rate: 1000, maxBytes: 8 << 20, sustainMs: 5000, ceilingBytes: 16 << 20 },
      {
        share: () => ({ ok: true }),
        pass: (n) => passed.push(n),
        refuse: () => expect.fail("refused"),
        close: () => expect.fail("closed"),
      },
      0,
    );
    for (let i = 0; i < 5000; i++) hold.arrive(i, { bytes: 150, costs: true, refusable: false }, 0);
    expect(passed.length).toBe(2000);
    hold.drain(1000);
    expect(passed.length).toBe(3000);
    expect(hold.drain(1500)).toEqual({ in: 1 });
    hold.drain(3000);
    expect(passed).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    expect(hold.drain(3000)).toBe("idle");
  });

  it("an answer waits behind the updates sent before it, though it costs nothing", () => {
    const passed: string[] = [];
    const hold = new AgentHold<string>(
      { rate: 1, maxBytes: 1000, sustainMs: 5000, ceilingBytes: 2000 },
      {
        share: () => ({ ok: true }),
        pass: (f) => passed.push(f),
        refuse: () => expect.fail("refused"),
        close: () => expect.fail("closed"),
      },
      0,
    );
    for (const f of ["u1", "u2", "u3"]) hold.arrive(f, { bytes: 10, costs: true, refusable: false }, 0);
    hold.arrive("answer", { bytes: 10, costs: false, refusable: false }, 0);
    expect(passed).toEqual(["u1", "u2"]);
    hold.drain(1000);
    expect(passed).toEqual(["u1", "u2", "u3", "answer"]);
  });

  it("over the bound: a request is refused, a notification held; closed with the cause once over for sustainMs", () => {
    const events: string[] = [];
    const hold = new AgentHold<string>(
      { rate: 1, maxBytes: 100, sustainMs: 1500, ceilingBytes: 1000 },
      {
        share: () => ({ ok: true }),
        pass: (f) => events.push(`pass ${f}`),
        refuse: (f) => events.push(`refuse ${f}`),
        close: (why) => events.push(`close ${why.cause} ${why.heldBytes}`),
      },
      0,
    );
    for (const f of ["a", "b", "c", "d", "e"]) hold.arrive(f, { bytes: 60, costs: true, refusable: false }, 0);
    // a and b passed on the burst; 180 bytes held (c, d, e): over the bound since 0.
    hold.arrive("r", { bytes: 10, costs: true, refusable: true }, 0);
    expect(events).toEqual(["pass a", "pass b", "refuse r"]);
    hold.drain(1000); // c passes: 120 held, still over
    hold.drain(1499);
    expect(events).toEqual(["pass a", "pass b", "refuse r", "pass c"]);
    hold.drain(1500);
    expect(events.at(-1)).toBe("close sustained 120");
    expect(hold.arrive("g", { bytes: 1, costs: true, refusable: false }, 6000)).toBe("closed");
  });

  it("closes at once at the ceiling", () => {
    const closes: HoldClose[] = [];
    const hold = new AgentHold<number>(
      { rate: 1, maxBytes: 100, sustainMs: 60_000, ceilingBytes: 400 },
      {
        share: () => ({ ok: false, retryAfterMs: undefined }),
        pass: () => undefined,
        refuse: () => undefined,
        close: (why) => closes.push(why),
      },
      0,
    );
    for (let i = 0; i < 9; i++) hold.arrive(i, { bytes: 40, costs: true, refusable: false }, 0);
    expect(closes).toEqual([]);
    expect(hold.arrive(9, { bytes: 40, costs: true, refusable: false }, 0)).toBe("closed");
    expect(closes).toEqual([{ cause: "ceiling", heldBytes: 400, rate: 1 }]);
  });

  it("waits for the tenant's lease when the share says so, and goes on when woken", () => {
    let lease = false;
    const passed: number[] = [];
    const hold = new AgentHold<number>(
      { rate: 100, maxBytes: 1000, sustainMs: 1000, ceilingBytes: 2000 },
      {
        share: () => (lease ? { ok: true } : { ok: false, retryAfterMs: undefined }),
        pass: (n) => passed.push(n),
        refuse: () => undefined,
        close: () => undefined,
      },
      0,
    );
    expect(hold.arrive(1, { bytes: 1, costs: true, refusable: false }, 0)).toBe("lease");
    lease = true;
    expect(hold.drain(0)).toBe("idle");
    expect(passed).toEqual([1]);
  });

  it("a higher rate (more sessions hosted) drains faster from then on", () => {
    const passed: number[] = [];
    const hold = new AgentHold<number>(
      { rate: 10, maxBytes: 1 << 20, sustainMs: 5000, ceilingBytes: 2 << 20 },
      { share: () => ({ ok: true }), pass: (n) => passed.push(n), refuse: () => undefined, close: () => undefined },
      0,
    );
    for (let i = 0; i < 200; i++) hold.arrive(i, { bytes: 1, costs: true, refusable: false }, 0);
    expect(passed.length).toBe(20);
    hold.setRate(40, 0);
    hold.drain(1000);
    expect(passed.length).toBe(60);
  });

  it("counts UTF-8 bytes", () => {
    for (const text of ["", "abc", "é", "€", "😀", "a😀é€", "\uD800", "\uDC00x"])
      expect(utf8Bytes(text)).toBe(new TextEncoder().encode(text).length);
  });
});

describe("hosted sessions: the scale of an agent connection's rate", () => {
  it("counts a session once the AgentObject named it, never one only the agent names, between 1 and the cap", () => {
    const hosted = new HostedSessions(60_000, 3);
    expect(hosted.note("forged", false, 0)).toBeUndefined();
    expect(hosted.note("a", true, 0)).toBe(1);
    expect(hosted.note("a", false, 1)).toBeUndefined(); // known, counted a moment ago
    expect(hosted.note("b", true, 2)).toBe(2);
    expect(hosted.note("forged", false, 3)).toBeUndefined();
    expect(hosted.note("c", true, 4)).toBe(3);
    expect(hosted.note("d", true, 5)).toBe(3); // capped
  });

  it("stops counting a session not heard of for the window; the agent's own frames keep one counted", () => {
    const hosted = new HostedSessions(1000, 8);
    hosted.note("a", true, 0);
    expect(hosted.note("b", true, 0)).toBe(2);
    hosted.note("a", false, 900); // the agent's frame of a: kept
    expect(hosted.note("a", false, 1500)).toBe(1); // b went quiet at 0: no longer counted
    expect(hosted.note("b", false, 1600)).toBeUndefined(); // forgotten: the agent alone cannot bring it back
    expect(hosted.note("b", true, 1700)).toBe(2);
  });
});
