// The link between two objects (protocol/object-channel.ts), model-based: both ends of it, the
// opener (the AgentObject's or the edge's end, delivering an agent's items to one session) and the
// acceptor (the session's, sending frames for the agent), over simulated links carrying the real
// wire (agent-link-wire.ts), driven through random interleavings fast-check finds:
// - the agent emits items (some too large for a link); the opener's caller delivers what the
//   session has not confirmed, one delivery at a time, on the link or else by RPC, as agent-relay.ts
//   does; the session sends frames for the agent on its newest link, else by RPC, and tries a failed
//   one once more by RPC, as session/agent-link.ts does;
// - a link is opened (or refused); a message arrives, or arrives twice; a link is cut (close events
//   to both ends), vanishes (nothing arrives, no close event ever), or is closed by either end; a
//   reconnect replaces a link while the old one still delivers what was on it; the frames handed
//   on reach the agent, do not, or fail; RPC calls arrive in order; time passes; the idle sweep; a
//   close of every link.
// The session applies an item only if its number follows the last it applied; the agent hands a
// frame's number on once (agent-object.ts `fromLink`). After every step: every request is settled at
// most once; a batch is acked only once the session applied it; a frame is `delivered` only if the
// agent has it, `undelivered` only if it refused it; nothing waits on a link its end lost; nothing is
// written on it; at most one batch waits per link; the session applied a gapless prefix. After a
// quiet phase (everything arrives, every open succeeds, time passes): the session applied every
// item, every frame ended, nothing waits, no timer is wanted, and two sweeps close every link.
// FUZZ_RUNS sets the number of generated cases (500 by default).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type LinkToAgent, type LinkToSession, encodeLink, linkToAgent, linkToSession } from "../../protocol/agent-link-wire";
import { type FrameOutcome, ObjectChannel } from "../../protocol/object-channel";

const RUNS = Number(process.env.FUZZ_RUNS ?? 500);
const PROPERTY_TIMEOUT_MS = 60_000;
const PEER = "s0";
const ACK_TIMEOUT = 100;
const ANSWER_TIMEOUT = 300;
const REOPEN_AFTER = 50;
const MAX_CHARS = 8;
const QUIET_ROUNDS = 40;

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(message);
}

type Side = "a" | "s";
const other = (side: Side): Side => (side === "a" ? "s" : "a");
const CLOSE_MARK = "\u0000close";

interface Link {
  id: number;
  /** What travels towards each end, in order: encoded messages, and a close mark last. */
  toward: Record<Side, string[]>;
  /** The end has lost the link (its machine was told, or dropped it): it reads and writes nothing. */
  gone: Record<Side, boolean>;
  /** Cut: writes fail at both ends (the sockets are closing), close marks are on their way. */
  broken: boolean;
  /** Vanished: whatever is written goes nowhere, and no close event ever comes. */
  vanished: boolean;
}

interface Batch {
  /** Known once it went on a link (the settle callback cannot run before). */
  link: Link | undefined;
  last: number;
  settled: boolean;
}

interface FrameTry {
  key: number;
  link: Link | undefined;
  settled: boolean;
}

type Step =
  | { op: "emit"; big: boolean }
  | { op: "deliver" }
  | { op: "frame" }
  | { op: "open"; ok: boolean }
  | { op: "arrive"; link: number; at: Side; twice: boolean }
  | { op: "cut"; link: number }
  | { op: "vanish"; link: number }
  | { op: "close"; link: number; by: Side }
  | { op: "hand"; pick: number; result: "delivered" | "undelivered" | "threw" }
  | { op: "rpc"; at: Side }
  | { op: "tick"; dt: number }
  | { op: "sweep" }
  | { op: "closeAll" };

