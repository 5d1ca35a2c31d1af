// The session's compiled copy of its tenant's rules, under a lease from its shard of the RulesObject
// (decision 0031; the logic is protocol/generation-lease.ts): a permission request that a rule answers
// is decided here, with no call, by the same pure function the RulesObject uses (rules/engine.ts); the
// hits it counts are sent to the shard in batches. Used by tenant-rules.ts, whose header says how the
// copy stays correct while decisions are local. Kept in memory only.

import { HitTally } from "../../protocol/hit-tally";
import { type Grant, type Held, LeaseTaker } from "../../protocol/generation-lease";
import { type CompiledTenantRules, compileRuleList, decideWith, decideWithHash } from "../rules/engine";
import { type DecideRequest, type DecideResult, HIT_FLUSH_MS, type RulesSnapshot } from "../rules/contract";
import { log } from "../../core/log";

/** What the cache needs from its shard of the tenant's RulesObject (its RPC stub satisfies it). */
interface RulesSource {
  snapshot(sessionId: string): Promise<RulesSnapshot>;
  /** The current generation, leased. */
  check(sessionId: string): Promise<Grant>;
  /** Tell this session of every change (it has requests waiting on people). */
  watch(sessionId: string): Promise<void>;
  recordHits(hits: [ruleId: string, count: number, at: number][]): Promise<void>;
}

/** Snapshots that came back stale (a change while loading) before the cache gives up and people are asked. */
const MAX_STALE_SNAPSHOTS = 3;

export class RulesCache {
  private readonly held = new LeaseTaker<CompiledTenantRules>(Date.now);
  private loading?: Promise<Held<CompiledTenantRules>>;
  private refreshing = false;
  private readonly hits = new HitTally();
  private flushScheduled = false;
  /** The shard tells this session of changes: it asked (`subscribe`) and no push since found it waiting on nobody. */
  private subscribed = false;
  private subscribing = false;

  constructor(
    private readonly source: () => RulesSource,
    private readonly sessionId: () => string,
  ) {}

  /** Would a rule answer this request? Throws when the rules cannot be known: then people are asked. */
  async decide(request: DecideRequest): Promise<DecideResult> {
    const held = await this.current();
    if (held.value.compiled.size === 0) return { decision: null };
    const result = await decideWith(held.value, request, Date.now());
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
    const held = this.held.live();
    if (!held || held.value.compiled.hasExact) return undefined;
    if (this.held.dueForRefresh()) this.refreshInBackground(held);
    if (held.value.compiled.size === 0) return { decision: null };
    const result = decideWithHash(held.value, request, Date.now(), undefined);
    if (result.ruleId) this.countHit(result.ruleId);
    return result;
  }

  /**
   * The shard's push: rules older than `generation` are dropped. True (stay on the shard's list) while
   * this session has requests `waiting` on people.
   */
  changed(generation: number, waiting = false): boolean {
    this.held.told(generation);
    this.subscribed = waiting;
    return waiting;
  }

  /** Makes sure the next change is pushed to this session: one call to its shard, unless it is on the list already. */
  subscribe(): void {
    if (this.subscribed || this.subscribing) return;
    this.subscribing = true;
    this.source()
      .watch(this.sessionId())
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

  /** The tenant has no rules as far as this session knows now (a decision costs nothing). */
  get knownEmpty(): boolean {
    const held = this.held.live();
    return held !== undefined && held.value.compiled.size === 0;
  }

  private async current(): Promise<Held<CompiledTenantRules>> {
    const held = this.held.live();
    if (held) {
      // Past half its lease: confirm in the background, so requests rarely wait for a check.
      if (this.held.dueForRefresh()) this.refreshInBackground(held);
      return held;
    }
    const lapsed = this.held.held;
    if (lapsed && (await this.confirm(lapsed))) return lapsed;
    return this.load();
  }

  /** The cheap version check: the held rules are still the tenant's current ones; extends the lease. */
  private async confirm(held: Held<CompiledTenantRules>): Promise<boolean> {
    const sentAt = Date.now();
    const grant = await this.source().check(this.sessionId());
    return this.held.confirm(held, grant, sentAt);
  }

  private refreshInBackground(held: Held<CompiledTenantRules>): void {
    if (this.refreshing) return;
    this.refreshing = true;
    this.confirm(held)
      .then((ok) => {
        if (!ok) this.held.drop(held);
      })
      .catch((e: unknown) =>
        log("warn", "session.rules_confirm_failed", "confirming the rules cache failed", { sessionId: this.sessionId() }, e),
      )
      .finally(() => {
        this.refreshing = false;
      });
  }

  private load(): Promise<Held<CompiledTenantRules>> {
    const loading = (this.loading ??= this.fetchSnapshot().finally(() => {
      if (this.loading === loading) this.loading = undefined;
    }));
    return loading;
  }

  private async fetchSnapshot(): Promise<Held<CompiledTenantRules>> {
    for (let attempt = 0; attempt < MAX_STALE_SNAPSHOTS; attempt++) {
      const sentAt = Date.now();
      const snapshot = await this.source().snapshot(this.sessionId());
      // Not installed if a push announced a newer generation while this one travelled (it may hold a revoked rule).
      const held = this.held.install(snapshot, compileRuleList(snapshot.rules), sentAt);
      if (held) return held;
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
