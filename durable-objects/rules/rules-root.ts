// The tenant's RulesObject as its *root* (rules-object.ts is the shell that names it; decision 0031):
// the rules compiled in memory from D1 and their persisted *generation*, bumped on every change; the
// leases to the tenant's shards (`shardLease`), the change the REST API announces (`changed`), rules
// remembered from a person's *_always choice, the hits the shards count, and the tenant's unseen
// changes and clean leases (unseen-changes.ts, protocol/unseen-lease.ts; decisions 0046, 0058).

import { activeRules, insertRule, recordHits } from "../../db/queries/decision-rules";
import { StoredLimitExceeded } from "../../db/queries/stored-limits";
import type { Env } from "../../core/env";
import type { FourEyesSettings, TenantSettings } from "../../core/principal";
import { tenantById } from "../../db/queries/tenants";
import { POLICY_UNKNOWN } from "../../protocol/people/four-eyes";
import { HitTally } from "../../protocol/hit-tally";
import { LeaseGiver } from "../../protocol/generation-lease";
import { UnseenRoot } from "../../protocol/unseen-lease";
import { type CompiledTenantRules, compileTenantRules, decideWith, deriveFromChoice, toRuleRow } from "./engine";
import {
  type DecideRequest,
  type DecideResult,
  HIT_FLUSH_MS,
  LEASE_SLACK_MS,
  RULES_SHARDS,
  SESSION_LEASE_MS,
  type RememberRequest,
  type RuleCreated,
  type RuleNotCreated,
  type RulesSnapshot,
  SHARD_LEASE_MS,
  WIDEN_WAIT_MS,
} from "./contract";
import { UnseenChanges } from "./unseen-changes";
import { objects } from "../objects";
import { log } from "../../core/log";

/** How much longer than a shard the root waits for its shards' answers to a widening (the calls themselves). */
const WIDEN_ROOT_SLACK_MS = 20;

/** Copies of the rules read again because they changed while they loaded, before the shard is refused. */
const MAX_SNAPSHOT_RETRIES = 3;

export class RulesRoot {
  private compiled?: { tenantId: string; rules: CompiledTenantRules };
  private loading?: Promise<CompiledTenantRules>;
  private readonly hits = new HitTally();
  private flushScheduled = false;
  /** The root's leases to its shards. */
  readonly giver: LeaseGiver;
  /** What rule-answered steps changed that no person saw, in every session of the tenant (decision 0046). */
  readonly unseen: UnseenChanges;
  /** The unseen-changes gate, decided in the sessions under clean leases (decision 0058). */
  readonly unseenGate: UnseenRoot;
  /** Calls it made to other objects while answering `changed` (the API's path; the test seam reads it). */
  changeCalls = 0;

