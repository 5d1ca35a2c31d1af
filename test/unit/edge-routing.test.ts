// The edge's routing of a session's frames (protocol/edge-routing.ts), model-based: a simulated world
// of the router, an AgentObject and the sessions, driven through every interleaving fast-check finds.
// - The AgentObject reads the control socket in order (one FIFO), numbers each attributed frame from
//   its counter when it reads it, queues per session (a handover in its place by number, as
//   session-outbox.ts `addNumbered`), delivers one batch per session at a time (a batch may fail
//   before the session applied it, or after, the ack lost: the items stay queued and go again), and,
//   with nothing of the session queued or in flight, may grant the last count it read, with a range
//   reserved from its counter (`reserveRange`), once per count (agent-object.ts `maybeGrant`).
//   Grants reach the router over a second FIFO, with any delay.
// - A session applies an item only if its seq is above the highest it applied (session/agent-link.ts `firstTime`).
// - A direct delivery succeeds, fails before the session applied it, or fails after (the ack lost),
//   or the deliver call throws.
// After every step, per session: what the session applied is a prefix of what the agent gave (order,
// no duplicate); direct seqs strictly increase and lie in a range the router took; a grant is taken
// only if it names the count of everything the router sent for the session. After draining every
// queue and socket: what each session applied is exactly what the agent gave (no loss).
// FUZZ_RUNS sets the number of generated cases (2,000 by default); counterexamples found are kept
// below as fixed cases.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AgentObjectToEdge, EdgeToAgentObject } from "../../protocol/agent-edge-wire";
import { MAX_BATCH_BYTES } from "../../protocol/agent-link-wire";
import { type DirectItem, EdgeRouting } from "../../protocol/edge-routing";

const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
const SESSIONS = ["s0", "s1", "s2"];
/** Padding that makes a frame take over half a batch, so two never go in one (batchPrefix cuts there). */
const PAD = "x".repeat(MAX_BATCH_BYTES / 4 + 1);

type Op =
  | "notification" // the agent sends a session/update
  | "other" // the agent sends anything else of the session (a request, an answer)
  | "aoRead" // the AgentObject reads the next frame of the control socket
  | "aoSend" // the AgentObject starts a delivery to a session
  | "aoSettle" // an AgentObject delivery ends: ok, failed before applying, failed after (ack lost)
  | "aoGrant" // the AgentObject grants a session
  | "grant" // the next grant reaches the router
  | "settle" // a direct delivery ends: ok, failed before applying, failed after (ack lost)
  | "breakStub" // the edge's next deliver call throws
  | "aoOwn" // the AgentObject queues an item of its own for a session (a fixed case below)
  | "quiet"; // a quiet moment: the AgentObject reads everything, delivers, grants; grants reach the router
interface Step {
  op: Op;
  /** Which session / delivery (modulo what there is). */
  pick: number;
  /** The variant: outcome, batch or range size, frame size. */
  flag: number;
}

type Stamped = { text: string; seq: number };
interface Pending {
  s: string;
  items: Stamped[];
  settle(outcome: "ok" | "lost" | "failed"): void;
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The world, and the invariants it checks as it goes. */
class World {
  readonly given = new Map<string, string[]>(SESSIONS.map((s) => [s, []]));
  readonly applied = new Map<string, string[]>(SESSIONS.map((s) => [s, []]));
  private readonly highest = new Map<string, number>(SESSIONS.map((s) => [s, 0]));
  // The AgentObject.
  private counter = 1;
  private readonly inbox: EdgeToAgentObject[] = [];
  private readonly aoQueue = new Map<string, Stamped[]>(SESSIONS.map((s) => [s, []]));
  private readonly aoInFlight = new Map<string, Pending>();
  private readonly lastCount = new Map<string, number>();
  private readonly grants: Extract<AgentObjectToEdge, { t: "grant" }>[] = [];
  private epoch = 7;
  // The edge.
  readonly router: EdgeRouting;
  private readonly direct: Pending[] = [];
  private throwNext = false;
  /** Per session: control messages the router sent, the grants it took, the last direct seq. */
  private readonly sent = new Map<string, number>(SESSIONS.map((s) => [s, 0]));
  private readonly taken = new Map<string, { from: number; to: number; epoch: number }[]>(SESSIONS.map((s) => [s, []]));
  private readonly lastDirect = new Map<string, number>(SESSIONS.map((s) => [s, 0]));
  readonly log: string[] = [];
  /** Items the AgentObject queued of its own (`aoOwn`), not part of any session's stream. */
  private readonly own = new Set<string>();
  /** Items a session skipped as applied already. */
  skipped = 0;

