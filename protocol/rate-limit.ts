// Message-rate limits of one connection (WebSocket or Streamable HTTP, client or agent): a token bucket admits `rate` messages a second
// with bursts of twice that; what it refuses is answered with an error. A second bucket counts the
// refusals: a connection that keeps sending well over its rate (refusals faster than half the rate,
// beyond five seconds' worth) is closed, since answering each message with an error would let a
// runaway peer keep the connection (and its object) busy for ever.

import { type LimitError, type Limits, type RateLimit, rateLimitError } from "./tenant-limits";

export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private ratePerSecond: number,
    private capacity: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.at = now;
  }

  /** A new rate and capacity from `now` on; the tokens refilled so far are kept (up to the new capacity). */
  retune(ratePerSecond: number, capacity: number, now: number): void {
    this.refill(now);
    this.ratePerSecond = ratePerSecond;
    this.capacity = capacity;
    this.tokens = Math.min(capacity, this.tokens);
  }

  take(now: number): boolean {
    return this.takeUpTo(1, now) === 1;
  }

  /** Takes up to `want` whole tokens; returns how many it took. */
  takeUpTo(want: number, now: number): number {
    this.refill(now);
    const taken = Math.max(0, Math.min(want, Math.floor(this.tokens)));
    this.tokens -= taken;
    return taken;
  }

  /** How long until one token is there again, in ms (0 if one is). */
  msUntilToken(): number {
    return this.msUntilTokens(1);
  }

  /** How long until `n` tokens are there, in ms (0 if they are); as of the last refill. */
  msUntilTokens(n: number): number {
    return this.tokens >= n ? 0 : Math.ceil(((n - this.tokens) / this.ratePerSecond) * 1000);
  }

  /** `msUntilToken` as of `now` (refilled first; takes nothing). */
  msUntilTokenAt(now: number): number {
    this.refill(now);
    return this.msUntilToken();
  }

  private refill(now: number): void {
    if (now > this.at) this.tokens = Math.min(this.capacity, this.tokens + ((now - this.at) / 1000) * this.ratePerSecond);
    this.at = Math.max(this.at, now);
  }
}

export type RateVerdict = "ok" | "refuse" | "close";

export class MessageRate {
  private readonly messages: TokenBucket;
  private readonly strikes: TokenBucket;

  constructor(
    readonly ratePerSecond: number,
    now: number,
  ) {
    this.messages = new TokenBucket(ratePerSecond, 2 * ratePerSecond, now);
    this.strikes = new TokenBucket(ratePerSecond / 2, 5 * ratePerSecond, now);
  }

  admit(now: number): RateVerdict {
    return this.within(now) ? "ok" : this.strike(now);
  }

  /** Takes one message's token of the connection's own rate, if there is one (counts no strike). */
  within(now: number): boolean {
    return this.messages.take(now);
  }

  /** Counts a refusal (by this limit or another, such as the tenant's): "close" once they come too fast. */
  strike(now: number): Exclude<RateVerdict, "ok"> {
    return this.strikes.take(now) ? "refuse" : "close";
  }
}

/** What a tenant's shared bucket grants a connection asking for `want` tokens. */
export interface LeaseGrant {
  granted: number;
  /** When nothing (or not all) was granted: how long until the tenant's bucket has a token again. */
  retryAfterMs: number;
}

/** How long leased tokens stay good: unused ones lapse, so an idle connection cannot hoard the tenant's rate. */
const LEASE_MS = 1000;
/** The least a lease asks for; and the least credit a connection keeps once its demand is known. */
const MIN_LEASE = 2;
const FIRST_LEASE = 8;

/** The lease batch for a tenant rate: about a hundredth of a second's worth, at least 8, at most 64: the most one lease asks for. */
export function leaseBatch(tenantRate: number): number {
  return Math.min(64, Math.max(8, Math.ceil(tenantRate / 100)), Math.max(1, tenantRate));
}

/**
 * What a lessee spent recently, as a lease size: tokens per LEASE_MS at the rate since it last asked,
 * between `least` and `most`. Sized to demand, so ten thousand quiet connections do not each take a
 * full batch from the tenant's bucket every second only to let most of it lapse (decision 0031).
 */
class Demand {
  private spent = 0;
  private since: number;

  constructor(now: number) {
    this.since = now;
  }

  add(n: number): void {
    this.spent += n;
  }

  /** The size to ask for now; starts a new window. */
  take(now: number, least: number, most: number): number {
    const elapsed = Math.max(LEASE_MS / 10, now - this.since);
    const perLease = Math.ceil((this.spent / elapsed) * LEASE_MS);
    this.spent = 0;
    this.since = now;
    return Math.min(most, Math.max(least, perLease));
  }
}

/**
 * One connection's share of its tenant's message rate. The count lives in the tenant's
 * TenantLimitsObject (one of its lease shards), which hands out tokens in leases sized to the
 * connection's demand (about a second of it, at most `batch`); this side spends them without a call
 * per message. A connection that runs out keeps going on credit of up to one lease (its last ask,
 * so a quiet connection's credit is small) while the next lease is asked for (so no message waits on
 * a call and order is kept), and pays the credit back from that lease. A tenant over its rate
 * refuses the lease; the connection then refuses locally until the tenant's bucket has refilled. So
 * the tenant may go over by at most one lease per connection, and idle connections hold at most one
 * lease each for LEASE_MS.
 */
