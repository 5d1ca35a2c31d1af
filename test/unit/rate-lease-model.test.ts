// A model of the tenant's message rate as the gateway runs it: client connections (RateGate,
// their frames held as client-connection.ts holds them) leasing from lease shards (LeasePool), the
// shards from the tenant's bucket (TenantBucket), every call a round trip of its own on a virtual
// clock. fast-check picks the tenant's rate, the shards, the connections, each call's latency and
// every frame's time. Two properties: a tenant whose demand is under its limit is never refused
// `tenant_rate_limited` (its share travelling or lapsed is no reason), and a tenant over its limit is
// refused, with no more admitted than its bucket plus one lease a connection (the design's bound).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Admission, type LeaseGrant, LeasePool, RateGate, TenantBucket, TokenBucket, leaseBatch } from "../../protocol/rate-limit";
import { DEFAULT_LIMITS } from "../../protocol/tenant-limits";

/** A virtual clock and the events due on it. Each event runs with every promise it settles followed to its end. */
class Clock {
  now = 0;
  private seq = 0;
  private readonly due: { at: number; seq: number; run: () => void }[] = [];

  at(at: number, run: () => void): void {
    this.due.push({ at: Math.max(at, this.now), seq: this.seq++, run });
  }

  /** Runs every event (and what they schedule) in time order. */
  async run(): Promise<void> {
    for (;;) {
      this.due.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.due.shift();
      if (!next) return;
      this.now = next.at;
      next.run();
      await settled();
    }
  }
}

/** Every microtask queued so far, and those they queue, run (setImmediate comes after all of them). */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A call across the network: the request arrives after one latency, its answer after another. */
function call(clock: Clock, latency: () => number, handle: (want: number) => LeaseGrant | Promise<LeaseGrant>) {
  return (want: number) =>
    new Promise<LeaseGrant>((resolve, reject) =>
      clock.at(clock.now + latency(), () => {
        Promise.resolve(handle(want)).then(
          (grant) => clock.at(clock.now + latency(), () => resolve(grant)),
          (error: unknown) => clock.at(clock.now + latency(), () => reject(error)),
        );
      }),
    );
}

interface World {
  rate: number;
  shards: number;
  /** Each connection's frames, as times in ms. */
  frames: number[][];
  /** The latencies of successive calls, one way, in ms (cycled). */
  latencies: number[];
}

interface Outcome {
  admitted: number;
  /** Frames refused with the tenant's limit. */
  tenantRefused: number;
  /** Frames refused with the connection's own limit. */
  ownRefused: number;
  /** When the last frame was admitted (held frames are admitted after they came). */
  lastAdmitted: number;
}

/** Runs a world: every frame of every connection judged as a client connection judges it. */
async function play(world: World): Promise<Outcome> {
  const clock = new Clock();
  let turn = 0;
  const latency = () => world.latencies[turn++ % world.latencies.length] ?? 0;
  const root = new TenantBucket();
  const limits = { ...DEFAULT_LIMITS, messagesPerSecondPerTenant: world.rate };
  const now = () => clock.now;
  const pools = Array.from(
    { length: world.shards },
    () =>
      new LeasePool(
        call(clock, latency, (want) => root.lease(want, world.rate, clock.now)),
        now,
      ),
  );
  const verdicts: Promise<Admission>[] = [];
  let lastAdmitted = 0;
  world.frames.forEach((times, i) => {
    const shard = pools[i % world.shards] as LeasePool;
    const gate = new RateGate(
      limits,
      "client",
      call(clock, latency, (want) => shard.take(want)),
      now,
      (ms) => new Promise((resolve) => clock.at(clock.now + ms, resolve)),
    );
    for (const t of times) {
      clock.at(t, () => {
        const verdict = Promise.resolve(gate.admitHeld("session/prompt"));
        verdicts.push(verdict);
        void verdict.then((v) => {
          if (v.ok) lastAdmitted = Math.max(lastAdmitted, clock.now);
        });
      });
    }
  });
  await clock.run();
  const all = await Promise.all(verdicts);
  const refusedBy = (reason: string) => all.filter((v) => !v.ok && v.error.data.reason === reason).length;
  return {
    admitted: all.filter((v) => v.ok).length,
    tenantRefused: refusedBy("tenant_rate_limited"),
    ownRefused: refusedBy("rate_limited"),
    lastAdmitted,
  };
}

