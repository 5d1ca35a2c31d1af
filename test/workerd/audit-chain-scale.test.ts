// Many sessions appending to one tenant's audit chain at once (decision 0035): every entry is
// chained once, the chain verifies, nothing is left staged, and the writers need few round trips.
// 200 writers here; `npm run test:slow` (BURST_UPDATES set) runs 100 and 1,000 and logs the figures
// BENCHMARKS.md quotes ("audit append").

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AuditEntry } from "../../db/queries/audit";
import { insertAuditRows } from "../../db/queries/audit";
import { type AppendStats, appendToChain } from "../../db/queries/audit-chain";
import { START, verifyChain } from "../../protocol/audit-chain";
import { seedTenant } from "./helpers";

/** The slow run's flag (as agent-bursts.test.ts reads it). */
const SLOW = Number(env.BURST_UPDATES) > 0;

const entryOf = (tenantId: string, w: number, k: number): AuditEntry => ({
  id: `aud_w${w}_${k}`,
  tenantId,
  sessionId: `s${w}`,
  agent: "a",
  toolCallId: `tc${w}_${k}`,
  kind: "execute",
  name: "Run",
  operation: `npm test ${w}`,
  outcome: "selected",
  optionId: "allow",
  optionKind: "allow_once",
  decidedBy: "rule",
  ruleId: "rule_1",
  at: 1_764_806_400_000 + w,
});

describe("the audit chain with many writers at once", () => {
  for (const writers of SLOW ? [100, 1000] : [200]) {
    it(`${writers} sessions' batches at once: every entry chained once, in one chain that verifies, nothing left staged`, async () => {
      const t = await seedTenant();
      // Batches of 1–3 entries; every tenth writer retries its batch as the outbox does after a lost answer.
      const batches = Array.from({ length: writers }, (_, w) => Array.from({ length: 1 + (w % 3) }, (_, k) => entryOf(t.tenantId, w, k)));
      const stats: AppendStats[] = [];
      const started = Date.now();
      await Promise.all(
        batches.map(async (batch, w) => {
          await insertAuditRows(env.DB, batch);
          stats.push(await appendToChain(env.DB, t.tenantId, batch));
          if (w % 10 === 0) stats.push(await appendToChain(env.DB, t.tenantId, batch));
        }),
      );
      const ms = Date.now() - started;

      const { results: rows } = await env.DB.prepare(
        "SELECT seq, prev_hash, hash, tenant_id, entry, audit_id FROM audit_chain WHERE tenant_id = ? ORDER BY seq",
      )
        .bind(t.tenantId)
        .all<{ seq: number; prev_hash: string; hash: string; tenant_id: string; entry: string; audit_id: string }>();
      const total = batches.flat().length;
      expect(rows).toHaveLength(total);
      expect(new Set(rows.map((r) => r.audit_id))).toEqual(new Set(batches.flat().map((e) => e.id)));
      const lines = rows.map(
        (r) => `{"seq":${r.seq},"prev":"${r.prev_hash}","hash":"${r.hash}","tenantId":"${r.tenant_id}","entry":${r.entry}}`,
      );
      expect(verifyChain(lines, START)).toMatchObject({ ok: true, links: total });
      const staged = await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_chain_pending WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first<{ n: number }>();
      expect(staged?.n).toBe(0);

      const sum = (k: keyof AppendStats) => stats.reduce((n, s) => n + s[k], 0);
      const maxReads = Math.max(...stats.map((s) => s.reads));
      // Group commit: far fewer commits than writers (each takes up to WINDOW links), few reads each.
      expect(sum("commits")).toBeLessThan(writers / 4);
      console.log(
        `audit append: ${writers} writers, ${total} entries, ${ms} ms; commits ${sum("commits")}, lost ${sum("lost")}, reads ${sum("reads")} (at most ${maxReads} by one writer)`,
      );
    }, 600_000);
  }
});
