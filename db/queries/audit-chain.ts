// The tenant's audit hash chain in D1 (decisions 0024, 0035): appended by every session object of
// the tenant at once, read by the export.
//
// D1 cannot hash, so a writer computes links from the tip it read, and they are inserted only if the
// tip is still that one. Writers do not race each other for it one entry at a time: each stages its
// entries (`audit_chain_pending`), and whoever chains, chains everyone's staged rows in one commit
// (protocol/audit-chain-append.ts says who, and why nothing is left behind). An entry is staged and
// chained once, by its digest: a batch retried after an answer that was lost adds nothing twice.

import { and, asc, desc, eq, gt, lte } from "drizzle-orm";
import { type ChainEntry, type ChainPoint, START, canonicalJson } from "../../protocol/audit-chain";
import { ChainDrainer, DRAIN_ROUNDS, HEAD, type StagedRow, WINDOW } from "../../protocol/audit-chain-append";
import { sha256HexSync } from "../../protocol/sha256";
import { dbOf } from "../client";
import { auditChain } from "../schema";
import { type AuditEntry, auditRowStatements } from "./audit";

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

/** Stages the entries not chained yet, in order; an entry staged already stays where it was. */
const STAGE = `INSERT INTO audit_chain_pending (tenant_id, entry, entry_digest, audit_id)
SELECT ?1, json_extract(e.value, '$.text'), json_extract(e.value, '$.digest'), json_extract(e.value, '$.auditId')
FROM json_each(?2) AS e
WHERE NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.tenant_id = ?1 AND c.entry_digest = json_extract(e.value, '$.digest'))
ORDER BY e.key
ON CONFLICT DO NOTHING`;

/**
 * The oldest staged rows not chained, up to ?5: for the drainer (?3 = 1), or for a writer one of
 * whose digests (?2) is among the ?4 oldest staged; nothing for anyone else.
 */
const WINDOW_READ = `SELECT p.id, p.entry FROM audit_chain_pending p
WHERE p.tenant_id = ?1
  AND NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.tenant_id = ?1 AND c.entry_digest = p.entry_digest)
  AND (?3 = 1 OR EXISTS (
    SELECT 1 FROM (SELECT entry_digest FROM audit_chain_pending WHERE tenant_id = ?1 ORDER BY id LIMIT ?4) AS h
    WHERE h.entry_digest IN (SELECT value FROM json_each(?2))))
ORDER BY p.id LIMIT ?5`;

const TIP_READ = "SELECT seq, hash FROM audit_chain WHERE tenant_id = ?1 ORDER BY seq DESC LIMIT 1";

/**
 * One commit: the planned links (?2) of staged rows, inserted only if the tenant's tip is still seq
 * ?3 and every row planned is still staged. The chain only grows, by appends like this one or the
 * conditional inserts of decision 0024, so a tip seq unchanged is a chain unchanged.
 */
const COMMIT = `INSERT INTO audit_chain (tenant_id, seq, prev_hash, hash, entry, entry_digest, audit_id)
SELECT ?1, json_extract(l.value, '$.seq'), json_extract(l.value, '$.prev'), json_extract(l.value, '$.hash'), p.entry, p.entry_digest, p.audit_id
FROM json_each(?2) AS l JOIN audit_chain_pending AS p ON p.tenant_id = ?1 AND p.id = json_extract(l.value, '$.id')
WHERE (SELECT coalesce(max(seq), 0) FROM audit_chain WHERE tenant_id = ?1) = ?3
  AND (SELECT count(*) FROM audit_chain_pending WHERE tenant_id = ?1 AND id IN (SELECT json_extract(value, '$.id') FROM json_each(?2))) = json_array_length(?2)
ORDER BY l.key`;

/** Unstages what is chained (in the commit's transaction: nothing if the commit inserted nothing). */
const UNSTAGE = `DELETE FROM audit_chain_pending
WHERE tenant_id = ?1 AND id IN (SELECT json_extract(value, '$.id') FROM json_each(?2))
  AND EXISTS (SELECT 1 FROM audit_chain c WHERE c.tenant_id = ?1 AND c.entry_digest = audit_chain_pending.entry_digest)`;

/** What an append did, for the bench and the tests: reads of the window, commits made, commits lost. */
export interface AppendStats {
  reads: number;
  commits: number;
  lost: number;
}

