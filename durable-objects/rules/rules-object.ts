// RulesObject: a tenant's remembered decisions, in two roles of one class (decision 0031).
// - The *root*, named by the tenant id: holds the rules compiled in memory (from D1) and their
//   persisted *generation*, bumped on every change. It leases the rules to the tenant's shards
//   (`shardLease`), and the REST API, having written a change to D1, calls `changed`: a new
//   generation, announced to the shards that ever took a lease (at most RULES_SHARDS calls, however
//   many sessions there are); it answers once each shard has fenced its sessions or, for one that
//   could not be told, once the shard's own lease has run out. A revoked rule stops matching before
//   the API returns.
// - A *shard*, named `${tenantId}/${index}` (rules-shard.ts): leases the rules on to the sessions
//   that hash to it, which decide locally (session/tenant-rules.ts): a request a rule answers costs
//   no call, and the first request after a change costs one call to a shard, not to one object.
// The decision logic (leases, fences, never-older) is protocol/generation-lease.ts, model-tested.

import { DurableObject } from "cloudflare:workers";
import { activeRules, insertRule, recordHits } from "../../db/queries/decision-rules";
import { StoredLimitExceeded } from "../../db/queries/stored-limits";
import type { Env } from "../../core/env";
import type { FourEyesSettings, TenantSettings } from "../../core/principal";
import { tenantById } from "../../db/queries/tenants";
import { POLICY_UNKNOWN } from "../../protocol/people/four-eyes";
import { HitTally } from "../../protocol/hit-tally";
import { type Grant, LeaseGiver } from "../../protocol/generation-lease";
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
  type RulesContract,
  type RulesSnapshot,
  SHARD_LEASE_MS,
  WIDEN_WAIT_MS,
} from "./contract";
import { RulesShard } from "./rules-shard";
import { UnseenChanges } from "./unseen-changes";
import type { NewUnseenChange, UnseenHold } from "../../protocol/unseen";
import { type CleanLease, type ReaderReport, UnseenRoot, type UnseenStep, type UnseenStepAnswer } from "../../protocol/unseen-lease";
import { objects, splitName } from "../objects";
import { log } from "../../core/log";
import { testSeams } from "../../core/test-seam";

/** How much longer than a shard the root waits for its shards' answers to a widening (the calls themselves). */
const WIDEN_ROOT_SLACK_MS = 20;

/** Copies of the rules read again because they changed while they loaded, before the shard is refused. */
const MAX_SNAPSHOT_RETRIES = 3;

/**
 * The test seam (test/workerd/tenant-rules.test.ts), given the instance runInDurableObject hands a
 * test. No member of the class, so nothing a stub can reach over RPC.
 */
interface RulesTesting {
  /** The object's name: the tenant (root) or `${tenantId}/${index}` (a shard). */
  readonly name: string | undefined;
  /** The lease it hands (ms): a shard's to its sessions, the root's to its shards; a test may lengthen it to observe a fence or hold a path steady. */
  leaseMs: number;
  /** The root: calls it made to other objects while answering `changed` (the API's path). */
  readonly changeCalls: number;
  /** The root: the clean lease it grants its sessions (ms, decision 0058); a test lengthens it so that none runs out while it counts calls. */
  cleanLeaseMs: number;
  /**
   * Set by a test to a D1 that fails or is slow (test/workerd/fuzz-faults.ts `setD1`): used instead of
   * `env.DB` by the root's reads and writes (loading the rules, flushing hits, a created rule).
   */
  d1?: D1Database;
  /**
   * A shard: set by a test to watch or fail its news to a session that its rules changed; called
   * instead of the session's `rulesChanged`, which it is handed as `tell`.
   */
  tellSession?: (sessionId: string, generation: number, tell: () => Promise<boolean>) => Promise<boolean>;
}

/**
 * The class's test seam, beside each instance's (`rulesTesting`): told of every RPC call any
 * RulesObject of this isolate takes, by the object's name and the method, so a test counts the calls
 * a path makes, also to instances woken after it began (test/workerd/fuzz-faults.ts `countRulesCalls`).
 */
export const rulesCalls: { seen?: (name: string, method: string) => void } = {};

const seams = testSeams<RulesObject, RulesTesting>("RulesObject");

