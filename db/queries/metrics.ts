// The tenant's summary for GET /v1/metrics, from what D1 holds authoritatively (the per-second
// counters are in Analytics Engine: docs/OPERATIONS.md).

import { and, count, eq, gt } from "drizzle-orm";
import { dbOf } from "../client";
import { type DecisionAuditRow, decisionAudit } from "../schema";

/** How many of the tenant's permission requests were resolved since `since`, by who decided. */
export async function decisionsSince(
  d1: D1Database,
  tenantId: string,
  since: number,
): Promise<Partial<Record<DecisionAuditRow["decidedBy"], number>>> {
  const a = decisionAudit;
  const rows = await dbOf(d1)
    .select({ decidedBy: a.decidedBy, n: count() })
    .from(a)
    .where(and(eq(a.tenantId, tenantId), gt(a.at, since)))
    .groupBy(a.decidedBy);
  return Object.fromEntries(rows.map((r) => [r.decidedBy, r.n]));
}
