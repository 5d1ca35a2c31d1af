// RulesObject: one per tenant. It holds the tenant's remembered decisions compiled in memory and
// hands them to sessions, which decide locally (session/rules-cache.ts): a permission request that a
// rule answers costs no call here. Every change bumps a persisted *generation*; the REST API writes
// rules to D1 and then calls `changed`, which pushes the new generation to every session holding
// rules and answers only when each push was taken, or — for a session that could not be reached —
// when the lease on its rules has run out: a revoked rule stops matching before the API returns.
// The same push is how a new "always" rule resolves requests already waiting on people: a session
// stays on the push list while it holds rules or has requests waiting, and re-decides those
// requests when it is told (session-object.ts `rulesChanged`). Waiting costs no call here.

import { DurableObject } from "cloudflare:workers";
import { activeRules, insertRule, recordHits } from "../../db/queries/decision-rules";
import type { Env } from "../../core/env";
import { HitTally } from "../../protocol/hit-tally";
import { type CompiledTenantRules, compileTenantRules, decideWith, deriveFromChoice, toRuleRow } from "./engine";
import {
  type DecideRequest,
  type DecideResult,
  HIT_FLUSH_MS,
  type RememberRequest,
  type RuleCreated,
  type RuleNotCreated,
  type RulesContract,
  type RulesSnapshot,
} from "./contract";
import { objects } from "../objects";
import { log } from "../../core/log";

/** How long a session may use a snapshot (from when it asked) before it checks the generation again. */
const LEASE_MS = 10_000;
/** Slack for clocks read at I/O boundaries (Workers' Date.now() does not move during a computation). */
const LEASE_SLACK_MS = 1000;
/** Snapshots read again because the rules changed while they loaded, before the session is told to ask people. */
const MAX_SNAPSHOT_RETRIES = 3;

/**
 * The test seam (test/workerd/rules-cache.test.ts), given the instance runInDurableObject hands a
 * test: the object's name, and the lease it hands out, which a test may shorten. No member of the
 * class, so nothing a stub can reach over RPC.
 */
export interface RulesTesting {
  /** The object's name: the tenant it holds the rules of. */
  readonly name: string | undefined;
  /** The lease handed out with snapshots (ms). */
  leaseMs: number;
}

const seams = new WeakMap<RulesObject, RulesTesting>();

/** A live instance's test seam (RulesTesting). */
export function rulesTesting(instance: RulesObject): RulesTesting {
  const seam = seams.get(instance);
  if (!seam) throw new Error("not a RulesObject instance");
  return seam;
}

