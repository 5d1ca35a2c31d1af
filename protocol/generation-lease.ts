// Leases on a generation: how a tenant's rules stay correct in ten thousand sessions while a change
// to them costs the REST API a fixed number of object calls (decision 0031). Pure: the clock, the
// timers and the calls to the other side come in through narrow interfaces; the model test
// (test/unit/generation-lease.test.ts) drives a root, shards and sessions through every interleaving
// of changes, lookups, refreshes, failures, restarts and lagging clocks that fast-check finds.
//
// A *giver* (the tenant's RulesObject for its shards; a shard for its sessions) hands out the current
// generation with a *lease*: the taker may use what it holds of that generation until `leaseMs` after
// it SENT the call that brought it, then asks again. A *taker* (a shard's copy of the rules, a
// session's) holds one generation and uses it only within its lease and only while no newer one was
// announced to it.
//
// The guarantees:
// - Fence. `advance(g)` resolves only when no lease on a generation older than g that this giver
//   granted can still be used: its taker was told of g and
//   took it, or its time ran out (its end as the giver computed it, `leaseMs + slackMs` after the
//   grant, is past). A giver that restarted does not know what its last incarnation granted, so it
//   fences until `leaseMs + slackMs` after it started. Leases a taker passes on (a shard's to its
//   sessions) end no later than its own (`grant`'s `until`), so fencing the shard fences its sessions.
// - Clocks. Each side measures only durations on its own clock; a lease is timed from the taker's
//   send (before the giver's grant) and the giver's end from the grant (after the send), so they agree
//   up to how far a clock read lags real time (Workers' Date.now() stands still during a computation):
//   `slackMs` must cover the taker's lag plus the giver's.
// - Never older. A taker never installs, confirms or uses a generation older than the newest it was
//   told of, so an answer that was on its way when a change was announced is not used.
// - One kind of lease. Empty rules are leased like any others (so the first rule a tenant makes
//   reaches every session as soon as the API answers, and "older than a change" has no exception).
// - Widening needs no fence (decision 0049). A change that can only turn what was asked into answers
//   (a new allow rule: a reject beats any allow, so it narrows nothing) leaves every older lease safe
//   to use, only less helpful. `widen` moves the generation and tells the takers, but waits out no
//   lease; a later `advance` still fences every lease granted before it, widened or not.

/** What a giver hands a taker with the generation: how long after sending its call the taker may use it. */
export interface Grant {
  generation: number;
  leaseMs: number;
}

export interface LeaseGiverPorts {
  /** The giver's clock (ms). */
  now(): number;
  /** Resolves once `now()` has reached `at`. */
  sleepUntil(at: number): Promise<void>;
  /**
   * Tells a taker that generations older than `generation` are void; resolves once it took it (and,
   * for a shard, once its own sessions are fenced). Absent: takers are not told, their leases run out.
   */
  tell?(taker: string, generation: number, widens?: boolean): Promise<void>;
}

interface Granted {
  generation: number;
  /** The latest its taker may still use it, on the giver's clock (slack included). */
  end: number;
}

export class LeaseGiver {
  private readonly granted = new Map<string, Granted>();
  /** Leases granted by a previous incarnation may be in use until then. */
  private readonly unknownUntil: number;

  constructor(
    private readonly ports: LeaseGiverPorts,
    private generationNow: number,
    /** Mutable for tests that want a lease long enough to observe (the RulesObject's test seam). */
    public leaseMs: number,
    readonly slackMs: number,
  ) {
    this.unknownUntil = ports.now() + leaseMs + slackMs;
  }

  get generation(): number {
    return this.generationNow;
  }

  /**
   * A lease to `taker` on `generation`: `leaseMs`, shortened so that it ends by `until` (the giver's
   * own lease, on its clock). Null when nothing is left before `until`: the giver must renew its own first.
   */
  grant(taker: string, generation: number, until = Number.POSITIVE_INFINITY): Grant | null {
    if (generation > this.generationNow) this.generationNow = generation;
    const now = this.ports.now();
    const leaseMs = Math.min(this.leaseMs, until - now);
    if (leaseMs <= 0) return null;
    const before = this.granted.get(taker);
    // An older lease's answer may still be on its way to the taker: its end is kept if later.
    const end = Math.max(now + leaseMs + this.slackMs, before && before.generation < generation ? before.end : 0);
    this.granted.set(taker, { generation, end });
    return { generation, leaseMs };
  }