const side = fc.constantFrom<Side>("a", "s");
const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant("emit" as const), big: fc.boolean() }), weight: 6 },
  { arbitrary: fc.constant({ op: "deliver" as const }), weight: 3 },
  { arbitrary: fc.constant({ op: "frame" as const }), weight: 6 },
  {
    arbitrary: fc.record({
      op: fc.constant("open" as const),
      ok: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, fc.constant(false)),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant("arrive" as const), link: fc.nat(3), at: side, twice: fc.boolean() }), weight: 24 },
  { arbitrary: fc.record({ op: fc.constant("cut" as const), link: fc.nat(3) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("vanish" as const), link: fc.nat(3) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("close" as const), link: fc.nat(3), by: side }), weight: 4 },
  {
    arbitrary: fc.record({
      op: fc.constant("hand" as const),
      pick: fc.nat(3),
      result: fc.constantFrom("delivered", "undelivered", "threw"),
    }),
    weight: 6,
  },
  { arbitrary: fc.record({ op: fc.constant("rpc" as const), at: side }), weight: 6 },
  {
    arbitrary: fc.record({
      op: fc.constant("tick" as const),
      dt: fc.oneof({ arbitrary: fc.integer({ min: 1, max: ACK_TIMEOUT / 2 }), weight: 3 }, fc.integer({ min: 1, max: 2 * ANSWER_TIMEOUT })),
    }),
    weight: 3,
  },
  { arbitrary: fc.constant({ op: "sweep" as const }), weight: 2 },
  { arbitrary: fc.constant({ op: "closeAll" as const }), weight: 1 },
) as fc.Arbitrary<Step>;

/** How often each way a request ends was reached over the whole property (it must reach them all). */
const reached = {
  ackedOnLink: 0,
  batchFailed: 0,
  batchByRpc: 0,
  frameDeliveredOnLink: 0,
  frameUndeliveredOnLink: 0,
  frameFailedThenRpc: 0,
  repeatedAckIgnored: 0,
  oldLinkAfterNew: 0,
  timedOut: 0,
};

class World {
  now = 1000;
  readonly links: Link[] = [];
  private nextLinkId = 0;
  /** The opener asked for a link and has not heard back. */
  opening = false;
  readonly opener: ObjectChannel<Link>;
  readonly acceptor: ObjectChannel<Link>;

  // The opener's caller (agent-relay.ts): items 1..emitted, confirmed up to `confirmed`.
  emitted = 0;
  private big = new Set<number>();
  confirmed = 0;
  private inFlight = false;
  readonly batches: Batch[] = [];
  /** RPC calls in flight, in order, towards each end: a batch's items for the session, a frame's key for the agent. */
  private readonly rpcToSession: { last: number; items: unknown[] }[] = [];
  readonly rpcToAgent: number[] = [];

  // The session: the last item it applied.
  applied = 0;

  // The session's caller (session/agent-link.ts): frames by key, each try, each frame's end.
  private lastKey = 0;
  readonly tries: FrameTry[] = [];
  readonly ended = new Map<number, FrameOutcome | "threw" | undefined>();

  // The agent, behind the opener: what each key came to (a throw is not kept: it may be tried again).
  readonly agentHas = new Map<number, boolean>();
  readonly handing: { link: Link; n: number }[] = [];

  /** `replaces`: the session closes an older link when a new one comes (the AgentObject's); the edge's links are not replaced, so an old one still delivers beside a new one. */
  constructor(private readonly replaces = true) {
    this.opener = new ObjectChannel<Link>(
      { write: (link, m) => this.write("a", link, m), close: (link) => this.closed("a", link), open: () => this.askOpen() },
      { timeoutMs: ACK_TIMEOUT, overdueDropsLink: true, maxLinks: 4, reopenAfterMs: REOPEN_AFTER, maxBatchChars: MAX_CHARS },
    );
    this.acceptor = new ObjectChannel<Link>(
      {
        write: (link, m) => this.write("s", link, m),
        close: (link) => this.closed("s", link),
        open: () => check(false, "the acceptor asked to open a link"),
      },
      { timeoutMs: ANSWER_TIMEOUT, overdueDropsLink: false },
    );
  }

  // ── the simulated sockets ──────────────────────────────────────────────────────────────────────
  private write(at: Side, link: Link, message: LinkToSession | LinkToAgent): boolean {
    check(!link.gone[at], `${at} wrote on link ${link.id} after it lost it`);
    if (link.broken) return false;
    if (!link.vanished && !link.gone[other(at)]) link.toward[other(at)].push(encodeLink(message));
    return true;
  }

