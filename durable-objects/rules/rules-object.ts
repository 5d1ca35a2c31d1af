// RulesObject: one per tenant. It holds the tenant's remembered decisions compiled in memory, so a
// session's question "does a rule answer this?" costs one object-to-object call and no D1 read.
// The REST API writes rules to D1 and then calls `changed`, which reloads at once: a revoked rule
// stops matching before the API call returns. Sessions with requests waiting on people register
// here (`watch`), so a new "always" rule resolves their matching requests at once.

import { DurableObject } from "cloudflare:workers";
import { activeRules, insertRule, recordHits } from "../../db/queries/decision-rules";
import type { Env } from "../../worker/env";
import type { SessionObject } from "../session/session-object";
import { type CompiledTenantRules, compileTenantRules, decideWith, deriveFromChoice, toRuleRow } from "./engine";
import type { DecideRequest, DecideResult, RememberRequest, RuleCreated, RuleNotCreated } from "./types";
import type { DecideForResult } from "../session/rules-cache";

/** Hit counters are flushed to D1 at most this often, never on the decision path. */
const HIT_FLUSH_MS = 1000;

export class RulesObject extends DurableObject<Env> {
  private compiled?: { tenantId: string; rules: CompiledTenantRules };
  private loading?: Promise<CompiledTenantRules>;
  /** Bumped on every change, so a load that started before it never installs stale rules. */
  private generation = 0;
  private readonly hits = new Map<string, { count: number; at: number }>();
  private flushScheduled = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS watchers (session_id TEXT PRIMARY KEY, since INTEGER NOT NULL)");
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS no_rules_sessions (session_id TEXT PRIMARY KEY)");
  }

  /**
   * decide() for a session. When the tenant has no rules, the answer says so and the session is
   * remembered: it skips this call until `changed` tells it a rule appeared (session/rules-cache.ts).
   */
  async decideFor(tenantId: string, sessionId: string, request: DecideRequest): Promise<DecideForResult> {
    const generation = this.generation;
    const rules = await this.rules(tenantId);
    // A change while loading: the rules just read may be stale, so no "no rules" from them.
    if (rules.compiled.size > 0 || generation !== this.generation) return this.decide(tenantId, request);
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO no_rules_sessions (session_id) VALUES (?)", sessionId);
    return { decision: null, noRules: { generation } };
  }

  /** Would a rule answer this request, and with which offered option? Records the hit. */
  async decide(tenantId: string, request: DecideRequest): Promise<DecideResult> {
    const rules = await this.rules(tenantId);
    const result = await decideWith(rules, request, Date.now());
    if (result.ruleId) this.countHit(tenantId, result.ruleId);
    return result;
  }

  /** The same decision as a dry run (POST /v1/rules/test): no hit is counted. */
  async dryRun(tenantId: string, request: DecideRequest): Promise<DecideResult> {
    return decideWith(await this.rules(tenantId), request, Date.now());
  }

  /** A person chose allow_always or reject_always: derive the narrowest rule, store it, apply it now. */
  async remember(tenantId: string, request: RememberRequest): Promise<RuleCreated | RuleNotCreated | null> {
    const derived = await deriveFromChoice(request);
    if (!derived) return null;
    if ("reason" in derived) return { reason: derived.reason };
    const row = await insertRule(this.env.DB, toRuleRow(tenantId, derived, request));
    await this.changed(tenantId);
    return { id: row.id, decision: row.decision, description: row.description };
  }

  /** Rules changed in D1 (created, expiry changed, revoked): reload now, and let waiting sessions re-check. */
  async changed(tenantId: string): Promise<void> {
    this.generation += 1;
    this.compiled = undefined;
    this.loading = undefined;
    const rules = await this.rules(tenantId);
    if (rules.compiled.size > 0) await this.tellSessionsWithoutRules(tenantId);
    const watchers = this.ctx.storage.sql.exec<{ session_id: string }>("SELECT session_id FROM watchers").toArray();
    for (const w of watchers) {
      const stub: DurableObjectStub<SessionObject> = this.env.SESSIONS.get(this.env.SESSIONS.idFromName(`${tenantId}/${w.session_id}`));
      this.ctx.waitUntil(
        stub.reconsider({ tenantId, sessionId: w.session_id }).catch((e: unknown) => console.error("rules: reconsider failed", e)),
      );
    }
  }

  /** Sessions that skip the rules call learn that a rule exists before the API that made it answers. */
  private async tellSessionsWithoutRules(tenantId: string): Promise<void> {
    const generation = this.generation;
    const sessions = this.ctx.storage.sql.exec<{ session_id: string }>("SELECT session_id FROM no_rules_sessions").toArray();
    await Promise.all(
      sessions.map(async ({ session_id: sessionId }) => {
        const stub: DurableObjectStub<SessionObject> = this.env.SESSIONS.get(this.env.SESSIONS.idFromName(`${tenantId}/${sessionId}`));
        try {
          await stub.rulesAppeared({ tenantId, sessionId }, generation);
          this.ctx.storage.sql.exec("DELETE FROM no_rules_sessions WHERE session_id = ?", sessionId);
        } catch (e) {
          // Kept, and told again on the next change; meanwhile that session asks people (never approval).
          console.error("rules: telling a session that rules exist failed", e);
        }
      }),
    );
  }

  watch(_tenantId: string, sessionId: string): void {
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO watchers (session_id, since) VALUES (?, ?)", sessionId, Date.now());
  }

  unwatch(_tenantId: string, sessionId: string): void {
    this.ctx.storage.sql.exec("DELETE FROM watchers WHERE session_id = ?", sessionId);
  }

  override async alarm(): Promise<void> {
    this.flushScheduled = false;
    const tenantId = this.compiled?.tenantId ?? (await this.ctx.storage.get<string>("tenantId"));
    if (!tenantId || this.hits.size === 0) return;
    const batch = new Map(this.hits);
    this.hits.clear();
    await recordHits(this.env.DB, tenantId, batch).catch((e: unknown) => console.error("rules: hit flush failed", e));
  }

  private countHit(tenantId: string, ruleId: string): void {
    const hit = this.hits.get(ruleId) ?? { count: 0, at: 0 };
    hit.count += 1;
    hit.at = Date.now();
    this.hits.set(ruleId, hit);
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
