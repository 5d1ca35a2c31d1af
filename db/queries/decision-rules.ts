// D1 access to remembered decisions. Every statement is scoped by tenant id.

import { and, desc, eq, getTableColumns, isNull, like, lt, or, sql } from "drizzle-orm";
import { dbOf } from "../client";
import { decisionRules, type DecisionRuleRow } from "../schema";
import { MAX_RULE_BYTES } from "../../protocol/tenant-limits";
import { StoredLimitExceeded, storedLimit, storedLimitSql } from "./stored-limits";

export type NewDecisionRule = typeof decisionRules.$inferInsert;

const rulesDb = dbOf;

/** The rules that can still match: not revoked (expired ones are filtered at decision time). */
export async function activeRules(db: D1Database, tenantId: string): Promise<DecisionRuleRow[]> {
  return rulesDb(db)
    .select()
    .from(decisionRules)
    .where(and(eq(decisionRules.tenantId, tenantId), isNull(decisionRules.revokedAt)));
}

/** One rule's bytes as `ruleBytesPerTenant` counts them: what its maker wrote (the SQL below counts the same). */
const RULE_BYTES_SQL =
  "length(CAST(matcher AS BLOB)) + length(CAST(matcher_text AS BLOB)) + length(CAST(description AS BLOB)) + coalesce(length(CAST(scope_project AS BLOB)), 0) + coalesce(length(CAST(scope_user AS BLOB)), 0) + coalesce(length(CAST(scope_agent AS BLOB)), 0)";

const utf8 = new TextEncoder();
const bytesOf = (text: string | null | undefined) => (text ? utf8.encode(text).length : 0);

function ruleBytes(rule: NewDecisionRule): number {
  return (
    bytesOf(rule.matcher) +
    bytesOf(rule.matcherText) +
    bytesOf(rule.description) +
    bytesOf(rule.scopeProject) +
    bytesOf(rule.scopeUser) +
    bytesOf(rule.scopeAgent)
  );
}

/**
 * Stores a rule if the tenant's rules stay within `rulesPerTenant` and `ruleBytesPerTenant` (rules
 * not revoked; decision 0041), checked in the insert itself; else throws StoredLimitExceeded.
 */
export async function insertRule(db: D1Database, rule: NewDecisionRule): Promise<DecisionRuleRow> {
  const bytes = ruleBytes(rule);
  if (bytes > MAX_RULE_BYTES)
    throw new StoredLimitExceeded(
      "ruleBytes",
      MAX_RULE_BYTES,
      `This rule is ${bytes} bytes (matcher, description and scope); one rule may be at most ${MAX_RULE_BYTES}. Write a narrower matcher or a shorter description.`,
      413,
    );
  const count = storedLimitSql("rulesPerTenant", rule.tenantId);
  const total = storedLimitSql("ruleBytesPerTenant", rule.tenantId);
  const values = [
    rule.id,
    rule.tenantId,
    rule.decision,
    rule.scopeProject ?? null,
    rule.scopeUser ?? null,
    rule.scopeAgent ?? null,
    rule.matcher,
    rule.matcherText,
    rule.description,
    rule.expiresAt ?? null,
    rule.createdByKey ?? null,
    rule.createdByUser ?? null,
    rule.createdFromSession ?? null,
    rule.createdFromToolCall ?? null,
    rule.createdAt ?? Date.now(),
  ];
  // The row comes back from the insert itself: one D1 call on the API's path, not two (each waits
  // in D1's queue behind whatever the tenant's sessions write; issue 40, decision 0065).
  const inserted = await db
    .prepare(
      `INSERT INTO decision_rules (id, tenant_id, decision, scope_project, scope_user, scope_agent, matcher, matcher_text, description, expires_at, created_by_key, created_by_user, created_from_session, created_from_tool_call, created_at)
       SELECT ${values.map(() => "?").join(", ")}
       WHERE (SELECT count(*) FROM decision_rules WHERE tenant_id = ? AND revoked_at IS NULL) < ${count.sql}
         AND (SELECT coalesce(sum(${RULE_BYTES_SQL}), 0) FROM decision_rules WHERE tenant_id = ? AND revoked_at IS NULL) + ? <= ${total.sql}
       RETURNING *`,
    )
    .bind(...values, rule.tenantId, ...count.binds, rule.tenantId, bytes, ...total.binds)
    .first<Record<string, unknown>>();
  if (!inserted) throw await overBudget(db, rule.tenantId, bytes);
  return ruleOfSqlRow(inserted);
}