  /** An end closes its socket: it reads nothing more; the other end reads what was sent, then the close. */
  private closed(at: Side, link: Link): void {
    if (link.gone[at]) return;
    link.gone[at] = true;
    link.toward[at] = [];
    const far = other(at);
    if (!link.vanished && !link.broken && !link.gone[far] && link.toward[far].at(-1) !== CLOSE_MARK) link.toward[far].push(CLOSE_MARK);
  }

  private askOpen(): void {
    check(!this.opening, "asked to open a link while one was opening");
    this.opening = true;
  }

  private newestAtSession(): Link | undefined {
    return this.links.filter((l) => !l.gone.s).at(-1);
  }

  private pick(index: number): Link | undefined {
    return this.links.length === 0 ? undefined : this.links[index % this.links.length];
  }

  // ── the steps ──────────────────────────────────────────────────────────────────────────────────
  run(s: Step): void {
    switch (s.op) {
      case "emit":
        this.emitted++;
        if (s.big) this.big.add(this.emitted);
        this.deliver(); // agent-relay.ts: queued, and sent unless a delivery is in flight
        break;
      case "deliver":
        this.deliver(); // the alarm, after a failed delivery
        break;
      case "frame":
        this.sendFrame(++this.lastKey);
        break;
      case "open":
        this.open(s.ok);
        break;
      case "arrive": {
        const readable = this.links.filter((l) => l.toward[s.at].length > 0);
        const link = readable[s.link % Math.max(1, readable.length)];
        if (link) this.arrive(link, s.at, s.twice);
        break;
      }
      case "cut": {
        const link = this.pick(s.link);
        if (!link || link.broken || link.vanished) break;
        link.broken = true;
        for (const at of ["a", "s"] as const) link.toward[at] = link.gone[at] ? [] : [CLOSE_MARK];
        break;
      }
      case "vanish": {
        const link = this.pick(s.link);
        if (!link || link.broken) break;
        link.vanished = true;
        link.toward.a = [];
        link.toward.s = [];
        break;
      }
      case "close": {
        const link = this.pick(s.link);
        if (link && !link.gone[s.by]) (s.by === "a" ? this.opener : this.acceptor).drop(link, "closed by a test");
        break;
      }
      case "hand":
        this.hand(s.pick, s.result);
        break;
      case "rpc":
        this.rpc(s.at);
        break;
      case "tick": {
        this.now += s.dt;
        const waiting = this.opener.waiting + this.acceptor.waiting;
        this.opener.tick(this.now);
        this.acceptor.tick(this.now);
        if (this.opener.waiting + this.acceptor.waiting < waiting) reached.timedOut++;
        break;
      }
      case "sweep":
        this.opener.sweep();
        break;
      case "closeAll":
        this.opener.closeAll("closing every link");
        break;
    }
    this.checkInvariants();
  }

  /** The opener's caller: what the session has not confirmed, on the link, else by RPC. */
  deliver(): void {
    if (this.inFlight || this.confirmed === this.emitted) return;
    const items: { seq: number; text: string }[] = [];
    for (let seq = this.confirmed + 1; seq <= this.emitted; seq++)
      items.push({ seq, text: this.big.has(seq) ? "x".repeat(MAX_CHARS + 1) : "x" });
    const last = this.emitted;
    this.inFlight = true;
    const batch: Batch = { link: undefined, last, settled: false };
    const sent = this.opener.deliver(PEER, items, this.now, (acked) => {
      check(batch.link !== undefined && !batch.settled, "a batch settled twice, or before it was sent");
      batch.settled = true;
      this.inFlight = false;
      if (!acked) return void reached.batchFailed++;
      reached.ackedOnLink++;
      check(this.applied >= last, `batch up to ${last} acked with the session at ${this.applied}`);
      this.confirmed = Math.max(this.confirmed, last);
      this.deliver(); // agent-relay.ts `delivered`: what queued meanwhile goes now
    });
    if (!sent) {
      reached.batchByRpc++;
      this.rpcToSession.push({ last, items });
      return;
    }
    const link = this.links.find((l) => l === this.opener.linkOf(PEER));
    check(link !== undefined, "a batch went on a link the opener does not hold");
    batch.link = link;
    this.batches.push(batch);
  }