/** Keeps the frames a bucket of `rate` a second with bursts of `burst` would admit, in time order (the rest are dropped). */
function conforming(frames: number[][], rate: number, burst: number): number[][] {
  const bucket = new TokenBucket(rate, burst, 0);
  const all = frames.flatMap((times, i) => times.map((t) => ({ t, i }))).sort((a, b) => a.t - b.t);
  const kept: number[][] = frames.map(() => []);
  for (const { t, i } of all) if (bucket.take(t)) kept[i]?.push(t);
  return kept;
}

/** Frame times of one connection: bursts and pauses, as gaps in ms from the last. */
const frameTimes = (pause: number) =>
  fc
    .array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 30 }), fc.integer({ min: 100, max: pause })), {
      maxLength: 200,
      size: "large",
    })
    .map((gaps) => gaps.reduce<number[]>((times, gap) => [...times, (times.at(-1) ?? 0) + gap], []));

const latencies = fc.array(fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 400 }), fc.integer({ min: 500, max: 750 })), {
  minLength: 1,
  maxLength: 12,
});

/** A client's first lease (rate-limit.ts FIRST_LEASE), plus the message it asked on. */
const FIRST_ASK = 9;

/** Under its limit: the tenant's frames together within half its rate (bursts of its rate), each connection's within its own. */
const underLimit = fc
  .record({
    rate: fc.oneof(fc.integer({ min: 10, max: 100 }), fc.integer({ min: 10, max: 5000 })),
    shards: fc.integer({ min: 1, max: 4 }),
    // Some worlds sparse, some dense enough that the filter below leaves the tenant at its half-rate.
    frames: fc.oneof(
      fc.array(frameTimes(3000), { minLength: 1, maxLength: 16 }),
      fc.array(frameTimes(600), { minLength: 1, maxLength: 16 }),
    ),
    latencies,
  })
  .map((w) => {
    const own = DEFAULT_LIMITS.messagesPerSecondPerConnection;
    const each = w.frames.map((times) => conforming([times], own / 2, own)[0] ?? []);
    // The tenant's bucket holds each connection's first lease (a rate of at least 8 a connection): the leases its connections take ahead are the design's bound both ways.
    const rate = Math.max(w.rate, FIRST_ASK * w.frames.length);
    return { ...w, rate, frames: conforming(each, rate / 2, rate) };
  });

async function neverRefusedUnderLimit(runs: number) {
  await fc.assert(
    fc.asyncProperty(underLimit, async (world) => {
      const outcome = await play(world);
      expect(outcome.tenantRefused).toBe(0);
      expect(outcome.ownRefused).toBe(0);
    }),
    { numRuns: runs },
  );
}

/** Over its limit: connections each sending steadily within their own rate, together at least two and a half times the tenant's, for ten seconds. */
const overLimit = fc
  .record({
    shards: fc.integer({ min: 1, max: 4 }),
    gaps: fc.array(fc.integer({ min: 20, max: 40 }), { minLength: 2, maxLength: 6 }),
    share: fc.double({ min: 0.05, max: 0.4, noNaN: true }),
    latencies,
  })
  .map(({ shards, gaps, share, latencies }) => {
    const frames = gaps.map((gap) => Array.from({ length: Math.floor(10_000 / gap) }, (_, k) => k * gap));
    const demand = gaps.reduce((sum, gap) => sum + 1000 / gap, 0);
    return { rate: Math.max(1, Math.floor(demand * share)), shards, frames, latencies };
  });

async function refusedOverLimit(runs: number) {
  await fc.assert(
    fc.asyncProperty(overLimit, async (world) => {
      const outcome = await play(world);
      expect(outcome.tenantRefused).toBeGreaterThan(0);
      const batch = leaseBatch(world.rate);
      expect(outcome.admitted).toBeLessThanOrEqual(
        2 * world.rate + Math.ceil((world.rate * outcome.lastAdmitted) / 1000) + world.frames.length * batch,
      );
    }),
    { numRuns: runs },
  );
}