/** A row as SQL names its columns, keyed as drizzle's schema keys them (every column of decision_rules is text or integer). */
function ruleOfSqlRow(raw: Record<string, unknown>): DecisionRuleRow {
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(decisionRules))) row[key] = raw[column.name] ?? null;
  // SAFETY: every column of the table was read above, by the schema's own names.
  return row as DecisionRuleRow;
}

/** Which of the two limits refused a rule of `bytes`, said so a person can act on it. */
async function overBudget(db: D1Database, tenantId: string, bytes: number): Promise<StoredLimitExceeded> {
  const used = await db
    .prepare(
      `SELECT count(*) AS n, coalesce(sum(${RULE_BYTES_SQL}), 0) AS b FROM decision_rules WHERE tenant_id = ? AND revoked_at IS NULL`,
    )
    .bind(tenantId)
    .first<{ n: number; b: number }>();
  const maxCount = await storedLimit(db, "rulesPerTenant", tenantId);
  if ((used?.n ?? 0) >= maxCount)
    return new StoredLimitExceeded(
      "rulesPerTenant",
      maxCount,
      `This tenant has ${used?.n ?? 0} rules, its limit (limits.rulesPerTenant ${maxCount}): revoke rules it no longer needs (DELETE /v1/rules/{id}), or ask the operator to raise the limit.`,
      409,
    );
  const maxBytes = await storedLimit(db, "ruleBytesPerTenant", tenantId);
  return new StoredLimitExceeded(
    "ruleBytesPerTenant",
    maxBytes,
    `This tenant's rules use ${used?.b ?? 0} of ${maxBytes} bytes (limits.ruleBytesPerTenant), and this rule needs ${bytes} more: revoke rules it no longer needs, or ask the operator to raise the limit.`,
    413,
  );
}

export async function ruleById(db: D1Database, tenantId: string, id: string): Promise<DecisionRuleRow | undefined> {
  const [row] = await rulesDb(db)
    .select()
    .from(decisionRules)
    .where(and(eq(decisionRules.tenantId, tenantId), eq(decisionRules.id, id)));
  return row;
}

export async function updateRule(
  db: D1Database,
  tenantId: string,
  id: string,
  patch: Partial<Pick<DecisionRuleRow, "expiresAt" | "revokedAt">>,
): Promise<DecisionRuleRow | undefined> {
  const [row] = await rulesDb(db)
    .update(decisionRules)
    .set(patch)
    .where(and(eq(decisionRules.tenantId, tenantId), eq(decisionRules.id, id)))
    .returning();
  return row;
}

export interface RuleFilter {
  decision?: "allow" | "reject";
  agent?: string;
  project?: string;
  q?: string;
  cursor?: string | null;
  limit: number;
}

/** Newest first; the cursor is the last id of the previous page (ids sort by creation). */
export async function listRules(db: D1Database, tenantId: string, f: RuleFilter): Promise<DecisionRuleRow[]> {
  const conditions = [eq(decisionRules.tenantId, tenantId)];
  if (f.decision) conditions.push(eq(decisionRules.decision, f.decision));
  if (f.agent) conditions.push(eq(decisionRules.scopeAgent, f.agent));
  if (f.project) conditions.push(eq(decisionRules.scopeProject, f.project));
  if (f.q) {
    const pattern = `%${f.q.replace(/[%_\\]/g, (c) => `\\${c}`)}%`;
    const text = or(like(decisionRules.matcherText, pattern), like(decisionRules.description, pattern));
    if (text) conditions.push(text);
  }
  if (f.cursor) conditions.push(lt(decisionRules.id, f.cursor));
  return rulesDb(db)
    .select()
    .from(decisionRules)
    .where(and(...conditions))
    .orderBy(desc(decisionRules.id))
    .limit(f.limit + 1);
}

/** Hit counters are written off the hot path, in one statement per flush. */
export async function recordHits(db: D1Database, tenantId: string, hits: Map<string, { count: number; at: number }>): Promise<void> {
  const [first, ...rest] = [...hits].map(([id, h]) =>
    rulesDb(db)
      .update(decisionRules)
      .set({
        hits: sql`${decisionRules.hits} + ${h.count}`,
        lastHitAt: sql`max(coalesce(${decisionRules.lastHitAt}, 0), ${h.at})`,
      })
      .where(and(eq(decisionRules.tenantId, tenantId), eq(decisionRules.id, id))),
  );
  if (first) await rulesDb(db).batch([first, ...rest]);
}