  /** The session's caller: a frame on the newest link, else by RPC; a failed one once more by RPC. */
  sendFrame(key: number): void {
    this.ended.set(key, undefined);
    const link = this.newestAtSession();
    const attempt: FrameTry = { key, link, settled: false };
    const sent =
      link !== undefined &&
      this.acceptor.send(link, key, { frame: key }, this.now, (outcome) => {
        check(!attempt.settled, `frame ${key} settled twice`);
        attempt.settled = true;
        if (outcome === "failed") {
          reached.frameFailedThenRpc++;
          return void this.rpcToAgent.push(key);
        }
        reached[outcome === "delivered" ? "frameDeliveredOnLink" : "frameUndeliveredOnLink"]++;
        check(this.agentHas.get(key) === (outcome === "delivered"), `frame ${key} ${outcome}, the agent: ${this.agentHas.get(key)}`);
        this.ended.set(key, outcome);
      });
    if (sent) this.tries.push(attempt);
    else this.rpcToAgent.push(key);
  }

  open(ok: boolean): void {
    if (!this.opening) return;
    this.opening = false;
    if (!ok) return this.opener.opened(PEER, undefined, this.now);
    const link: Link = { id: this.nextLinkId++, toward: { a: [], s: [] }, gone: { a: false, s: false }, broken: false, vanished: false };
    // The session accepts first (agent-socket.ts `accept`: an older link is replaced), then the opener has it.
    if (this.replaces) for (const old of this.links) if (!old.gone.s) this.acceptor.drop(old, "replaced by a newer link");
    this.links.push(link);
    this.opener.opened(PEER, link, this.now);
  }

  /** The next message on `link` reaches end `at` (`twice`: a copy of it comes again later). */
  arrive(link: Link, at: Side, twice: boolean): void {
    const text = link.toward[at][0];
    if (text === undefined) return;
    if (text === CLOSE_MARK) {
      link.toward[at].shift();
      // The shells: the opener drops a link whose close it heard; the session's end loses it.
      if (at === "a") this.opener.drop(link, "link closed");
      else {
        this.acceptor.lost(link, "the agent link closed");
        link.gone.s = true;
      }
      return;
    }
    if (!twice) link.toward[at].shift();
    if (link !== this.links.at(-1)) reached.oldLinkAfterNew++;
    if (at === "s") {
      const message = linkToSession(text);
      check(message !== undefined, "the session could not read a message");
      if (message.t !== "batch") return this.acceptor.answered(message);
      this.apply(message.items as { seq: number }[]);
      // session-object.ts `onLinkMessage`: the ack after the batch is applied, naming it.
      if (!link.gone.s) this.write("s", link, { t: "ack", n: message.n });
      return;
    }
    const message = linkToAgent(text);
    check(message !== undefined, "the opener could not read a message");
    const waitingBefore = this.opener.waiting;
    const frame = this.opener.fromAcceptor(link, message);
    if (message.t === "ack" && this.opener.waiting === waitingBefore) reached.repeatedAckIgnored++;
    if (frame) this.handing.push({ link, n: frame.n });
  }

  /** The session applies each item once, by its number (session/agent-link.ts `firstTime`). */
  private apply(items: { seq: number }[]): void {
    for (const { seq } of items) {
      if (seq <= this.applied) continue;
      check(seq === this.applied + 1, `item ${seq} applied after ${this.applied}: a gap`);
      this.applied = seq;
    }
  }

  /** The agent, given a frame's number: the first outcome kept, a throw not (agent-object.ts `toAgent`). */
  private agentTakes(key: number, result: "delivered" | "undelivered" | "threw"): boolean | "threw" {
    const kept = this.agentHas.get(key);
    if (kept !== undefined) return kept;
    if (result === "threw") return "threw";
    this.agentHas.set(key, result === "delivered");
    return result === "delivered";
  }

