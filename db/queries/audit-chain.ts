// The tenant's audit hash chain in D1 (decision 0024): appended by every session object of the
// tenant at once, read by the export.
//
// D1 cannot hash, so a writer computes its links from the tip it read, and each insert holds only
// if the link before it is still the one it was computed from: `seq` is unique per tenant, and a
// link is inserted only where the tenant's link seq − 1 has the hash it names as prev (the first,
// only after GENESIS). A writer that lost the race to another inserts nothing of the rest of its
// batch (each link names the one before it), reads the new tip and tries again. A batch retried
// after an answer that was lost finds its entries by digest and appends only what is missing.

import { and, asc, desc, eq, gt, lte, sql } from "drizzle-orm";
import { type ChainEntry, type ChainPoint, GENESIS, START, canonicalJson, chainLinks } from "../../protocol/audit-chain";
import { sha256HexSync } from "../../protocol/sha256";
import { dbOf } from "../client";
import { auditChain } from "../schema";
import type { AuditEntry } from "./audit";

/** Rounds of read-the-tip-and-append before the caller is told to try later (the session's outbox retries). */
const APPEND_ROUNDS = 32;

/** The row as the chain and `GET /v1/audit` show it. */
function chainEntryOf(e: AuditEntry): ChainEntry {
  return {
    id: e.id,
    sessionId: e.sessionId,
    agent: e.agent,
    toolCallId: e.toolCallId ?? null,
    kind: e.kind ?? null,
    name: e.name ?? null,
    operation: e.operation ?? null,
    outcome: e.outcome,
    optionId: e.optionId ?? null,
    optionKind: e.optionKind ?? null,
    decidedBy: {
      type: e.decidedBy,
      key: e.decidedByKey ?? null,
      user: e.decidedByUser ?? null,
      ruleId: e.ruleId ?? null,
      ...(e.decidedByIssuer && e.decidedBySubject ? { person: { issuer: e.decidedByIssuer, subject: e.decidedBySubject } } : {}),
      ...(e.decidedByRole ? { role: e.decidedByRole } : {}),
      ...(e.decidedByConnection ? { connectionId: e.decidedByConnection } : {}),
    },
    ...(e.policy ? { policy: e.policy } : {}),
    ...(e.reason ? { reason: e.reason } : {}),
    ...(e.approvedBy ? { approvedBy: JSON.parse(e.approvedBy) as unknown } : {}),
    at: e.at ?? Date.now(),
  };
}

/** The tenant's last link, or START. */
export async function chainTip(d1: D1Database, tenantId: string): Promise<ChainPoint> {
  const [row] = await dbOf(d1)
    .select({ seq: auditChain.seq, hash: auditChain.hash })
    .from(auditChain)
    .where(eq(auditChain.tenantId, tenantId))
    .orderBy(desc(auditChain.seq))
    .limit(1);
  return row ?? START;
}

/** The link at `seq` (START at 0), if the tenant has it. */
export async function chainPoint(d1: D1Database, tenantId: string, seq: number): Promise<ChainPoint | undefined> {
  if (seq === 0) return START;
  const [row] = await dbOf(d1)
    .select({ seq: auditChain.seq, hash: auditChain.hash })
    .from(auditChain)
    .where(and(eq(auditChain.tenantId, tenantId), eq(auditChain.seq, seq)))
    .limit(1);
  return row;
}

const INSERT_LINK = `INSERT INTO audit_chain (tenant_id, seq, prev_hash, hash, entry, entry_digest, audit_id)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
WHERE (?2 = 1 AND ?3 = '${GENESIS}')
   OR EXISTS (SELECT 1 FROM audit_chain WHERE tenant_id = ?1 AND seq = ?2 - 1 AND hash = ?3)
ON CONFLICT DO NOTHING`;

/** Appends one link per entry (all of one tenant), in order, unless the chain has it already. */
export async function appendToChain(d1: D1Database, tenantId: string, entries: readonly AuditEntry[]): Promise<void> {
  const wanted = entries.map((e) => {
    const entry = chainEntryOf(e);
    const text = canonicalJson(entry);
    return { entry, text, digest: sha256HexSync(text) };
  });
  const db = dbOf(d1);
  for (let round = 0; round < APPEND_ROUNDS; round++) {
    const [tip, have] = await db.batch([
      db
        .select({ seq: auditChain.seq, hash: auditChain.hash })
        .from(auditChain)
        .where(eq(auditChain.tenantId, tenantId))
        .orderBy(desc(auditChain.seq))
        .limit(1),
      db
        .select({ digest: auditChain.entryDigest })
        .from(auditChain)
        .where(
          and(
            eq(auditChain.tenantId, tenantId),
            // One parameter for them all: D1 binds at most 100 per statement.
            sql`${auditChain.entryDigest} IN (SELECT value FROM json_each(${JSON.stringify(wanted.map((w) => w.digest))}))`,
          ),
        ),
    ]);
    const present = new Set(have.map((h) => h.digest));
    const missing = wanted.filter((w) => !present.has(w.digest));
    if (missing.length === 0) return;
    const links = chainLinks(
      tip[0] ?? START,
      tenantId,
      missing.map((m) => m.entry),
    );
    const results = await d1.batch(
      links.map((l, i) => {
        const m = missing[i] as (typeof missing)[number];
        return d1.prepare(INSERT_LINK).bind(tenantId, l.seq, l.prev, l.hash, m.text, m.digest, m.entry.id);
      }),
    );
    if (results.every((r) => r.meta.changes === 1)) return;
  }
  throw new Error(`the audit chain of tenant ${tenantId}: ${APPEND_ROUNDS} appends in a row met another session's; written later`);
}

export interface ChainRow {
  seq: number;
  prevHash: string;
  hash: string;
  entry: string;
}

/** Links after `after` up to `through`, in order, at most `limit`. */
export async function chainRange(d1: D1Database, tenantId: string, after: number, through: number, limit: number): Promise<ChainRow[]> {
  return dbOf(d1)
    .select({ seq: auditChain.seq, prevHash: auditChain.prevHash, hash: auditChain.hash, entry: auditChain.entry })
    .from(auditChain)
    .where(and(eq(auditChain.tenantId, tenantId), gt(auditChain.seq, after), lte(auditChain.seq, through)))
    .orderBy(asc(auditChain.seq))
    .limit(limit);
}