/** The tenant's D1 for an instance: its env's, unless a test put a faulty one in its seam (`RulesTesting.d1`). */
function d1Of(instance: RulesObject, env: Env): D1Database {
  return seams.find(instance)?.d1 ?? env.DB;
}

/** A live instance's test seam (RulesTesting). */
export const rulesTesting = seams.of;

export class RulesObject extends DurableObject<Env> implements RulesContract {
  private compiled?: { tenantId: string; rules: CompiledTenantRules };
  private loading?: Promise<CompiledTenantRules>;
  private readonly hits = new HitTally();
  private flushScheduled = false;
  /** The root's leases to its shards (undefined in a shard). */
  private readonly giver?: LeaseGiver;
  /** This object as a shard (undefined in the root). */
  private readonly shard?: RulesShard;
  /** The root: what rule-answered steps changed that no person saw, in every session of the tenant (decision 0046). */
  private readonly unseen?: UnseenChanges;
  /** The root: the unseen-changes gate, decided in the sessions under clean leases (decision 0058). */
  private readonly unseenGate?: UnseenRoot;
  private changeCalls = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const shardName = splitName(ctx.id.name);
    if (shardName) {
      const index = Number(shardName.rest);
      this.shard = new RulesShard(
        {
          sql: ctx.storage.sql,
          waitUntil: (p) => ctx.waitUntil(p),
          root: () => objects.rules(env, shardName.tenantId),
          rulesChanged: (sessionId, generation) => {
            const tell = () => objects.session(env, shardName.tenantId, sessionId).rulesChanged(generation);
            const hook = seams.find(this)?.tellSession;
            return hook ? hook(sessionId, generation, tell) : tell();
          },
        },
        index,
      );
    } else {
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
    const giver = this.shard?.giver ?? this.giver;
    const changeCalls = () => this.changeCalls;
    const unseenGate = this.unseenGate;
    seams.attach(this, {
      name: ctx.id.name,
      get leaseMs() {
        return giver?.leaseMs ?? 0;
      },
      set leaseMs(ms: number) {
        if (giver) giver.leaseMs = ms;
      },
      get changeCalls() {
        return changeCalls();
      },
      get cleanLeaseMs() {
        return unseenGate?.leaseMs ?? 0;
      },
      set cleanLeaseMs(ms: number) {
        if (unseenGate) unseenGate.leaseMs = ms;
      },
    });
  }

  // ── a shard, for its sessions (rules-shard.ts) ──────────────────────────────────────────────────
  snapshot(sessionId: string): Promise<RulesSnapshot> {
    return this.asShard("snapshot").snapshot(sessionId);
  }

  check(sessionId: string): Promise<Grant> {
    return this.asShard("check").check(sessionId);
  }

  watch(sessionId: string): void {
    this.asShard("watch").watch(sessionId);
  }

  recordHits(hits: [ruleId: string, count: number, at: number][]): void {
    this.asShard("recordHits").recordHits(hits);
  }

  shardChanged(generation: number, widens = false): Promise<void> {
    return this.asShard("shardChanged").changed(generation, widens);
  }

  // ── the root ────────────────────────────────────────────────────────────────────────────────────
  /** The rules, leased to shard `index` (remembered, so it is told of every change from now on). */
  async shardLease(index: number): Promise<RulesSnapshot> {
    const giver = this.asRoot("shardLease");
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
    this.asRoot("shardHits");
    const tenantId = this.tenantId();
    for (const [ruleId, count, at] of hits) this.countHit(tenantId, ruleId, count, at);
  }

  /** The same decision as a dry run (POST /v1/rules/test): no hit is counted. */
  async dryRun(request: DecideRequest): Promise<DecideResult> {
    this.asRoot("dryRun");
    return decideWith(await this.rules(this.tenantId()), request, Date.now());
  }

  /** A person chose allow_always or reject_always: derive the narrowest rule, store it, apply it now. */
  async remember(request: RememberRequest): Promise<RuleCreated | RuleNotCreated | null> {
    this.asRoot("remember");
    const derived = await deriveFromChoice(request, await this.fourEyesPolicy());
    if (!derived) return null;
    if ("reason" in derived) return { reason: derived.reason };
    let row;
    try {
      row = await insertRule(d1Of(this, this.env), toRuleRow(this.tenantId(), derived, request));
    } catch (error) {
      // The tenant's rules are at their limit (decision 0041): the choice applies once, and everyone is told why.
      if (error instanceof StoredLimitExceeded) return { reason: error.message };
      throw error;
    }
    await this.changed();
    return { id: row.id, decision: row.decision, description: row.description };
  }