  hand(pick: number, result: "delivered" | "undelivered" | "threw"): void {
    if (this.handing.length === 0) return;
    const [h] = this.handing.splice(pick % this.handing.length, 1);
    if (!h) return;
    const outcome = this.agentTakes(h.n, result);
    this.opener.handedOn(h.link, h.n, outcome === "threw" ? "failed" : outcome);
  }

  rpc(at: Side): void {
    if (at === "s") {
      const call = this.rpcToSession.shift();
      if (!call) return;
      this.apply(call.items as { seq: number }[]);
      this.inFlight = false;
      this.confirmed = Math.max(this.confirmed, call.last);
      return this.deliver();
    }
    const key = this.rpcToAgent.shift();
    if (key === undefined) return;
    const outcome = this.agentTakes(key, "delivered");
    this.ended.set(key, outcome === "threw" ? "threw" : outcome ? "delivered" : "undelivered");
  }

  // ── the checks ─────────────────────────────────────────────────────────────────────────────────
  checkInvariants(): void {
    for (const b of this.batches) {
      check(b.settled || !b.link?.gone.a, `a batch still waits on link ${b.link?.id}, which the opener lost`);
    }
    for (const t of this.tries) {
      check(t.settled || !t.link?.gone.s, `frame ${t.key} still waits on link ${t.link?.id}, which the session lost`);
    }
    for (const link of this.links) {
      const waiting = this.batches.filter((b) => b.link === link && !b.settled).length;
      check(waiting <= 1, `${waiting} batches wait on link ${link.id}`);
    }
    check(this.applied <= this.emitted, "the session applied an item never emitted");
    check(this.confirmed <= this.applied, "confirmed past what the session applied");
  }

  /** Everything arrives, every open succeeds, hand-ons reach the agent, time passes, until nothing moves. */
  quiet(): void {
    for (let round = 0; round < QUIET_ROUNDS; round++) {
      for (let moves = 0; moves < QUIET_ROUNDS && this.move(); moves++) this.checkInvariants();
      if (this.settledAll()) return;
      this.now += ANSWER_TIMEOUT + REOPEN_AFTER;
      this.opener.tick(this.now);
      this.acceptor.tick(this.now);
    }
    check(
      false,
      `not quiet after ${QUIET_ROUNDS} rounds: applied ${this.applied} of ${this.emitted}, ${this.opener.waiting} + ${this.acceptor.waiting} waiting`,
    );
  }

  /** One of each thing that can happen without time passing; whether anything did. */
  private move(): boolean {
    const before = JSON.stringify([
      this.applied,
      this.confirmed,
      this.inFlight,
      [...this.ended],
      this.opener.waiting,
      this.acceptor.waiting,
    ]);
    let moved = this.handing.length > 0 || this.opening || this.rpcToAgent.length + this.rpcToSession.length > 0;
    while (this.handing.length > 0) this.hand(0, "delivered");
    for (const link of this.links) {
      for (const at of ["a", "s"] as const) {
        moved ||= link.toward[at].length > 0;
        while (link.toward[at].length > 0) this.arrive(link, at, false);
      }
    }
    this.open(true);
    while (this.rpcToSession.length > 0) this.rpc("s");
    while (this.rpcToAgent.length > 0) this.rpc("a");
    this.deliver();
    const after = JSON.stringify([
      this.applied,
      this.confirmed,
      this.inFlight,
      [...this.ended],
      this.opener.waiting,
      this.acceptor.waiting,
    ]);
    return moved || before !== after;
  }

  private settledAll(): boolean {
    return (
      this.confirmed === this.emitted &&
      !this.inFlight &&
      [...this.ended.values()].every((e) => e !== undefined) &&
      this.opener.waiting === 0 &&
      this.acceptor.waiting === 0 &&
      this.handing.length === 0
    );
  }

