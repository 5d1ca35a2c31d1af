// Message-rate limits of one connection (WebSocket or Streamable HTTP, client or agent): a token bucket admits `rate` messages a second
// with bursts of twice that; what it refuses is answered with an error. A second bucket counts the
// refusals: a connection that keeps sending well over its rate (refusals faster than half the rate,
// beyond five seconds' worth) is closed, since answering each message with an error would let a
// runaway peer keep the connection (and its object) busy for ever.

import { type LimitError, type Limits, MAX_LEASE_RETRY_MS, type RateLimit, rateLimitError } from "./tenant-limits";

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
  /**
   * When not all was granted because the tenant's bucket is short (a refusal): how long until it has
   * what was asked, at least 1. 0 when granted in full, or when a shard was short only for the moment
   * (its own ask to the root on its way, its tokens lapsed): not the tenant's refusal, to be asked again.
   */
  retryAfterMs: number;
}

/** A wait on the clock the rates run on (setTimeout in the gateway; the model's virtual clock in tests). */
export type Sleep = (ms: number) => Promise<void>;

const defaultSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long leased tokens stay good: unused ones lapse, so an idle connection cannot hoard the tenant's rate. */
const LEASE_MS = 1000;
/** The least a lease asks for; and the least credit a connection keeps once its demand is known. */
const MIN_LEASE = 2;
const FIRST_LEASE = 8;
/**
 * How long a held message may wait, from the tenant's first refusal, before it is refused: two
 * leases, so the leases the tenant's other connections took ahead have been spent or have lapsed and
 * its bucket has refilled past them; a tenant still refusing then is over its rate.
 */
const HOLD_MS = 2 * LEASE_MS;
/** The most waits a held message goes through (leases on their way and refusals): a bound however the answers come. */
const HOLD_ROUNDS = 12;
/**
 * The longest a message is held from when it came, however the tenant's answers come: a tenant over
 * its rate whose shards pass its bucket's short grants on as short leases (no refusal a connection
 * can see) would otherwise have its frames held for ever, a backlog growing at its connections' own
 * rate (the model's counterexample, rate 32 with two connections at 50 a second). Eight seconds is
 * past two lease round trips at the slowest the model proves the tenant under its rate never refused
 * (3 s each): a held message is then the tenant's rate, not its share travelling.
 */
const HOLD_MAX_MS = 8 * LEASE_MS;

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

  constructor(
    now: number,
    /** The most an ask may be, as a multiple of what was spent since the last: a burst is not a second's pace. */
    private readonly most = Number.POSITIVE_INFINITY,
  ) {
    this.since = now;
  }

  add(n: number): void {
    this.spent += n;
  }

  /** The size to ask for now; starts a new window. */
  take(now: number, least: number, most: number): number {
    const elapsed = Math.max(LEASE_MS / 10, now - this.since);
    const cap = Number.isFinite(this.most) ? this.spent * this.most : Number.POSITIVE_INFINITY;
    const perLease = Math.min(Math.ceil((this.spent / elapsed) * LEASE_MS), cap);
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
  /** The end of the tenant's refusal, then a new lease: what held messages wait for while refused. */
  private resuming: Promise<void> | undefined;
  /** Messages held waiting (`held`): demand the spent count does not show yet, asked for with the next lease. */
  private queued = 0;
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
    private readonly sleep: Sleep = defaultSleep,
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

  /**
   * What a caller that holds its messages (a client connection's frames) waits for before judging the
   * next one: the lease on its way while the credit is used up, or, while the tenant refuses, the
   * end of the refusal and then a new lease (`deniedMs` > 0: the tenant is refusing).
   * Nothing while the connection may spend. Held messages all wait on the same promise, so they
   * resume in the order they came.
   */
  held(): { wait: Promise<void>; deniedMs: number } | undefined {
    const deniedMs = Math.max(0, this.deniedUntil - this.now());
    // Behind the messages already waiting out a refusal, so none overtakes another.
    if (this.resuming) return { wait: this.resuming, deniedMs };
    if (deniedMs === 0 && this.tokens > -this.credit) return undefined;
    if (deniedMs === 0) return { wait: this.refill(), deniedMs };
    this.resuming = this.sleep(deniedMs)
      .then(() => this.refill())
      .finally(() => {
        this.resuming = undefined;
      });
    return { wait: this.resuming, deniedMs };
  }

  /** A message held (RateGate `admitHeld`) from its first wait until it is judged: asked for with the next lease. */
  holding(delta: 1 | -1): void {
    this.queued += delta;
  }

  private refill(): Promise<void> {
    if (this.asking) return this.asking;
    const size = this.asked ? this.demand.take(this.now(), MIN_LEASE, this.batch) : this.firstAsk;
    if (this.asked) this.credit = Math.max(Math.min(this.batch, FIRST_LEASE), size);
    this.asked = true;
    // What is spent on credit, a lease of demand ahead, and the messages held waiting (counted in
    // the demand only once admitted: without them a connection whose lease covers less than a
    // round trip's messages would ask for no more however long its queue grew).
    const want = size + Math.max(0, -this.tokens) + this.queued;
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
    // Refused only when the tenant's bucket gave less than was asked (retryAfterMs > 0): a lease
    // granted in full that the connection had already spent on credit, or one its shard was short
    // of only for the moment, is asked for again at the next message, not refused.
    if (this.tokens <= 0 && grant.granted < want && grant.retryAfterMs > 0) this.deniedUntil = now + grant.retryAfterMs;
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
  /** No top-up before this: the root cut the last ask short (the tenant is at its rate). */
  private quietUntil = 0;
  private asking: Promise<void> | undefined;
  private lastAsk = 0;
  /** What the takers waiting on the root want, together. */
  private wanted = 0;
  private readonly demand: Demand;

  constructor(
    private readonly ask: (want: number) => Promise<LeaseGrant>,
    private readonly now: () => number = Date.now,
  ) {
    // What the pool serves is its connections' leases, each already a second of their demand: a
    // burst of them (every connection opening at once) is not to be taken as a rate kept up for a
    // second, which took ten times that from a small tenant's bucket, to lapse unspent.
    this.demand = new Demand(now(), 2);
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
    if (this.tokens < this.lastAsk / 2 && this.now() >= this.quietUntil) void this.refill().catch(() => undefined);
    // Short while the tenant refuses: a refusal. Short otherwise (tokens lapsed, or taken by takers
    // ahead while this one waited): retryAfterMs 0, so the connection asks again instead of refusing.
    return { granted, retryAfterMs: granted < want ? Math.max(0, this.deniedUntil - this.now()) : 0 };
  }

  /**
   * Unused tokens lapse LEASE_MS after the root granted them, but not while takers wait on the root:
   * those are theirs. (They lapsed before, so with the root's answer a second away, a taker short
   * after one ask found the first answer gone when the second came, and was granted in part.)
   */
  private lapse(): void {
    if (this.now() >= this.expiresAt && this.wanted === 0) this.tokens = 0;
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
        // Refused in part: the tenant is at its rate. No top-up for a tenth of a lease, so the shards
        // of a tenant at its limit do not keep the root busy with asks it must refuse; the takers are
        // refused as long only if it leaves them short. A top-up cut short while the takers have what
        // they want is no refusal: it was sized to what was served, not to what is asked.
        if (grant.granted < want) {
          this.quietUntil = now + Math.max(LEASE_MS / 10, grant.retryAfterMs);
          if (this.tokens < this.wanted) this.deniedUntil = this.quietUntil;
        }
      })
      .finally(() => {
        this.asking = undefined;
      });
    return this.asking;
  }
}

