// D1 access to remembered decisions. Every statement is scoped by tenant id.

import { and, desc, eq, isNull, like, lt, or, sql } from "drizzle-orm";
import { dbOf } from "../client";
import { decisionRules, type DecisionRuleRow } from "../schema";

export type NewDecisionRule = typeof decisionRules.$inferInsert;

const rulesDb = dbOf;

/** The rules that can still match: not revoked (expired ones are filtered at decision time). */
export async function activeRules(db: D1Database, tenantId: string): Promise<DecisionRuleRow[]> {
  return rulesDb(db)
    .select()
    .from(decisionRules)
    .where(and(eq(decisionRules.tenantId, tenantId), isNull(decisionRules.revokedAt)));
}

export async function insertRule(db: D1Database, rule: NewDecisionRule): Promise<DecisionRuleRow> {
  const [row] = await rulesDb(db).insert(decisionRules).values(rule).returning();
  if (!row) throw new Error("inserting the rule returned nothing");
  return row;
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