  constructor() {
    this.router = new EdgeRouting({
      toAgentObject: (message) => {
        const count = (this.sent.get(message.s) ?? 0) + 1;
        // The count the grant will name: one more per message, whatever its kind.
        check(message.c === count, `the count of ${message.s} is ${count}, not ${message.c}`);
        this.sent.set(message.s, count);
        this.inbox.push(message);
        this.log.push(`edge→AO ${JSON.stringify({ ...message, texts: undefined, text: undefined })}`);
      },
      deliver: (s, items) => this.deliverDirect(s, items),
      drained: () => undefined,
    });
  }

  private deliverDirect(s: string, items: DirectItem[]): Promise<void> {
    this.log.push(`edge→${s} direct [${items.map((i) => i.seq).join(",")}]`);
    check(items.length > 0, "a direct batch has items");
    check(!this.direct.some((d) => d.s === s), "one direct batch per session at a time");
    const range = this.taken.get(s)?.at(-1);
    for (const item of items) {
      check(item.seq > (this.lastDirect.get(s) ?? 0), `direct seqs strictly increase: ${item.seq} after ${this.lastDirect.get(s)}`);
      this.lastDirect.set(s, item.seq);
      check(range !== undefined && item.seq >= range.from && item.seq < range.to, `direct seq ${item.seq} is in the range the router took`);
      check(item.epoch === range?.epoch, "direct items carry the grant's epoch");
    }
    if (this.throwNext) {
      this.throwNext = false;
      throw new Error("broken stub");
    }
    return new Promise<void>((resolve, reject) => {
      const stamped = items.map(({ text, seq }) => ({ text, seq }));
      this.direct.push({
        s,
        items: stamped,
        settle: (outcome) => {
          if (outcome !== "failed") this.apply(s, stamped);
          if (outcome === "ok") resolve();
          else reject(new Error(outcome));
        },
      });
    });
  }

  /**
   * The session applies what is above the highest seq it applied. The AgentObject's own items (the
   * agent's departure, an error in place of an answer) are applied idempotently, neither checked nor
   * counted (session/agent-link.ts `firstTime`).
   */
  private apply(s: string, items: Stamped[]): void {
    for (const item of items) {
      if (this.own.has(item.text)) continue;
      if (item.seq <= (this.highest.get(s) ?? 0)) {
        this.skipped++;
        continue;
      }
      this.highest.set(s, item.seq);
      const applied = this.applied.get(s) as string[];
      // Order and no duplicate, checked as it happens: the next frame the agent gave, and no other.
      const expected = this.given.get(s)?.[applied.length];
      if (item.text !== expected) {
        throw new Error(`${s} applied ${short([item.text])[0]} (seq ${item.seq}) where ${short([expected ?? "nothing"])[0]} was due`);
      }
      applied.push(item.text);
    }
  }