describe("tenant rate leases, modelled over their interleavings on a virtual clock", () => {
  it("a tenant over its limit is refused, and admitted no more than its bucket plus one lease a connection", async () => {
    await refusedOverLimit(Number(process.env.OVER_RUNS ?? 30));
  });

  it("a tenant under its limit is never refused tenant_rate_limited, whatever the latencies and pauses", async () => {
    await neverRefusedUnderLimit(Number(process.env.RUNS ?? 150));
  });
});

// Counterexamples the properties found, each kept as it was found (the fix named with it).
describe("tenant rate leases: the model's counterexamples, fixed", () => {
  it("two connections at 50 a second against a tenant rate of 32, half-second legs: refused, not held for ever (CI's counterexample; before HOLD_MAX_MS none was refused)", async () => {
    const steady = Array.from({ length: 500 }, (_, k) => k * 20);
    const world = { rate: 32, shards: 2, frames: [steady, steady], latencies: [513, 578, 613, 141] };
    const outcome = await play(world);
    expect(outcome.tenantRefused).toBeGreaterThan(0);
    expect(outcome.admitted).toBeLessThanOrEqual(
      2 * world.rate + Math.ceil((world.rate * outcome.lastAdmitted) / 1000) + world.frames.length * leaseBatch(world.rate),
    );
  });

  it("six connections at rate 20, eight frames: none refused (the code before issue 38's second fix refused the last)", async () => {
    const world = { rate: 20, shards: 2, frames: [[0], [1], [0], [13], [0], [1256, 2820, 2821]], latencies: [7, 1308, 268, 0, 0, 250, 5] };
    expect(await play(world)).toMatchObject({ admitted: 8, tenantRefused: 0 });
  });

  it("a frame that finds the tenant refusing waits out the refusal and a new lease instead of being refused (rate 10, bucket drained by three first leases)", async () => {
    const burst = [0, 21, 21, 21, 21, 21, 21, 21, 21];
    const world = { rate: 10, shards: 1, frames: [[200], [0], burst], latencies: [0, 500, 0, 0] };
    expect(await play(world)).toMatchObject({ admitted: 11, tenantRefused: 0 });
  });

  it("frames held while a lease travels are asked for with the next lease (rate 18, one connection, 662 ms each way)", async () => {
    const frames = [
      0, 100, 200, 200, 200, 200, 300, 400, 400, 500, 500, 500, 600, 600, 600, 600, 700, 700, 800, 800, 900, 900, 900, 900, 900, 1000, 1100,
      1327, 1332, 1334, 1714, 1714, 2187, 2187, 2188, 2199, 2615, 2635, 2635, 2636, 2665, 2667, 3111, 3111, 3320, 3346, 3346, 3346, 3502,
      3667, 3667, 4109, 4515, 4780, 5006, 5006, 5348, 5373, 5892, 5892, 5892, 5920, 5948, 6188, 6188, 6188, 6725, 6725, 6725, 7161, 7371,
      7371, 7646, 7652, 7652, 7652, 7999, 7999, 7999, 7999, 8013, 8013, 8019, 8039, 8039, 8519, 8533, 8542, 8542, 8542, 8542, 8548, 9116,
      9116, 9122, 9140, 9147, 9147, 9547, 10077, 10089, 10089, 10116, 10125, 10292, 10292, 10306, 10735, 10760, 10773, 10774, 10774, 10950,
      10973, 11223, 11223, 11223, 11223, 11368, 11368, 11642, 12128, 12158, 12158, 12468, 12468, 12484, 12497, 12932, 12950, 13389, 13569,
      13569, 13569, 13598, 13598, 13598, 13600, 13600, 14092, 14092, 14092, 14092, 14550, 14550, 14550, 14550, 14550, 14556,
    ];
    const outcome = await play({ rate: 18, shards: 1, frames: [[], frames], latencies: [662] });
    expect(outcome).toMatchObject({ admitted: frames.length, tenantRefused: 0 });
  });
});