/**
 * The tenant's own bucket (the root TenantLimitsObject's): `ratePerSecond` with bursts of twice that,
 * rebuilt full when the rate changes. A lease short of what was asked says to wait until what was
 * asked for is there, at most MAX_LEASE_RETRY_MS, so shards at the tenant's limit do not ask in a loop.
 */
export class TenantBucket {
  private bucket: { rate: number; tokens: TokenBucket } | undefined;

  lease(want: number, ratePerSecond: number, now: number): LeaseGrant {
    if (this.bucket?.rate !== ratePerSecond) {
      this.bucket = { rate: ratePerSecond, tokens: new TokenBucket(ratePerSecond, 2 * ratePerSecond, now) };
    }
    const granted = this.bucket.tokens.takeUpTo(Math.max(0, Math.floor(want)), now);
    const retryAfterMs = granted < want ? Math.min(MAX_LEASE_RETRY_MS, Math.max(1, this.bucket.tokens.msUntilTokens(want - granted))) : 0;
    return { granted, retryAfterMs };
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
    sleep: Sleep = defaultSleep,
  ) {
    this.ownLimit = role === "agent" ? "messagesPerSecondPerAgentConnection" : "messagesPerSecondPerConnection";
    this.own = new MessageRate(limits[this.ownLimit], now());
    const batch = leaseBatch(limits.messagesPerSecondPerTenant);
    // Ten thousand clients opening at once must not each take a batch they mostly let lapse.
    this.tenant = new TenantLease(batch, askTenant, now, role === "agent" ? batch : Math.min(batch, FIRST_LEASE), sleep);
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
   * As `admit`, for a caller that can hold a message (a client connection's frame). The connection's
   * own rate is judged at once (so a flood is refused, not held). Then, while the tenant's share is
   * not there, the message waits, in the order the messages came: for the lease on its way (a client
   * that opened 64 sessions and prompted at once was refused `tenant_rate_limited` at a millionth of
   * its tenant's limit), and, when the tenant's bucket came back short, for as long as the tenant
   * says and a new lease. A limit slows a peer down; it refuses a message for the tenant's rate only
   * once the tenant has refused for HOLD_MS in a row (a tenant really over its rate), never because
   * its share was travelling, cut short by others' leases or lapsed. Synchronous when nothing waits.
   */
  admitHeld(method: string): Admission | Promise<Admission> {
    const now = this.now();
    if (!this.own.within(now)) return this.refusal(this.ownLimit, Math.ceil(1000 / this.own.ratePerSecond), method, now);
    this.tenant.holding(1); // counted from before its first ask, so that ask includes it
    return this.shareHeld(method, now, undefined, HOLD_ROUNDS);
  }

  /** `came`: when the message came; `refusedSince`: when the tenant first refused while it waited. */
  private shareHeld(method: string, came: number, refusedSince: number | undefined, rounds: number): Admission | Promise<Admission> {
    const now = this.now();
    const mayWait = rounds > 0 && now - came < HOLD_MAX_MS && (refusedSince === undefined || now - refusedSince < HOLD_MS);
    const hold = mayWait ? this.tenant.held() : undefined;
    if (hold) {
      const since = refusedSince ?? (hold.deniedMs > 0 ? now : undefined);
      return hold.wait.then(() => this.shareHeld(method, came, since, rounds - 1));
    }
    this.tenant.holding(-1);
    const share = this.tenant.admit();
    return share.ok ? share : this.refusal("messagesPerSecondPerTenant", share.retryAfterMs, method, this.now());
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
    return this.refusal(limit, retryAfterMs, method, now);
  }

  private refusal(limit: RateLimit, retryAfterMs: number, method: string, now: number): Admission {
    const close = this.own.strike(now) === "close";
    return { ok: false, close, error: rateLimitError(limit, this.limits[limit], method), retryAfterMs };
  }
}