export class TenantLease {
  private tokens = 0;
  private expiresAt = 0;
  private deniedUntil = 0;
  private asking: Promise<void> | undefined;
  private readonly demand: Demand;
  private asked = false;
  /** How far the connection may spend ahead of its lease: a batch at first, then the size of its last ask (its demand, at least FIRST_LEASE). */
  private credit: number;

  constructor(
    readonly batch: number,
    private readonly ask: (want: number) => Promise<LeaseGrant>,
    private readonly now: () => number = Date.now,
    /** The first ask, before any demand is known: a batch for an agent (it opens with a burst), less for a client. */
    private readonly firstAsk = batch,
  ) {
    this.demand = new Demand(now());
    this.credit = batch; // until its demand is known: a burst as the connection opens is not refused
  }

  /** ok, or refused with how long to wait. Never waits itself. */
  admit(): { ok: true } | { ok: false; retryAfterMs: number } {
    const now = this.now();
    if (now >= this.expiresAt && this.tokens > 0) this.tokens = 0;
    if (now < this.deniedUntil) return { ok: false, retryAfterMs: this.deniedUntil - now };
    if (this.tokens <= -this.credit) {
      void this.refill(); // never rejects: an unreachable count grants
      return { ok: false, retryAfterMs: LEASE_MS / 10 };
    }
    this.tokens -= 1;
    this.demand.add(1);
    if (this.tokens <= 0) void this.refill();
    return { ok: true };
  }

  /** Takes the first lease before any message needs it; resolves when it is here. */
  warm(): Promise<void> {
    return this.tokens <= 0 && this.expiresAt === 0 ? this.refill() : Promise.resolve();
  }

  /**
   * The lease on its way while the credit is used up: a caller that can hold its messages in order
   * (the edge's agent connection) waits for it instead of having them refused. The edge takes a
   * burst of frames before any answer to its own calls arrives, so without this a burst longer than
   * the credit would be refused however much room the tenant has.
   */
  awaiting(): Promise<void> | undefined {
    if (this.tokens > -this.credit || this.now() < this.deniedUntil) return undefined;
    // A refusal that has lapsed with the credit still used up: the next lease is asked for now.
    return this.refill();
  }

  private refill(): Promise<void> {
    if (this.asking) return this.asking;
    const size = this.asked ? this.demand.take(this.now(), MIN_LEASE, this.batch) : this.firstAsk;
    if (this.asked) this.credit = Math.max(Math.min(this.batch, FIRST_LEASE), size);
    this.asked = true;
    const want = size + Math.max(0, -this.tokens);
    this.asking = this.ask(want).then(
      (grant) => this.granted(grant, want),
      // The tenant's count unreachable: not enforced meanwhile (each connection's own rate still is).
      () => this.granted({ granted: want, retryAfterMs: 0 }, want),
    );
    return this.asking;
  }

  private granted(grant: LeaseGrant, want: number): void {
    this.asking = undefined;
    const now = this.now();
    this.tokens += grant.granted;
    this.expiresAt = now + LEASE_MS;
    // Refused only when the tenant gave less than was asked: a lease granted in full that the
    // connection had already spent on credit is asked for again at the next message, not refused.
    if (this.tokens <= 0 && grant.granted < want) this.deniedUntil = now + Math.max(1, grant.retryAfterMs);
  }
}

/**
 * A lease shard's pool (the TenantLimitsObject named `${tenantId}/${index}`): it serves the leases of
 * the connections that hash to it from tokens it leases from the tenant's root object, in leases
 * sized to what it served recently, so the root sees a few calls a second per shard however many
 * connections there are, and the shard the calls of its own connections only. It passes on only what
 * the root granted (nothing of its own), so the tenant's bucket stays the one limit; its tokens
 * lapse after LEASE_MS like a connection's, so an idle shard holds none.
 */
export class LeasePool {
  private tokens = 0;
  private expiresAt = 0;
  private deniedUntil = 0;
  private asking: Promise<void> | undefined;
  private lastAsk = 0;
  /** What the takers waiting on the root want, together. */
  private wanted = 0;
  private readonly demand: Demand;

  constructor(
    private readonly ask: (want: number) => Promise<LeaseGrant>,
    private readonly now: () => number = Date.now,
  ) {
    this.demand = new Demand(now());
  }