  // ── the steps ────────────────────────────────────────────────────────────────────────────────
  async step({ op, pick, flag }: Step): Promise<void> {
    switch (op) {
      case "notification":
      case "other": {
        const s = SESSIONS[pick % SESSIONS.length] as string;
        const given = this.given.get(s) as string[];
        const text = `{"s":"${s}","n":${given.length},"kind":"${op}"}` + (flag % 8 === 7 ? PAD : "");
        given.push(text);
        this.log.push(`agent ${op} ${s}#${given.length - 1}${flag % 8 === 7 ? " (large)" : ""}`);
        // As the edge does (agent-connection.ts `notification`), and sometimes straight to
        // `notification`, which falls back to the AgentObject by itself.
        if (op === "other") this.router.viaAgentObject(s, text);
        else if (this.router.direct(s) || flag % 3 === 2) this.router.viaEdge(s, text);
        else this.router.viaAgentObject(s, text);
        return;
      }
      case "aoRead":
        return this.aoRead();
      case "aoSend": {
        const ready = SESSIONS.filter((s) => !this.aoInFlight.has(s) && (this.aoQueue.get(s)?.length ?? 0) > 0);
        const s = ready[pick % Math.max(1, ready.length)];
        if (s !== undefined) this.aoSend(s, flag);
        return;
      }
      case "aoSettle": {
        const flights = [...this.aoInFlight.values()];
        flights[pick % Math.max(1, flights.length)]?.settle(outcome(flag));
        return;
      }
      case "aoGrant": {
        const ready = SESSIONS.filter((s) => this.grantable(s));
        const s = ready[pick % Math.max(1, ready.length)];
        if (s !== undefined) this.aoGrant(s, 1 + (flag % 4));
        return;
      }
      case "grant":
        return this.grantToRouter();
      case "settle": {
        const d = this.direct[pick % Math.max(1, this.direct.length)];
        if (!d) return;
        this.direct.splice(this.direct.indexOf(d), 1);
        this.log.push(`${d.s} direct [${d.items.map((i) => i.seq).join(",")}] ${outcome(flag)}`);
        d.settle(outcome(flag));
        return flush();
      }
      case "breakStub":
        this.throwNext = true;
        return;
      case "quiet":
        return this.quiet(flag);
      case "aoOwn": {
        const s = SESSIONS[pick % SESSIONS.length] as string;
        const text = `{"method":"$/cancel_request","n":${flag}}`;
        // Not of the session's stream the agent gave: the session may apply it anywhere.
        this.own.add(text);
        this.aoQueue.get(s)?.push({ text, seq: this.counter++ });
        this.log.push(`AO queues its own item for ${s}`);
        return;
      }
    }
  }

  private aoRead(): void {
    const message = this.inbox.shift();
    if (!message) return;
    this.lastCount.set(message.s, message.c);
    const queue = this.aoQueue.get(message.s) as Stamped[];
    if (message.t === "attributed") {
      queue.push({ text: message.text, seq: this.counter++ });
    } else {
      expect(message.seqs.length).toBe(message.texts.length);
      const items = message.texts.map((text, k) => ({ text, seq: message.seqs[k] as number }));
      this.aoQueue.set(
        message.s,
        [...items, ...queue].sort((a, b) => a.seq - b.seq),
      );
    }
    this.log.push(
      `AO reads ${message.t} ${message.s} c=${message.c} → queue [${(this.aoQueue.get(message.s) ?? []).map((i) => i.seq).join(",")}]`,
    );
  }

  private aoSend(s: string, flag: number): void {
    const queue = this.aoQueue.get(s) as Stamped[];
    const items = queue.slice(0, 1 + (flag % queue.length));
    const last = (items.at(-1) as Stamped).seq;
    this.log.push(`AO→${s} [${items.map((i) => i.seq).join(",")}]`);
    this.aoInFlight.set(s, {
      s,
      items,
      settle: (result) => {
        this.aoInFlight.delete(s);
        this.log.push(`AO→${s} [${items.map((i) => i.seq).join(",")}] ${result}`);
        if (result !== "failed") this.apply(s, items);
        // As session-outbox.ts `delivered`: what is numbered up to the batch's last is taken.
        if (result === "ok")
          this.aoQueue.set(
            s,
            (this.aoQueue.get(s) ?? []).filter((item) => item.seq > last),
          );
      },
    });
  }

