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
// This file is the shell: it names the object's role, tells the test seam of each RPC call, and hands
// the call to the root (rules-root.ts) or the shard.

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../core/env";
import type { Grant } from "../../protocol/generation-lease";
import type { DecideRequest, DecideResult, RememberRequest, RuleCreated, RuleNotCreated, RulesContract, RulesSnapshot } from "./contract";
import { RulesShard } from "./rules-shard";
import { RulesRoot } from "./rules-root";
import type { NewUnseenChange, UnseenHold } from "../../protocol/unseen";
import type { CleanLease, ReaderReport, UnseenStep, UnseenStepAnswer } from "../../protocol/unseen-lease";
import { objects, splitName } from "../objects";
import { testSeams } from "../../core/test-seam";

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
  /** This object as the root (undefined in a shard). */
  private readonly root?: RulesRoot;
  /** This object as a shard (undefined in the root). */
  private readonly shard?: RulesShard;

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
      this.root = new RulesRoot(ctx, env, () => d1Of(this, env));
    }
    const giver = this.shard?.giver ?? this.root?.giver;
    const root = this.root;
    const unseenGate = root?.unseenGate;
    seams.attach(this, {
      name: ctx.id.name,
      get leaseMs() {
        return giver?.leaseMs ?? 0;
      },
      set leaseMs(ms: number) {
        if (giver) giver.leaseMs = ms;
      },
      get changeCalls() {
        return root?.changeCalls ?? 0;
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
  shardLease(index: number): Promise<RulesSnapshot> {
    return this.asRoot("shardLease").shardLease(index);
  }

  /** Hits of rules that sessions applied, counted there and sent on by their shards in batches. */
  shardHits(hits: [ruleId: string, count: number, at: number][]): void {
    this.asRoot("shardHits").shardHits(hits);
  }

  /** The same decision as a dry run (POST /v1/rules/test): no hit is counted. */
  dryRun(request: DecideRequest): Promise<DecideResult> {
    return this.asRoot("dryRun").dryRun(request);
  }

  /** A person chose allow_always or reject_always: derive the narrowest rule, store it, apply it now. */
  remember(request: RememberRequest): Promise<RuleCreated | RuleNotCreated | null> {
    return this.asRoot("remember").remember(request, () => this.changed());
  }

  /**
   * A step an allow rule would answer, from a session without a live clean lease or writing: held
   * (unseen changes, or a write while a reader may be open), or let go, with a clean lease when one can be granted.
   */
  unseenStep(step: UnseenStep): Promise<UnseenStepAnswer> {
    return this.asRoot("unseenStep").unseenGate.step(step);
  }

  /** A session's clean lease renewed in the background (null: none can be granted now). */
  unseenRenew(sessionId: string, report: ReaderReport): CleanLease | null {
    return this.asRoot("unseenRenew").unseenGate.renew(sessionId, report);
  }

  /** A session's open readers, off the answer's path (a reader finished, its lease ran out). */
  unseenReport(sessionId: string, report: ReaderReport): void {
    this.asRoot("unseenReport").unseenGate.report(sessionId, report);
  }

  /** What an agent changed with nobody asked (decision 0046): unseen; answers once no clean lease granted before it lives. */
  unseenNote(changes: NewUnseenChange[]): Promise<void> {
    return this.asRoot("unseenNote").unseenGate.note(changes);
  }

  /** A person allowed a step whose card showed these unseen changes (protocol/unseen.ts `seenBy`). */
  unseenSeen(ids: number[]): number {
    return this.asRoot("unseenSeen").unseen.seen(ids);
  }

  /** What is unseen now (GET /v1/unseen). */
  unseenNow(): UnseenHold | null {
    return this.asRoot("unseenNow").unseen.hold();
  }

  /**
   * Rules changed in D1 (created, expiry changed, revoked): a new generation, announced to every shard
   * that took a lease; answers once none of their sessions can use an older one (the shards fence
   * theirs; one that cannot be told is waited out to the end of its lease). Then reloads in the background, warm for the shards.
   * A change that only `widens` (a new allow rule: it can only turn what is asked into answers,
   * decision 0049) is not fenced: it answers once the shards told their sessions holding a lease, or
   * after WIDEN_WAIT_MS and a little more (the rest hear it in the background or at their next check).
   */
  changed(widens = false): Promise<void> {
    return this.asRoot("changed").changed(widens);
  }

  /** The root's hits counted since the last alarm, written to D1 (a shard counts none here). */
  override async alarm(): Promise<void> {
    await this.root?.flushHits();
  }

  /** This object as a shard, for the RPC call `method` (the class's test seam `rulesCalls` is told of it). */
  private asShard(method: string): RulesShard {
    rulesCalls.seen?.(this.ctx.id.name ?? "", method);
    if (!this.shard) throw new Error("rules: a session's call reached the tenant's root, not a shard");
    return this.shard;
  }

  /** This object as the root, for the RPC call `method` (the class's test seam `rulesCalls` is told of it). */
  private asRoot(method: string): RulesRoot {
    rulesCalls.seen?.(this.ctx.id.name ?? "", method);
    if (!this.root) throw new Error("rules: the root's method was called on a shard");
    return this.root;
  }
}