  constructor(
    private readonly ctx: DurableObjectState,
    env: Env,
    /** The tenant's D1: `env.DB`, unless a test put a faulty one in the object's seam. */
    private readonly d1: () => D1Database,
  ) {
    // Before shards, the root told every session itself (decision 0005); its list is not used any more.
    ctx.storage.sql.exec("DROP TABLE IF EXISTS rules_sessions");
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS generation (id INTEGER PRIMARY KEY CHECK (id = 0), value INTEGER NOT NULL)");
    // The shards that ever took a lease: each is told of every change (a restarted root forgets the leases, not them).
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS rules_shards (idx INTEGER PRIMARY KEY)");
    const generation = ctx.storage.sql.exec<{ value: number }>("SELECT value FROM generation").toArray()[0]?.value ?? 0;
    const unseen = new UnseenChanges(ctx.storage.sql);
    this.unseen = unseen;
    this.unseenGate = new UnseenRoot(
      {
        now: Date.now,
        sleepUntil: (at) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()))),
        revoke: async (sessionId, leaseId) => {
          // RPC loses the tuple's type: the report is rebuilt field by field.
          const r = await objects.session(env, this.tenantId(), sessionId).unseenRevoke(leaseId);
          return { seq: r.seq, dropped: r.dropped, readers: r.readers.map(([id, at]): [string, number] => [String(id), Number(at)]) };
        },
        store: unseen,
      },
      SESSION_LEASE_MS,
      LEASE_SLACK_MS,
    );
    this.giver = new LeaseGiver(
      {
        now: Date.now,
        sleepUntil: (at) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()))),
        tell: (shard, g, widens) => {
          this.changeCalls++;
          return objects.rulesShard(env, this.tenantId(), Number(shard)).shardChanged(g, widens === true);
        },
      },
      generation,
      SHARD_LEASE_MS,
      LEASE_SLACK_MS,
    );
  }

  /** The rules, leased to shard `index` (remembered, so it is told of every change from now on). */
  async shardLease(index: number): Promise<RulesSnapshot> {
    const giver = this.giver;
    if (!Number.isInteger(index) || index < 0 || index >= RULES_SHARDS) throw new Error(`rules: no shard ${index}`);
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO rules_shards (idx) VALUES (?)", index);
    for (let attempt = 0; attempt < MAX_SNAPSHOT_RETRIES; attempt++) {
      const generation = giver.generation;
      const rules = await this.rules(this.tenantId());
      // A change while loading: the rules just read may be older than the generation now.
      if (generation !== giver.generation) continue;
      const grant = giver.grant(String(index), generation);
      if (grant) return { generation, rules: rules.list, leaseMs: grant.leaseMs };
    }
    throw new Error("rules: the tenant's rules kept changing while a snapshot was read");
  }

  /** Hits of rules that sessions applied, counted there and sent on by their shards in batches. */
  shardHits(hits: [ruleId: string, count: number, at: number][]): void {
    const tenantId = this.tenantId();
    for (const [ruleId, count, at] of hits) this.countHit(tenantId, ruleId, count, at);
  }

  /** The same decision as a dry run (POST /v1/rules/test): no hit is counted. */
  async dryRun(request: DecideRequest): Promise<DecideResult> {
    return decideWith(await this.rules(this.tenantId()), request, Date.now());
  }

  /**
   * A person chose allow_always or reject_always: derive the narrowest rule, store it, apply it now
   * (`changed`: the object's own, so its test seam hears of it as of a call).
   */
  async remember(request: RememberRequest, changed: () => Promise<void>): Promise<RuleCreated | RuleNotCreated | null> {
    const derived = await deriveFromChoice(request, await this.fourEyesPolicy());
    if (!derived) return null;
    if ("reason" in derived) return { reason: derived.reason };
    let row;
    try {
      row = await insertRule(this.d1(), toRuleRow(this.tenantId(), derived, request));
    } catch (error) {
      // The tenant's rules are at their limit (decision 0041): the choice applies once, and everyone is told why.
      if (error instanceof StoredLimitExceeded) return { reason: error.message };
      throw error;
    }
    await changed();
    return { id: row.id, decision: row.decision, description: row.description };
  }

  /**
   * Rules changed in D1 (created, expiry changed, revoked): a new generation, announced to every shard
   * that took a lease; answers once none of their sessions can use an older one (the shards fence
   * theirs; one that cannot be told is waited out to the end of its lease). Then reloads in the background, warm for the shards.
   * A change that only `widens` (a new allow rule: it can only turn what is asked into answers,
   * decision 0049) is not fenced: it answers once the shards told their sessions holding a lease, or
   * after WIDEN_WAIT_MS and a little more (the rest hear it in the background or at their next check).
   */
  async changed(widens = false): Promise<void> {
    const giver = this.giver;
    const tenantId = this.tenantId();
    const generation = giver.generation + 1;
    this.ctx.storage.sql.exec("INSERT OR REPLACE INTO generation (id, value) VALUES (0, ?)", generation);
    this.compiled = undefined;
    this.loading = undefined;
    const shards = this.ctx.storage.sql
      .exec<{ idx: number }>("SELECT idx FROM rules_shards")
      .toArray()
      .map((r) => String(r.idx));
    const started = Date.now();
    const calls = this.changeCalls;
    if (widens) {
      const { told } = giver.widen(generation, shards);
      this.ctx.waitUntil(told);
      await Promise.race([told, new Promise((resolve) => setTimeout(resolve, WIDEN_WAIT_MS + WIDEN_ROOT_SLACK_MS))]);
    } else {
      const { fenced, told } = giver.advance(generation, shards);
      this.ctx.waitUntil(told);
      await fenced;
    }
    log(
      "info",
      "rules.changed",
      widens
        ? "the tenant's rules widened: sessions take them at their next request"
        : "the tenant's rules changed: no session can use older ones now",
      {
        tenantId,
        generation,
        widens,
        objectsTold: this.changeCalls - calls,
        waitedMs: Date.now() - started,
      },
    );
    // Warm for the shards' next leases, off the API's path (a failed load is retried by the next lease).
    this.ctx.waitUntil(this.rules(tenantId).catch(() => undefined));
  }

  /** The object's alarm: the hits counted since the last one are written to D1. */
  async flushHits(): Promise<void> {
    this.flushScheduled = false;
    // Without its name (an alarm after a runtime restart), the tenant stored when the hits were counted.
    const tenantId = this.ctx.id.name ?? this.compiled?.tenantId ?? (await this.ctx.storage.get<string>("tenantId"));
    if (!tenantId || this.hits.size === 0) return;
    await recordHits(this.d1(), tenantId, this.hits.take()).catch((e: unknown) =>
      log("warn", "rules.hit_flush_failed", "writing rule hit counts to D1 failed", { tenantId }, e),
    );
  }

  /**
   * The tenant's four-eyes policy as it stands now, so no "always" stores an allow that would answer an
   * operation the policy holds (decision 0038). Unreadable: every operation held (closed world).
   */
  private async fourEyesPolicy(): Promise<FourEyesSettings> {
    try {
      const tenant = await tenantById(this.d1(), this.tenantId());
      return (tenant ? (JSON.parse(tenant.settings) as TenantSettings).fourEyes : undefined) ?? { operations: [] };
    } catch {
      return POLICY_UNKNOWN;
    }
  }

  /**
   * This object's tenant: its name (RULES is named by the tenant id; objects.ts `objectNames`). Its RPC methods
   * take no tenant id: a stub reaches the object only by that name, so every call is for this tenant.
   */
  private tenantId(): string {
    const name = this.ctx.id.name;
    if (name === undefined) throw new Error("rules: the object has no name, so no tenant");
    return name;
  }

  private countHit(tenantId: string, ruleId: string, count: number, at: number): void {
    this.hits.add(ruleId, count, at);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    this.ctx.waitUntil(this.ctx.storage.put("tenantId", tenantId).then(() => this.ctx.storage.setAlarm(Date.now() + HIT_FLUSH_MS)));
  }

  private async rules(tenantId: string): Promise<CompiledTenantRules> {
    if (this.compiled?.tenantId === tenantId) return this.compiled.rules;
    const giver = this.giver;
    const generation = giver.generation;
    const loading = (this.loading ??= activeRules(this.d1(), tenantId).then((rows) => {
      const rules = compileTenantRules(rows);
      if (generation === giver.generation) {
        this.compiled = { tenantId, rules };
        this.loading = undefined;
      }
      return rules;
    }));
    loading.catch(() => {
      if (this.loading === loading) this.loading = undefined; // a failed load is retried by the next call
    });
    return loading;
  }
}