  private grantable(s: string): boolean {
    return this.lastCount.has(s) && !this.aoInFlight.has(s) && (this.aoQueue.get(s)?.length ?? 0) === 0;
  }

  private aoGrant(s: string, size: number): void {
    const c = this.lastCount.get(s) as number;
    this.lastCount.delete(s);
    const from = this.counter;
    this.counter += size;
    this.grants.push({ t: "grant", s, c, from, to: this.counter, epoch: this.epoch });
    this.log.push(`AO grants ${s} c=${c} [${from},${this.counter})`);
  }

  private grantToRouter(): void {
    const grant = this.grants.shift();
    if (!grant) return;
    const took = this.router.granted(grant);
    this.log.push(`edge ${took ? "takes" : "refuses"} grant ${grant.s} c=${grant.c}`);
    if (!took) return;
    check(grant.c === this.sent.get(grant.s), `a grant taken names everything the router sent for the session, not c=${grant.c}`);
    check(!this.direct.some((d) => d.s === grant.s), "nothing direct in flight when a grant is taken");
    this.taken.get(grant.s)?.push({ from: grant.from, to: grant.to, epoch: grant.epoch });
  }

  /** The AgentObject catches up and grants whatever it can; the grants reach the router (unless `flag` holds the last back). */
  private quiet(flag: number): void {
    while (this.inbox.length > 0) this.aoRead();
    for (const s of SESSIONS) {
      for (let i = 0; i < 3 && !this.aoInFlight.has(s) && (this.aoQueue.get(s)?.length ?? 0) > 0; i++) {
        this.aoSend(s, Number.MAX_SAFE_INTEGER);
        this.aoInFlight.get(s)?.settle("ok");
      }
      if (this.grantable(s)) this.aoGrant(s, 1 + (flag % 6));
    }
    while (this.grants.length > (flag % 3 === 2 ? 1 : 0)) this.grantToRouter();
  }

  /** Order and no duplicate: each session applied a prefix of what the agent gave it. */
  checkPrefix(): void {
    for (const s of SESSIONS) {
      const applied = this.applied.get(s) ?? [];
      const given = this.given.get(s) ?? [];
      expect(short(applied), `${s} applied a prefix of what was given`).toEqual(short(given.slice(0, applied.length)));
    }
  }

  /** Everything goes through: deliveries succeed, sockets are read, batches sent, grants passed on. */
  async drain(): Promise<void> {
    for (let round = 0; round < 10_000; round++) {
      const d = this.direct[0];
      if (d) {
        this.direct.shift();
        d.settle("ok");
        await flush();
      } else if (this.inbox.length > 0) this.aoRead();
      else if (this.aoInFlight.size > 0) [...this.aoInFlight.values()][0]?.settle("ok");
      else if (SESSIONS.some((s) => (this.aoQueue.get(s)?.length ?? 0) > 0)) {
        const s = SESSIONS.find((x) => (this.aoQueue.get(x)?.length ?? 0) > 0) as string;
        this.aoSend(s, Number.MAX_SAFE_INTEGER);
      } else if (this.grants.length > 0) this.grantToRouter();
      else return this.checkPrefix();
    }
    throw new Error("the world did not drain");
  }

