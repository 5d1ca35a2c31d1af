// The tenant's remembered decisions, compiled in the session, so a permission request that a rule
// answers is decided here, with no call to the RulesObject (durable-objects/rules/). The decision is
// the same pure function the RulesObject uses (protocol/rules, through rules/engine.ts).
//
// Staying correct while decisions are local:
// - The cache holds the rules of one *generation*: a counter the RulesObject bumps (and persists)
//   on every change. Taking a snapshot subscribes the session; a change is pushed to every
//   subscribed session (`changed`), which drops older rules at once, and the API that made the
//   change answers only after every push was taken. So a revoked rule stops before DELETE returns.
// - A push can fail (an object reset, a network fault). So rules are held on a *lease*: they are
//   used only until `leaseMs` after the call that fetched or last confirmed them was *sent*; then a
//   cheap version check (`check`) confirms the generation before the next use. The RulesObject,
//   when a push failed, waits out the lease before its API answers: by then no session can still
//   use the old rules. A tenant with no rules holds an empty set without a lease: it can only
//   make the session ask people, never approve.
// - Rules unknown (the RulesObject or D1 failing): `decide` throws and the session asks people.
// - The same push tells a session with requests waiting on people that a new rule may answer them:
//   a session stays subscribed while it holds rules or has such requests (`changed(…, waiting)`),
//   and one that holds none subscribes with a version check when it starts asking people (`subscribe`).
// Kept in memory only: an evicted session starts empty and fetches a snapshot on its next request.

import { HitTally } from "../../protocol/hit-tally";
import { type CompiledTenantRules, compileRuleList, decideWith, decideWithHash } from "../rules/engine";
import { type DecideRequest, type DecideResult, HIT_FLUSH_MS, type RulesSnapshot } from "../rules/contract";
import { log } from "../../core/log";

/** What the cache needs from the tenant's RulesObject (its RPC stub satisfies it). */
export interface RulesSource {
  snapshot(sessionId: string): Promise<RulesSnapshot>;
  /** The current generation; also (re)subscribes the session to pushes. */
  check(sessionId: string): Promise<number>;
  recordHits(hits: [ruleId: string, count: number, at: number][]): Promise<void>;
}

interface Held {
  generation: number;
  rules: CompiledTenantRules;
  /** Session clock; Infinity for an empty set (it can only make the session ask people). */
  validUntil: number;
  leaseMs: number;
}

/** Snapshots that came back stale (a change while loading) before the cache gives up and people are asked. */
const MAX_STALE_SNAPSHOTS = 3;

export class RulesCache {
  private held?: Held;
  private loading?: Promise<Held>;
  private refreshing = false;
  /** The newest generation a push announced: rules older than it are never installed or used. */
  private heard = -1;
  private readonly hits = new HitTally();
  private flushScheduled = false;
  /** The RulesObject pushes changes to this session: it took a snapshot or checked, and no push since found it holding nothing. */
  private subscribed = false;
  private subscribing = false;

  constructor(
    private readonly source: () => RulesSource,
    private readonly sessionId: () => string,
  ) {}

  /** Would a rule answer this request? Throws when the rules cannot be known: then people are asked. */
  async decide(request: DecideRequest): Promise<DecideResult> {
    const held = await this.current();
    if (held.rules.compiled.size === 0) return { decision: null };
    const result = await decideWith(held.rules, request, Date.now());
    if (result.ruleId) this.countHit(result.ruleId);
    return result;
  }

  /**
   * The same decision as `decide`, at once, when it needs nothing to wait for: the held rules are
   * within their lease and none is an exact match (which needs a hash, and crypto is async).
   * Undefined otherwise: then `decide`. Deciding in the same event as the request arrived lets the
   * session write the request once, already decided, instead of pending and then resolved.
   */
  decideNow(request: DecideRequest): DecideResult | undefined {
    const held = this.held;
    if (!held || Date.now() >= held.validUntil || held.rules.compiled.hasExact) return undefined;
    if (held.validUntil - Date.now() < held.leaseMs / 2) this.refreshInBackground(held);
    if (held.rules.compiled.size === 0) return { decision: null };
    const result = decideWithHash(held.rules, request, Date.now(), undefined);
    if (result.ruleId) this.countHit(result.ruleId);
    return result;
  }