export class RulesObject extends DurableObject<Env> implements RulesContract {
  private compiled?: { tenantId: string; rules: CompiledTenantRules };
  private loading?: Promise<CompiledTenantRules>;
  /** Bumped and persisted on every change: a session's rules of an older generation are never used. */
  private generation: number;
  /** The lease handed out with snapshots (`leaseMs`, which a test can shorten) and the object's name: the test seam. */
  private readonly testing: RulesTesting;
  private readonly hits = new HitTally();
  private flushScheduled = false;
  /** How many times each session subscribed in this instance: a push's "remove me" loses to a newer subscription. */
  private readonly subscribed = new Map<string, number>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.testing = { name: ctx.id.name, leaseMs: LEASE_MS };
    seams.set(this, this.testing);
    // Sessions that took a snapshot or checked: each change is pushed to them. A session that answers
    // that it holds no rules and waits on nobody is removed; one that cannot be reached stays, and is
    // told again. (The `watchers` table of requests waiting on people is this list now.)
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS rules_sessions (session_id TEXT PRIMARY KEY)");
    ctx.storage.sql.exec("DROP TABLE IF EXISTS no_rules_sessions");
    ctx.storage.sql.exec("DROP TABLE IF EXISTS watchers");
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS generation (id INTEGER PRIMARY KEY CHECK (id = 0), value INTEGER NOT NULL)");
    this.generation = ctx.storage.sql.exec<{ value: number }>("SELECT value FROM generation").toArray()[0]?.value ?? 0;
  }

  /** The tenant's rules for a session to decide with, and the generation they are of; subscribes the session. */
  async snapshot(sessionId: string): Promise<RulesSnapshot> {
    this.subscribe(sessionId);
    for (let attempt = 0; attempt < MAX_SNAPSHOT_RETRIES; attempt++) {
      const generation = this.generation;
      const rules = await this.rules(this.tenantId());
      // A change while loading: the rules just read may be older than the generation now.
      if (generation === this.generation) return { generation, rules: rules.list, leaseMs: this.testing.leaseMs };
    }
    throw new Error("rules: the tenant's rules kept changing while a snapshot was read");
  }

  /**
   * The version check of a session whose lease ran out: the current generation (and the session stays
   * subscribed). A session that asks people while holding no rules (they could not be fetched) calls
   * it too, to be told of the next change.
   */
  check(sessionId: string): number {
    this.subscribe(sessionId);
    return this.generation;
  }

  /** Hits of rules that sessions applied, counted there and sent in batches. */
  recordHits(hits: [ruleId: string, count: number, at: number][]): void {
    const tenantId = this.tenantId();
    for (const [ruleId, count, at] of hits) this.countHit(tenantId, ruleId, count, at);
  }

  /** The same decision as a dry run (POST /v1/rules/test): no hit is counted. */
  async dryRun(request: DecideRequest): Promise<DecideResult> {
    return decideWith(await this.rules(this.tenantId()), request, Date.now());
  }

  /** A person chose allow_always or reject_always: derive the narrowest rule, store it, apply it now. */
  async remember(request: RememberRequest): Promise<RuleCreated | RuleNotCreated | null> {
    const derived = await deriveFromChoice(request);
    if (!derived) return null;
    if ("reason" in derived) return { reason: derived.reason };
    const row = await insertRule(this.env.DB, toRuleRow(this.tenantId(), derived, request));
    await this.changed();
    return { id: row.id, decision: row.decision, description: row.description };
  }

  /**
   * Rules changed in D1 (created, expiry changed, revoked): a new generation, pushed to every session
   * holding rules or waiting on people before this returns (a session with waiting requests re-decides
   * them under the new rules as it takes the push); then reload, warm for their snapshots.
   */
  async changed(): Promise<void> {
    const tenantId = this.tenantId();
    const generation = this.bump();
    this.compiled = undefined;
    this.loading = undefined;
    await this.tellSessions(tenantId, generation, Date.now() + this.testing.leaseMs + LEASE_SLACK_MS);
    await this.rules(tenantId);
  }

  private bump(): number {
    this.generation += 1;
    this.ctx.storage.sql.exec("INSERT OR REPLACE INTO generation (id, value) VALUES (0, ?)", this.generation);
    return this.generation;
  }

  private subscribe(sessionId: string): void {
    this.subscribed.set(sessionId, (this.subscribed.get(sessionId) ?? 0) + 1);
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO rules_sessions (session_id) VALUES (?)", sessionId);
  }

  /**
   * Every subscribed session drops rules older than `generation`. One that cannot be told in time
   * is waited out: at `leaseEnds` its lease on the old rules has run out, so it checks before using them.
   */
  private async tellSessions(tenantId: string, generation: number, leaseEnds: number): Promise<void> {
    const sessions = this.ctx.storage.sql.exec<{ session_id: string }>("SELECT session_id FROM rules_sessions").toArray();
    await Promise.all(
      sessions.map(async ({ session_id: sessionId }) => {
        const stub = objects.session(this.env, tenantId, sessionId);
        const mark = this.subscribed.get(sessionId);
        try {
          const holds = await beforeDeadline(stub.rulesChanged(generation), leaseEnds);
          // Not if it subscribed again while the push travelled (it answered "nothing held", then took a snapshot).
          if (!holds && this.subscribed.get(sessionId) === mark) {
            this.ctx.storage.sql.exec("DELETE FROM rules_sessions WHERE session_id = ?", sessionId);
            this.subscribed.delete(sessionId);
          }
        } catch (e) {
          // Kept, and told again on the next change; its lease runs out by `leaseEnds`.
          log("warn", "rules.push_failed", "telling a session that the rules changed failed; waiting out its lease", { sessionId }, e);
          await new Promise((resolve) => setTimeout(resolve, Math.max(0, leaseEnds - Date.now())));
        }
      }),
    );
  }

  override async alarm(): Promise<void> {
    this.flushScheduled = false;
    // Without its name (an alarm after a runtime restart), the tenant stored when the hits were counted.
    const tenantId = this.ctx.id.name ?? this.compiled?.tenantId ?? (await this.ctx.storage.get<string>("tenantId"));
    if (!tenantId || this.hits.size === 0) return;
    await recordHits(this.env.DB, tenantId, this.hits.take()).catch((e: unknown) =>
      log("warn", "rules.hit_flush_failed", "writing rule hit counts to D1 failed", { tenantId }, e),
    );
  }

  /**
   * This object's tenant: its name (RULES is named by the tenant id; object-name.ts). Its RPC methods
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
    const generation = this.generation;
    const loading = (this.loading ??= activeRules(this.env.DB, tenantId).then((rows) => {
      const rules = compileTenantRules(rows);
      if (generation === this.generation) {
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

/** The promise, or a rejection once `deadline` (a Date.now() time) has passed. */
function beforeDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("no answer before the lease ran out")), Math.max(0, deadline - Date.now()));
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