  checkComplete(): void {
    for (const s of SESSIONS) {
      expect(short(this.applied.get(s) ?? []), `${s} applied everything it was given`).toEqual(short(this.given.get(s) ?? []));
    }
    expect(this.router.idle()).toBe(true);
  }
}

/**
 * A broken invariant, recorded and thrown after the step: thrown inside `deliver` it would be taken
 * by the router for a failed delivery (it catches what deliver throws), and pass unseen.
 */
const violations: string[] = [];
function check(condition: boolean, what: string): void {
  if (!condition) violations.push(what);
}
function throwViolations(): void {
  if (violations.length > 0) throw new Error(violations.splice(0).join("; "));
}

function outcome(flag: number): "ok" | "lost" | "failed" {
  return (["ok", "ok", "lost", "failed"] as const)[flag % 4] as "ok" | "lost" | "failed";
}

/** Texts without their padding, for readable failures. */
function short(texts: string[]): string[] {
  return texts.map((t) => (t.length > 100 ? `${t.slice(0, 60)}…(${t.length})` : t));
}

async function run(steps: Step[]): Promise<World> {
  const world = new World();
  violations.length = 0;
  try {
    for (const step of steps) {
      await world.step(step);
      throwViolations();
    }
    await world.drain();
    throwViolations();
    world.checkComplete();
  } catch (error) {
    if (error instanceof Error) error.message += `\n  world log:\n    ${world.log.join("\n    ")}`;
    throw error;
  }
  return world;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  op: fc.oneof(
    { arbitrary: fc.constant<Op>("notification"), weight: 6 },
    { arbitrary: fc.constant<Op>("other"), weight: 2 },
    { arbitrary: fc.constant<Op>("aoRead"), weight: 4 },
    { arbitrary: fc.constant<Op>("aoSend"), weight: 3 },
    { arbitrary: fc.constant<Op>("aoSettle"), weight: 3 },
    { arbitrary: fc.constant<Op>("aoGrant"), weight: 3 },
    { arbitrary: fc.constant<Op>("grant"), weight: 3 },
    { arbitrary: fc.constant<Op>("settle"), weight: 5 },
    { arbitrary: fc.constant<Op>("breakStub"), weight: 1 },
    { arbitrary: fc.constant<Op>("quiet"), weight: 2 },
  ),
  pick: fc.nat(5),
  flag: fc.nat(39),
});

const n = (pick: number, flag = 0): Step => ({ op: "notification", pick, flag });
const o = (pick: number, flag = 0): Step => ({ op: "other", pick, flag });
const s = (op: Op, pick = 0, flag = 0): Step => ({ op, pick, flag });
/** The AgentObject reads, delivers and grants session 0: the router is granted when it reads the grant. */
const grantS0: Step[] = [s("aoRead"), s("aoSend"), s("aoSettle"), s("aoGrant", 0, 3), s("grant")];
const OK = 0;
const LOST = 2;
const FAILED = 3;