  /**
   * Up to `want` tokens for a connection; asks the root first when the pool has fewer. Takers that
   * arrive while an ask is in flight wait for it and, still short, ask again together for all they
   * still want (at most three asks each): one ask sized for the first taker must not leave the others
   * refused while the tenant has room. Rejects when the root cannot be reached.
   */
  async take(want: number): Promise<LeaseGrant> {
    this.lapse();
    if (this.now() < this.deniedUntil) return { granted: 0, retryAfterMs: this.deniedUntil - this.now() };
    for (let asks = 0; this.tokens < want && asks < 3 && this.now() >= this.deniedUntil; asks++) {
      this.wanted += want;
      try {
        await this.refill();
      } finally {
        this.wanted -= want;
      }
      this.lapse();
    }
    const granted = Math.max(0, Math.min(want, Math.floor(this.tokens)));
    this.tokens -= granted;
    this.demand.add(granted);
    // Topped up before it runs dry, so most connections' leases are served without waiting on the root.
    if (this.tokens < this.lastAsk / 2) void this.refill().catch(() => undefined);
    return { granted, retryAfterMs: granted < want ? Math.max(1, this.deniedUntil - this.now()) : 0 };
  }

  private lapse(): void {
    if (this.now() >= this.expiresAt) this.tokens = 0;
  }

  /** Asks the root for what the waiting takers still want, or what was served recently if more. */
  private refill(): Promise<void> {
    if (this.asking) return this.asking;
    const want = Math.max(this.wanted - this.tokens, this.demand.take(this.now(), MIN_LEASE, Number.POSITIVE_INFINITY));
    this.lastAsk = want;
    this.asking = this.ask(want)
      .then((grant) => {
        const now = this.now();
        this.lapse();
        this.tokens += grant.granted;
        this.expiresAt = now + LEASE_MS;
        // Refused in part: the tenant is at its rate. Ask again no sooner than a tenth of a lease, so
        // the shards of a tenant at its limit do not keep the root busy with asks it must refuse.
        if (grant.granted < want) this.deniedUntil = now + Math.max(LEASE_MS / 10, grant.retryAfterMs);
      })
      .finally(() => {
        this.asking = undefined;
      });
    return this.asking;
  }
}

/** A refusal by a rate: the error to answer with, whether the connection is to be closed, and when to retry. */
export type Admission = { ok: true } | { ok: false; close: boolean; error: LimitError; retryAfterMs: number };

/**
 * The message rates one connection is held to: its own (a client's or an agent's, per the tenant's
 * settings) and its share of the tenant's (a TenantLease). Every refusal counts towards closing a
 * connection that keeps flooding, whichever limit refused it.
 */
export class RateGate {
  private readonly own: MessageRate;
  private readonly ownLimit: RateLimit;
  private readonly tenant: TenantLease;

  constructor(
    private readonly limits: Limits,
    role: "client" | "agent",
    askTenant: (want: number) => Promise<LeaseGrant>,
    private readonly now: () => number = Date.now,
  ) {
    this.ownLimit = role === "agent" ? "messagesPerSecondPerAgentConnection" : "messagesPerSecondPerConnection";
    this.own = new MessageRate(limits[this.ownLimit], now());
    const batch = leaseBatch(limits.messagesPerSecondPerTenant);
    // Ten thousand clients opening at once must not each take a batch they mostly let lapse.
    this.tenant = new TenantLease(batch, askTenant, now, role === "agent" ? batch : Math.min(batch, FIRST_LEASE));
  }

  /** Takes the tenant's first lease now (a connection that just opened); resolves when it is here. */
  warm(): Promise<void> {
    return this.tenant.warm();
  }

  /** The tenant's lease on its way, when its credit is used up (TenantLease `awaiting`). */
  awaiting(): Promise<void> | undefined {
    return this.tenant.awaiting();
  }

  /**
   * As `admit`, for a caller that can hold a message (a client connection's frame): while the tenant's
   * lease is on its way with the credit used up, the message waits for it (up to three in a row) and is
   * judged when it is here, in the order the messages came. It is refused for the tenant's rate only when
   * the tenant itself gave less than asked — never because its share was still travelling (a client that
   * opened 64 sessions and prompted at once was refused `tenant_rate_limited` at a millionth of its
   * tenant's limit). Synchronous when nothing is on its way.
   */
  admitHeld(method: string, rounds = 3): Admission | Promise<Admission> {
    const waiting = rounds > 0 ? this.tenant.awaiting() : undefined;
    return waiting ? waiting.then(() => this.admitHeld(method, rounds - 1)) : this.admit(method);
  }

  /**
   * The tenant's share alone, for one message whose connection keeps its own rate itself (an agent's
   * at the edge holds what waits: protocol/agent-hold.ts); counts no strike.
   */
  tenantShare(): { ok: true } | { ok: false; retryAfterMs: number } {
    return this.tenant.admit();
  }

  /** Whether one message (a request or notification named `method`) may pass. */
  admit(method: string): Admission {
    const now = this.now();
    let limit: RateLimit = this.ownLimit;
    let retryAfterMs = Math.ceil(1000 / this.own.ratePerSecond);
    if (this.own.within(now)) {
      const share = this.tenant.admit();
      if (share.ok) return share;
      limit = "messagesPerSecondPerTenant";
      retryAfterMs = share.retryAfterMs;
    }
    const close = this.own.strike(now) === "close";
    return { ok: false, close, error: rateLimitError(limit, this.limits[limit], method), retryAfterMs };
  }
}