  /**
   * The generation is now `to`. `fenced` resolves once no binding lease on an older one can be used
   * (told and taken, or run out); `told` once every taker in `tellAlso` and every one still holding a
   * lease was told (or failed), for callers that keep the object alive until then.
   */
  advance(to: number, tellAlso: Iterable<string> = []): { fenced: Promise<void>; told: Promise<void> } {
    this.generationNow = Math.max(this.generationNow, to);
    const now = this.ports.now();
    const takers = new Set<string>(tellAlso);
    for (const [taker, g] of this.granted) {
      if (g.end <= now) this.granted.delete(taker);
      else takers.add(taker);
    }
    const fences: Promise<void>[] = [];
    const tells: Promise<void>[] = [];
    const tell = this.ports.tell;
    for (const taker of takers) {
      const told = tell ? tell(taker, to) : undefined;
      if (told) tells.push(told.catch(() => undefined));
      const g = this.granted.get(taker);
      const end = Math.max(this.unknownUntil, g && g.generation < to ? g.end : 0);
      if (end <= now) continue;
      const ranOut = this.ports.sleepUntil(end);
      fences.push(told ? Promise.race([told.catch(() => ranOut), ranOut]) : ranOut);
    }
    // Nothing granted is known to be out, but a previous incarnation's leases may be.
    if (!tell && this.unknownUntil > now) fences.push(this.ports.sleepUntil(this.unknownUntil));
    return { fenced: Promise.all(fences).then(() => undefined), told: Promise.all(tells).then(() => undefined) };
  }

  /**
   * The generation is now `to`, by a change that only widens (see the guarantees): no fence. `told`
   * resolves once every taker in `tellAlso` and every one still holding a lease was told (or failed);
   * the caller decides how long to wait for it, since correctness does not depend on it.
   */
  widen(to: number, tellAlso: Iterable<string> = [], tell = this.ports.tell): { told: Promise<void> } {
    this.generationNow = Math.max(this.generationNow, to);
    const takers = new Set<string>([...tellAlso, ...this.holders()]);
    const tells = tell ? [...takers].map((taker) => tell(taker, to, true).catch(() => undefined)) : [];
    return { told: Promise.all(tells).then(() => undefined) };
  }

  /** Takers whose lease may still be in use (pruning those whose end is past). */
  holders(): string[] {
    const now = this.ports.now();
    const live: string[] = [];
    for (const [taker, g] of this.granted) {
      if (g.end <= now) this.granted.delete(taker);
      else live.push(taker);
    }
    return live;
  }
}

/** What a taker holds: one generation's value, usable until `validUntil` on the taker's clock. */
export interface Held<T> {
  generation: number;
  value: T;
  validUntil: number;
  leaseMs: number;
}

export class LeaseTaker<T> {
  private heldNow?: Held<T>;
  /** The newest generation announced to this taker: nothing older is installed or used. */
  private heard = -1;

  constructor(private readonly now: () => number) {}

  /** What is held, if it may be used now. */
  live(): Held<T> | undefined {
    const held = this.heldNow;
    return held && this.now() < held.validUntil && held.generation >= this.heard ? held : undefined;
  }

  /** What is held, live or not (a lapsed lease can be confirmed with a generation check). */
  get held(): Held<T> | undefined {
    return this.heldNow;
  }

  /** Past half its lease: time to confirm in the background, so uses rarely wait for a check. */
  dueForRefresh(): boolean {
    const held = this.live();
    return held !== undefined && held.validUntil - this.now() < held.leaseMs / 2;
  }

  /** A newer generation was announced: what is older is dropped now. */
  told(generation: number): void {
    this.heard = Math.max(this.heard, generation);
    if (this.heldNow && this.heldNow.generation < this.heard) this.heldNow = undefined;
  }

  get newestHeard(): number {
    return this.heard;
  }

  /** A snapshot from a call sent at `sentAt`: installed unless older than what was announced. */
  install(grant: Grant, value: T, sentAt: number): Held<T> | undefined {
    if (grant.generation < this.heard) return undefined;
    this.heard = grant.generation;
    const held = { generation: grant.generation, value, validUntil: sentAt + grant.leaseMs, leaseMs: grant.leaseMs };
    this.heldNow = held;
    return held;
  }

  /** A check sent at `sentAt` answered `grant`: the held value, if it is of that generation, is good for another lease. */
  confirm(held: Held<T>, grant: Grant, sentAt: number): boolean {
    if (grant.generation > this.heard) this.heard = grant.generation;
    if (this.heldNow !== held || grant.generation !== held.generation || held.generation < this.heard) return false;
    held.validUntil = Math.max(held.validUntil, sentAt + grant.leaseMs);
    held.leaseMs = grant.leaseMs;
    return true;
  }

  /** Forget what is held (a check said it is stale). */
  drop(held: Held<T>): void {
    if (this.heldNow === held) this.heldNow = undefined;
  }
}

/** The shard (0 … shards-1) a session's rules come through: FNV-1a of its id, so each session always has the same one. */
export function shardOf(sessionId: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    h ^= sessionId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}