  /**
   * A step an allow rule would answer, from a session without a live clean lease or writing: held
   * (unseen changes, or a write while a reader may be open), or let go, with a clean lease when one can be granted.
   */
  unseenStep(step: UnseenStep): Promise<UnseenStepAnswer> {
    this.asUnseen("unseenStep");
    return this.unseenRoot().step(step);
  }

  /** A session's clean lease renewed in the background (null: none can be granted now). */
  unseenRenew(sessionId: string, report: ReaderReport): CleanLease | null {
    this.asUnseen("unseenRenew");
    return this.unseenRoot().renew(sessionId, report);
  }

  /** A session's open readers, off the answer's path (a reader finished, its lease ran out). */
  unseenReport(sessionId: string, report: ReaderReport): void {
    this.asUnseen("unseenReport");
    this.unseenRoot().report(sessionId, report);
  }

  /** What an agent changed with nobody asked (decision 0046): unseen; answers once no clean lease granted before it lives. */
  unseenNote(changes: NewUnseenChange[]): Promise<void> {
    this.asUnseen("unseenNote");
    return this.unseenRoot().note(changes);
  }

  /** A person allowed a step that showed the unseen changes up to `upTo`. */
  unseenSeen(upTo: number): number {
    return this.asUnseen("unseenSeen").seen(upTo);
  }

  /** What is unseen now (GET /v1/unseen). */
  unseenNow(): UnseenHold | null {
    return this.asUnseen("unseenNow").hold();
  }

  private unseenRoot(): UnseenRoot {
    if (!this.unseenGate) throw new Error("rules: the root's method was called on a shard");
    return this.unseenGate;
  }

  /** The root's unseen changes, for the RPC call `method` (the class's test seam `rulesCalls` is told of it). */
  private asUnseen(method: string): UnseenChanges {
    rulesCalls.seen?.(this.ctx.id.name ?? "", method);
    if (!this.unseen) throw new Error("rules: the root's method was called on a shard");
    return this.unseen;
  }

  /**
   * The tenant's four-eyes policy as it stands now, so no "always" stores an allow that would answer an
   * operation the policy holds (decision 0038). Unreadable: every operation held (closed world).
   */
  private async fourEyesPolicy(): Promise<FourEyesSettings> {
    try {
      const tenant = await tenantById(d1Of(this, this.env), this.tenantId());
      return (tenant ? (JSON.parse(tenant.settings) as TenantSettings).fourEyes : undefined) ?? { operations: [] };
    } catch {
      return POLICY_UNKNOWN;
    }
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
    const giver = this.asRoot("changed");
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

  override async alarm(): Promise<void> {
    this.flushScheduled = false;
    // Without its name (an alarm after a runtime restart), the tenant stored when the hits were counted.
    const tenantId = this.ctx.id.name ?? this.compiled?.tenantId ?? (await this.ctx.storage.get<string>("tenantId"));
    if (!tenantId || this.hits.size === 0) return;
    await recordHits(d1Of(this, this.env), tenantId, this.hits.take()).catch((e: unknown) =>
      log("warn", "rules.hit_flush_failed", "writing rule hit counts to D1 failed", { tenantId }, e),
    );
  }

  /** This object as a shard, for the RPC call `method` (the class's test seam `rulesCalls` is told of it). */
  private asShard(method: string): RulesShard {
    rulesCalls.seen?.(this.ctx.id.name ?? "", method);
    if (!this.shard) throw new Error("rules: a session's call reached the tenant's root, not a shard");
    return this.shard;
  }

  /** This object as the root: for the RPC call `method` (the class's test seam `rulesCalls` is told of it), or for its own work. */
  private asRoot(method?: string): LeaseGiver {
    if (method) rulesCalls.seen?.(this.ctx.id.name ?? "", method);
    if (!this.giver) throw new Error("rules: the root's method was called on a shard");
    return this.giver;
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
    const giver = this.asRoot();
    const generation = giver.generation;
    const loading = (this.loading ??= activeRules(d1Of(this, this.env), tenantId).then((rows) => {
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