/**
 * Drains the tenant's staged rows into the chain (decision 0035): commits while it is the drainer,
 * or while one of `mine` (digests) is near the head of the queue.
 */
async function drain(
  d1: D1Database,
  tenantId: string,
  mine: readonly string[],
  stats: AppendStats,
  drainer = false,
  lead: readonly D1PreparedStatement[] = [],
): Promise<void> {
  const turn = new ChainDrainer(tenantId, drainer);
  const mineJson = JSON.stringify(mine);
  // The writes that come first (the rows, their staging) go in the first read's batch: one D1 call, one transaction.
  let first = lead;
  for (;;) {
    const ask = turn.ask();
    const results = await d1.batch<unknown>([
      ...first,
      d1.prepare(TIP_READ).bind(tenantId),
      d1.prepare(WINDOW_READ).bind(tenantId, mineJson, ask.drainer ? 1 : 0, HEAD, WINDOW),
    ]);
    first = [];
    const [tipRows, windowRows] = results.slice(-2);
    stats.reads++;
    const tip = (tipRows?.results[0] as ChainPoint | undefined) ?? START;
    const step = turn.read(tip, (windowRows?.results ?? []) as StagedRow[]);
    if (step.kind === "done") return;
    const links = JSON.stringify(step.links);
    const [inserted] = await d1.batch([d1.prepare(COMMIT).bind(tenantId, links, step.tip.seq), d1.prepare(UNSTAGE).bind(tenantId, links)]);
    const won = inserted?.meta.changes === step.links.length;
    if (won) stats.commits++;
    else stats.lost++;
    if (!turn.committed(won)) return;
  }
}

/**
 * Appends one link per entry (all of one tenant), in order, unless the chain has it already: stages
 * them, then chains the tenant's staged rows with whoever else is writing (decision 0035). When it
 * returns, the entries are in D1 for good: chained, or staged for the writer draining the queue
 * (the next append, or the export, drains whatever a crash left).
 */
export async function appendToChain(d1: D1Database, tenantId: string, entries: readonly AuditEntry[]): Promise<AppendStats> {
  const staged = stagedOf(entries);
  const stats: AppendStats = { reads: 0, commits: 0, lost: 0 };
  if (staged.length === 0) return stats;
  await d1.prepare(STAGE).bind(tenantId, JSON.stringify(staged)).run();
  await drain(
    d1,
    tenantId,
    staged.map((s) => s.digest),
    stats,
  );
  return stats;
}

/**
 * The audit rows and their links, as `insertAuditRows` then `appendToChain` write them, but the rows,
 * their staging and the first read of the queue in one D1 call (one transaction): a tenant's burst of
 * decisions puts one call per session in D1's queue where it put three, and what else the tenant
 * writes (a rule, a key's use) waits behind a third of it (issue 40, decision 0065).
 */
export async function recordAudit(d1: D1Database, tenantId: string, entries: readonly AuditEntry[]): Promise<AppendStats> {
  const staged = stagedOf(entries);
  const stats: AppendStats = { reads: 0, commits: 0, lost: 0 };
  if (staged.length === 0) return stats;
  await drain(
    d1,
    tenantId,
    staged.map((s) => s.digest),
    stats,
    false,
    [...auditRowStatements(d1, entries), d1.prepare(STAGE).bind(tenantId, JSON.stringify(staged))],
  );
  return stats;
}

function stagedOf(entries: readonly AuditEntry[]): { text: string; digest: string; auditId: string }[] {
  return entries.map((e) => {
    const entry = chainEntryOf(e);
    const text = canonicalJson(entry);
    return { text, digest: sha256HexSync(text), auditId: entry.id };
  });
}

/** Chains everything the tenant has staged (the export's first step: it shows every row written). */
export async function drainChain(d1: D1Database, tenantId: string): Promise<AppendStats> {
  const stats: AppendStats = { reads: 0, commits: 0, lost: 0 };
  for (let i = 0; i < DRAIN_ROUNDS; i++) {
    await drain(d1, tenantId, [], stats, true);
    // A lost commit hands the drain to another writer; the export waits for the queue to be empty.
    const [row] = (await d1.prepare("SELECT 1 AS staged FROM audit_chain_pending WHERE tenant_id = ?1 LIMIT 1").bind(tenantId).all())
      .results;
    if (!row) return stats;
  }
  return stats;
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