  checkQuiet(): void {
    check(this.applied === this.emitted, `the session applied ${this.applied} of ${this.emitted}`);
    for (const [key, end] of this.ended) check(end === "delivered" || end === "undelivered", `frame ${key} ended ${end}`);
    check(this.opener.nextDeadline() === undefined && this.acceptor.nextDeadline() === undefined, "a timer is wanted with nothing waiting");
    this.opener.sweep();
    this.opener.sweep();
    check(this.opener.open === 0, `${this.opener.open} links open after two idle sweeps`);
  }
}

function run(steps: Step[], replaces = true): World {
  const world = new World(replaces);
  for (const s of steps) world.run(s);
  world.quiet();
  world.checkQuiet();
  return world;
}

describe("the link between two objects, model-based", () => {
  it(
    "over every interleaving of sends, acks, repeats, reorders across a reconnect, closes and timeouts: settled once, in order, nothing lost or left waiting",
    () => {
      fc.assert(
        fc.property(fc.array(step, { minLength: 40, maxLength: 250, size: "max" }), fc.boolean(), (steps, replaces) => {
          run(steps, replaces);
        }),
        { numRuns: RUNS },
      );
      for (const [way, count] of Object.entries(reached)) expect(count, `runs that reached ${way}`).toBeGreaterThan(0);
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe("the link between two objects: the planted bugs' cases, kept", () => {
  const linkOpen: Step[] = [
    { op: "emit", big: false }, // no link yet: one is asked for, the batch goes by RPC
    { op: "open", ok: true },
    { op: "rpc", at: "s" },
  ];

  it("a repeated ack settles nothing: the batch after it waits for its own (planted: an ack taken for the link's batch, whichever it names)", () => {
    const world = run([
      ...linkOpen,
      { op: "emit", big: false }, // batch 1 on the link
      { op: "arrive", link: 0, at: "s", twice: false },
      { op: "arrive", link: 0, at: "a", twice: true }, // its ack, which comes again later
      { op: "emit", big: false }, // batch 2 on the link
      { op: "arrive", link: 0, at: "a", twice: false }, // the repeated ack of batch 1
    ]);
    expect(world.applied).toBe(3);
  });

  it("a link's close fails at once what waited on it, oldest first, and the caller sends it again in order (planted: a close that settles nothing)", () => {
    const world = new World();
    for (const s of [...linkOpen, { op: "frame" }, { op: "frame" }, { op: "cut", link: 0 }] as Step[]) world.run(s);
    expect(world.rpcToAgent).toEqual([]);
    world.run({ op: "arrive", link: 0, at: "s", twice: false }); // the session hears the close
    expect(world.rpcToAgent).toEqual([1, 2]);
    world.quiet();
    world.checkQuiet();
  });

  it("an overdue batch drops its link, which vanished; what follows arrives by another way (planted: an overdue batch that keeps its link)", () => {
    const world = new World();
    for (const s of [...linkOpen, { op: "emit", big: false }, { op: "vanish", link: 0 }] as Step[]) world.run(s);
    expect(world.opener.open).toBe(1);
    world.run({ op: "tick", dt: ACK_TIMEOUT });
    expect(world.opener.open).toBe(0);
    world.quiet();
    world.checkQuiet();
  });

  it("a frame handed on after its link was lost is answered on no link: the session sent it again by RPC (planted: the answer written on the lost link)", () => {
    const world = run([
      ...linkOpen,
      { op: "frame" },
      { op: "arrive", link: 0, at: "a", twice: false }, // the opener hands it on
      { op: "close", link: 0, by: "a" },
      { op: "hand", pick: 0, result: "delivered" },
    ]);
    expect(world.agentHas.get(1)).toBe(true);
  });

  it("a frame the agent did not take is told `undelivered`, never `delivered` (planted: every `sent` taken for delivered)", () => {
    const world = run([
      ...linkOpen,
      { op: "frame" },
      { op: "arrive", link: 0, at: "a", twice: false },
      { op: "hand", pick: 0, result: "undelivered" },
      { op: "arrive", link: 0, at: "s", twice: false },
    ]);
    expect(world.ended.get(1)).toBe("undelivered");
  });
});

describe("the link between two objects: the opener's rules, one by one", () => {
  /** An opener over sockets named by strings, recording what it was asked to do. */
  function opener(options: { maxLinks?: number } = {}) {
    const asked: string[] = [];
    const closed: string[] = [];
    const channel = new ObjectChannel<string>(
      {
        write: (link) => !link.startsWith("closing"), // a socket named so is closing: its writes throw
        close: (link) => void closed.push(link),
        open: (peer) => void asked.push(peer),
      },
      { timeoutMs: ACK_TIMEOUT, overdueDropsLink: true, reopenAfterMs: REOPEN_AFTER, maxBatchChars: MAX_CHARS, ...options },
    );
    return { channel, asked, closed };
  }

  it("an ack of the deploy before (no number) settles the link's one batch, and nothing on another link", () => {
    const { channel } = opener();
    channel.opened("s0", "link-0", 0);
    channel.opened("s1", "link-1", 0);
    const acked: string[] = [];
    expect(channel.deliver("s0", [{ seq: 1 }], 0, (ok) => acked.push(`s0 ${ok}`))).toBe(true);
    expect(channel.deliver("s1", [{ seq: 1 }], 0, (ok) => acked.push(`s1 ${ok}`))).toBe(true);
    channel.fromAcceptor("link-1", { t: "ack" });
    expect(acked).toEqual(["s1 true"]);
    channel.fromAcceptor("link-1", { t: "ack" }); // its batch is settled: nothing more
    expect(acked).toEqual(["s1 true"]);
    expect(channel.waiting).toBe(1);
  });

  it("asks for a link once while it opens, at most maxLinks, and not again for reopenAfterMs after a refusal", () => {
    const { channel, asked } = opener({ maxLinks: 2 });
    const never = () => undefined;
    expect(channel.deliver("s0", [], 0, never)).toBe(false);
    expect(channel.deliver("s0", [], 1, never)).toBe(false);
    channel.prepare("s1", 1);
    channel.prepare("s2", 1); // two open or opening already
    expect(asked).toEqual(["s0", "s1"]);
    channel.opened("s0", undefined, 10);
    channel.deliver("s0", [], 10 + REOPEN_AFTER - 1, never);
    expect(asked).toEqual(["s0", "s1"]);
    channel.deliver("s0", [], 10 + REOPEN_AFTER, never);
    expect(asked).toEqual(["s0", "s1", "s0"]);
  });

  it("a large batch, or one behind an unacked batch, goes by RPC with the link open; a write that fails drops the link", () => {
    const { channel, closed } = opener();
    channel.opened("s0", "link-0", 0);
    expect(channel.deliver("s0", [{ text: "x".repeat(MAX_CHARS + 1) }], 0, () => undefined)).toBe(false);
    expect(channel.deliver("s0", [{ text: "x" }], 0, () => undefined)).toBe(true);
    expect(channel.deliver("s0", [{ text: "y" }], 0, () => undefined)).toBe(false);
    channel.opened("s1", "closing-1", 0);
    expect(channel.deliver("s1", [{ text: "x" }], 0, () => undefined)).toBe(false);
    expect(closed).toEqual(["closing-1"]);
    expect(channel.linkOf("s1")).toBeUndefined();
  });

  it("the sweep keeps a link that carried something, waits on a batch, hands a frame on, or is kept; closes the rest", () => {
    const { channel, closed } = opener();
    for (const peer of ["used", "batch", "handing", "kept", "idle"]) channel.opened(peer, peer, 0);
    channel.sweep(); // every link was new: used
    channel.deliver("batch", [], 0, () => undefined);
    channel.fromAcceptor("handing", { t: "toAgent", n: 1, frame: {} });
    channel.prepare("used", 0);
    channel.sweep((peer) => peer === "kept");
    expect(closed).toEqual(["idle"]);
    channel.handedOn("handing", 1, true);
    channel.sweep((peer) => peer === "kept");
    expect(closed).toEqual(["idle", "used", "handing"]);
  });
});