  /**
   * The RulesObject's push: rules older than `generation` are dropped. True (stay subscribed) while
   * this session holds or fetches rules, or has requests `waiting` on people.
   */
  changed(generation: number, waiting = false): boolean {
    this.heard = Math.max(this.heard, generation);
    if (this.held && this.held.generation < generation) this.held = undefined;
    this.subscribed = this.held !== undefined || this.loading !== undefined || waiting;
    return this.subscribed;
  }

  /**
   * Makes sure the next change is pushed to this session: nothing to do while it is subscribed (it
   * holds rules, or said it waits), else one version check, which subscribes it. No call per request.
   */
  subscribe(): void {
    if (this.subscribed || this.subscribing) return;
    this.subscribing = true;
    this.source()
      .check(this.sessionId())
      .then(() => {
        this.subscribed = true;
      })
      .catch((e: unknown) =>
        log("warn", "session.rules_subscribe_failed", "subscribing to rule changes failed", { sessionId: this.sessionId() }, e),
      )
      .finally(() => {
        this.subscribing = false;
      });
  }

  /** The tenant has no rules as far as this session knows (a decision costs nothing). */
  get knownEmpty(): boolean {
    return this.held !== undefined && this.held.rules.compiled.size === 0;
  }

  private async current(): Promise<Held> {
    const held = this.held;
    if (held && Date.now() < held.validUntil) {
      // Past half its lease: confirm in the background, so requests rarely wait for a check.
      if (held.validUntil - Date.now() < held.leaseMs / 2) this.refreshInBackground(held);
      return held;
    }
    if (held && (await this.confirm(held))) return held;
    return this.load();
  }

  /** The cheap version check: the held rules are still the tenant's current ones; extends the lease. */
  private async confirm(held: Held): Promise<boolean> {
    const sentAt = Date.now();
    const generation = await this.source().check(this.sessionId());
    this.subscribed = true;
    if (this.held !== held || generation !== held.generation || generation < this.heard) return false;
    held.validUntil = Math.max(held.validUntil, sentAt + held.leaseMs);
    return true;
  }

  private refreshInBackground(held: Held): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.confirm(held)
      .then((ok) => {
        if (!ok && this.held === held) this.held = undefined;
      })
      .catch((e: unknown) =>
        log("warn", "session.rules_confirm_failed", "confirming the rules cache failed", { sessionId: this.sessionId() }, e),
      )
      .finally(() => {
        this.refreshing = false;
      });
  }

  private load(): Promise<Held> {
    const loading = (this.loading ??= this.fetchSnapshot().finally(() => {
      if (this.loading === loading) this.loading = undefined;
    }));
    return loading;
  }

  private async fetchSnapshot(): Promise<Held> {
    for (let attempt = 0; attempt < MAX_STALE_SNAPSHOTS; attempt++) {
      const sentAt = Date.now();
      const snapshot = await this.source().snapshot(this.sessionId());
      this.subscribed = true;
      // A push announced a newer generation while this one travelled: it may hold a revoked rule.
      if (snapshot.generation < this.heard) continue;
      const rules = compileRuleList(snapshot.rules);
      const validUntil = rules.compiled.size === 0 ? Number.POSITIVE_INFINITY : sentAt + snapshot.leaseMs;
      const held = { generation: snapshot.generation, rules, validUntil, leaseMs: snapshot.leaseMs };
      this.held = held;
      return held;
    }
    throw new Error("the tenant's rules kept changing while they were fetched");
  }

  private countHit(ruleId: string): void {
    this.hits.add(ruleId, 1, Date.now());
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setTimeout(() => this.flushHits(), HIT_FLUSH_MS);
  }

  private flushHits(): void {
    this.flushScheduled = false;
    const batch = [...this.hits.take()].map(([id, h]): [string, number, number] => [id, h.count, h.at]);
    if (batch.length === 0) return;
    // Hit counts are statistics shown in the API: a lost batch costs accuracy, never a decision.
    this.source()
      .recordHits(batch)
      .catch((e: unknown) => log("warn", "session.rule_hits_failed", "sending rule hits failed", { sessionId: this.sessionId() }, e));
  }
}
