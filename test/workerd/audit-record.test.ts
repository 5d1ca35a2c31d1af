// A session's audit batch in D1's queue (issue 40, decision 0065): the rows, the staging of their
// links and the first read of the chain's queue go in one D1 call, so a tenant's burst of decisions
// puts one call per session in front of whatever else the tenant writes (a new rule, a key's use),
// and the chain still verifies, with nothing twice after a retry.

import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AuditEntry } from "../../db/queries/audit";
import { drainChain, recordAudit } from "../../db/queries/audit-chain";
import { HEAD } from "../../protocol/audit-chain-append";
import { START, canonicalJson, parsePoint, verifyChain } from "../../protocol/audit-chain";
import { sha256HexSync } from "../../protocol/sha256";
import { seedTenant } from "./helpers";

/** D1 as the session's outbox sees it, counting the calls it makes (each one waits its turn in D1's queue). */
function counted(db: D1Database): { db: D1Database; calls: () => number } {
  let calls = 0;
  const statement = (s: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(s, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => statement(target.bind(...values));
        if (prop === "run" || prop === "all" || prop === "first" || prop === "raw") calls++;
        return Reflect.get(target, prop, target) as unknown;
      },
    });
  const wrapped = new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (query: string) => statement(target.prepare(query));
      if (prop === "batch")
        return (statements: D1PreparedStatement[]) => {
          calls++;
          return target.batch(statements);
        };
      return Reflect.get(target, prop, target) as unknown;
    },
  });
  return { db: wrapped, calls: () => calls };
}

const entryOf = (tenantId: string, i: number): AuditEntry => ({
  id: `aud_${tenantId}_${i}`,
  tenantId,
  sessionId: "s1",
  agent: "a",
  toolCallId: `tc${i}`,
  kind: "execute",
  name: "Run",
  operation: `echo ${i}`,
  outcome: "selected",
  optionId: "allow",
  optionKind: "allow_once",
  decidedBy: "rule",
  ruleId: "rule_1",
  at: 1_764_806_400_000 + i,
});

async function count(sql: string, tenantId: string): Promise<number> {
  return (await env.DB.prepare(sql).bind(tenantId).first<{ n: number }>())?.n ?? 0;
}

/** The tenant's chain as the export gives it (`acp-gateway audit verify` reads the same), verified from its start. */
async function verified(key: string) {
  const res = await SELF.fetch("http://gateway.test/v1/audit/export", { headers: { Authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  const end = parsePoint(res.headers.get("Acp-Audit-Chain-End") ?? "");
  if (!end?.hash) throw new Error("the export named no end");
  const lines = new TextDecoder()
    .decode(await res.arrayBuffer())
    .split("\n")
    .filter((l) => l !== "");
  return verifyChain(lines, START, { seq: end.seq, hash: end.hash });
}

describe("a session's audit batch in D1", () => {
  it("behind other sessions' staged rows, its rows and links cost one D1 call, and the next drain chains them verifiably", async () => {
    const t = await seedTenant();
    // Other sessions' entries staged ahead of it (as STAGE writes them), more than the head a writer chains from.
    for (let i = 0; i < HEAD + 2; i++) {
      const text = canonicalJson({ id: `aud_other${i}`, sessionId: "s2", agent: "a", outcome: "selected", at: i });
      await env.DB.prepare("INSERT INTO audit_chain_pending (tenant_id, entry, entry_digest, audit_id) VALUES (?, ?, ?, ?)")
        .bind(t.tenantId, text, sha256HexSync(text), `aud_other${i}`)
        .run();
    }
    const d1 = counted(env.DB);
    const batch = [1, 2, 3].map((i) => entryOf(t.tenantId, i));
    const stats = await recordAudit(d1.db, t.tenantId, batch);
    // Written for good (rows and staged links) in one call: the writers ahead chain them.
    expect(d1.calls()).toBe(1);
    expect(stats).toEqual({ reads: 1, commits: 0, lost: 0 });
    expect(await count("SELECT COUNT(*) AS n FROM decision_audit WHERE tenant_id = ?", t.tenantId)).toBe(3);
    expect(await count("SELECT COUNT(*) AS n FROM audit_chain_pending WHERE tenant_id = ?", t.tenantId)).toBe(HEAD + 5);
    await drainChain(env.DB, t.tenantId);
    expect(await verified(t.clientKey)).toMatchObject({ ok: true, links: HEAD + 5 });
  });

  it("alone, it writes, stages and reads in one call, commits in a second, finds nothing left in a third; a retry adds nothing", async () => {
    const t = await seedTenant();
    const d1 = counted(env.DB);
    const batch = [1, 2].map((i) => entryOf(t.tenantId, i));
    expect(await recordAudit(d1.db, t.tenantId, batch)).toEqual({ reads: 2, commits: 1, lost: 0 });
    expect(d1.calls()).toBe(3);
    // The outbox retrying a batch whose answer it lost: the rows are kept, no link is added.
    await recordAudit(env.DB, t.tenantId, batch);
    expect(await count("SELECT COUNT(*) AS n FROM decision_audit WHERE tenant_id = ?", t.tenantId)).toBe(2);
    expect(await count("SELECT COUNT(*) AS n FROM audit_chain_pending WHERE tenant_id = ?", t.tenantId)).toBe(0);
    expect(await verified(t.clientKey)).toMatchObject({ ok: true, links: 2 });
  });
});