describe("edge routing: a session's frames through the AgentObject or direct", () => {
  // Fixed cases: the shapes the guarantees are about, and every counterexample found.
  const fixed: [string, Step[]][] = [
    ["granted: notifications go direct, numbered from the range", [o(0), ...grantS0, n(0), n(0), s("settle", 0, OK), s("settle", 0, OK)]],
    [
      "a grant is exhausted: the next notification goes through the AgentObject after the direct ones",
      [o(0), ...grantS0, n(0), n(0), n(0), n(0), n(0, 2), s("settle", 0, OK)],
    ],
    [
      "a non-notification waits for the direct ones, then goes through the AgentObject",
      [o(0), ...grantS0, n(0), o(0), n(0), s("settle", 0, OK), s("aoRead"), s("aoRead")],
    ],
    [
      "a direct delivery fails before it was applied: handed back numbered, then what waited",
      [o(0), ...grantS0, n(0), n(0), o(0), s("settle", 0, FAILED), s("aoRead"), s("aoRead"), s("aoSend", 0, 9)],
    ],
    [
      "a direct delivery's ack is lost: handed back, and the session skips it the second time",
      [o(0), ...grantS0, n(0), s("settle", 0, LOST), n(0), s("aoRead"), s("aoSend", 0, 9), s("aoSettle", 0, OK)],
    ],
    [
      "a stale grant (the router sent a frame since) is refused",
      [o(0), s("aoRead"), s("aoSend"), s("aoSettle"), s("aoGrant", 0, 3), o(0), s("grant"), n(0), s("aoRead")],
    ],
    ["the deliver call throws: handed back", [o(0), ...grantS0, s("breakStub"), n(0), n(0), s("aoRead")]],
    [
      "frames too large for one batch go in several, in order",
      [o(0), ...grantS0, n(0, 7), n(0, 7), n(0, 7), s("settle", 0, OK), s("settle", 0, FAILED)],
    ],
    ["two sessions, one granted, one not", [o(0), o(1), ...grantS0, n(1), n(0), s("aoRead"), n(1), s("settle", 0, LOST)]],
  ];
  for (const [name, steps] of fixed) it(name, () => run(steps).then(() => undefined));

  it("applies every session's frames in order, each once, whatever the interleaving", async () => {
    const seen = { direct: 0, handover: 0, refused: 0, skipped: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 80, size: "max" }), async (steps) => {
        const world = await run(steps);
        if (world.log.some((line) => line.includes(" direct ["))) seen.direct++;
        if (world.log.some((line) => line.startsWith("edge→AO") && line.includes("handover"))) seen.handover++;
        if (world.log.some((line) => line.startsWith("edge refuses"))) seen.refused++;
        if (world.skipped > 0) seen.skipped++;
      }),
      { numRuns: RUNS },
    );
    // The generator reaches the paths the guarantees are about, in a good share of the runs.
    for (const [path, runs] of Object.entries(seen)) expect(runs, `runs with ${path}`).toBeGreaterThan(RUNS / 50);
  }, 120_000);

  // Found by this test (fixed): an item the AgentObject numbers of its own for a granted session (the
  // agent's departure, an error in place of an answer, and before the fix a cancel it broadcast to every
  // session) is numbered above the granted range. Counted by the session, it made it skip every direct
  // item still to come from the range. Now the session neither checks nor counts such items, and the
  // AgentObject sends no broadcast on the edge's socket. Minimal sequence: grant taken, a notification
  // goes direct (seq 2, in flight), the AgentObject queues its own item (seq 6) and delivers it, the
  // direct delivery then succeeds: the session must still apply seq 2.
  it("an item the AgentObject queues of its own for a granted session does not lose the direct items below it", () =>
    run([o(0), ...grantS0, n(0), s("aoOwn", 0), s("aoSend"), s("aoSettle", 0, OK), s("settle", 0, OK)]).then(() => undefined));

  it("a grant naming the right count is refused while frames wait at the edge (a second grant for one count)", async () => {
    const sent: EdgeToAgentObject[] = [];
    const deliveries: (() => void)[] = [];
    let drained = 0;
    const router = new EdgeRouting({
      toAgentObject: (message) => sent.push(message),
      deliver: () => new Promise<void>((resolve) => deliveries.push(resolve)),
      drained: () => drained++,
    });
    router.viaAgentObject("s", "a");
    expect(router.granted({ t: "grant", s: "s", c: 1, from: 10, to: 20, epoch: 1 })).toBe(true);
    router.viaEdge("s", "b");
    router.viaAgentObject("s", "c"); // held behind b, the grant ended; the count is still 1
    expect(router.idle()).toBe(false);
    expect(router.granted({ t: "grant", s: "s", c: 1, from: 30, to: 40, epoch: 1 })).toBe(false);
    deliveries.shift()?.();
    await flush();
    expect(drained).toBe(1);
    expect(router.idle()).toBe(true);
    expect(sent.map((m) => (m.t === "attributed" ? [m.c, m.text] : m.t))).toEqual([
      [1, "a"],
      [2, "c"],
    ]);
  });

  it("the fixed cases take the direct path (the test exercises what it claims)", async () => {
    const world = await run([o(0), ...grantS0, n(0), n(0), s("settle", 0, OK)]);
    expect(world.applied.get("s0")).toHaveLength(3);
    expect(world.log.filter((line) => line.includes("direct ["))).not.toHaveLength(0);
  });
});
