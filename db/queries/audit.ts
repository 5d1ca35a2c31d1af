// The decision audit: how every permission request of a tenant was resolved.

import { and, desc, eq, lt, or, sql } from "drizzle-orm";
import { dbOf } from "../client";
import { type DecisionAuditRow, decisionAudit } from "../schema";

export type AuditEntry = typeof decisionAudit.$inferInsert;

/**
 * One statement per row in one batch (D1 binds at most 100 parameters per statement). Rows carry
 * their own id: one D1 already has (a retry after a lost answer) is not written twice; a row written
 * again under its id (a window's summarising row, its count risen) takes the new operation and time.
 */
export async function insertAuditRows(d1: D1Database, entries: AuditEntry[]): Promise<void> {
  const db = dbOf(d1);
  const [first, ...rest] = entries.map((e) => upsertRow(db, e));
  if (first) await db.batch([first, ...rest]);
}

function upsertRow(db: ReturnType<typeof dbOf>, e: AuditEntry) {
  return db
    .insert(decisionAudit)
    .values(e)
    .onConflictDoUpdate({
      target: decisionAudit.id,
      set: { operation: sql`excluded.operation`, at: sql`excluded.at` },
    });
}

/** The same writes as `insertAuditRows`, as statements for a caller's own batch (one D1 call for rows and links). */
export function auditRowStatements(d1: D1Database, entries: readonly AuditEntry[]): D1PreparedStatement[] {
  const db = dbOf(d1);
  return entries.map((e) => {
    const { sql: text, params } = upsertRow(db, e).toSQL();
    return d1.prepare(text).bind(...params);
  });
}

export interface AuditFilter {
  sessionId?: string;
  agent?: string;
  decidedBy?: DecisionAuditRow["decidedBy"];
  ruleId?: string;
  user?: string;
  /** One person's decisions (decision 0028): their issuer and subject. */
  person?: { issuer: string; subject: string };
  /** The last entry of the previous page: newest first, by (at, id). */
  before?: { at: number; id: string };
  limit: number;
}

export async function auditPage(d1: D1Database, tenantId: string, f: AuditFilter): Promise<DecisionAuditRow[]> {
  const a = decisionAudit;
  return dbOf(d1)
    .select()
    .from(a)
    .where(
      and(
        eq(a.tenantId, tenantId),
        f.sessionId !== undefined ? eq(a.sessionId, f.sessionId) : undefined,
        f.agent !== undefined ? eq(a.agent, f.agent) : undefined,
        f.decidedBy !== undefined ? eq(a.decidedBy, f.decidedBy) : undefined,
        f.ruleId !== undefined ? eq(a.ruleId, f.ruleId) : undefined,
        f.user !== undefined ? eq(a.decidedByUser, f.user) : undefined,
        f.person !== undefined ? and(eq(a.decidedByIssuer, f.person.issuer), eq(a.decidedBySubject, f.person.subject)) : undefined,
        f.before ? or(lt(a.at, f.before.at), and(eq(a.at, f.before.at), lt(a.id, f.before.id))) : undefined,
      ),
    )
    .orderBy(desc(a.at), desc(a.id))
    .limit(f.limit + 1);
}
