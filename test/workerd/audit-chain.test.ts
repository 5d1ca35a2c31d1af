// The tenant's audit hash chain (decision 0024): every session object of a tenant appends to one
// chain at once, without a gap, a fork or a link twice; the export streams it as NDJSON that the
// verifier accepts, and an edit or a deletion in D1 shows at its line.

import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AuditEntry } from "../../db/queries/audit";
import { insertAuditRows } from "../../db/queries/audit";
import { appendToChain } from "../../db/queries/audit-chain";
import { type ChainLink, GENESIS, START, canonicalJson, parsePoint, verifyChain } from "../../protocol/audit-chain";
import { sha256HexSync } from "../../protocol/sha256";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

/** The body as UTF-8 text (workerd warns on .text() of a type it does not know as text). */
const textOf = async (res: Response) => new TextDecoder().decode(await res.arrayBuffer());

const exportOf = (key: string, query = "") =>
  SELF.fetch(`http://gateway.test/v1/audit/export${query}`, { headers: { Authorization: `Bearer ${key}` } });

/** The export's lines and the end its header names. */
async function exported(key: string, query = "") {
  const res = await exportOf(key, query);
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/x-ndjson/);
  const point = parsePoint(res.headers.get("Acp-Audit-Chain-End") ?? "");
  if (!point?.hash) throw new Error(`no end header: ${res.headers.get("Acp-Audit-Chain-End")}`);
  const lines = (await textOf(res)).split("\n");
  expect(lines.at(-1)).toBe("");
  lines.pop();
  return { lines, end: { seq: point.seq, hash: point.hash } };
}

async function chainRows(tenantId: string) {
  const { results } = await env.DB.prepare("SELECT seq, prev_hash, hash, audit_id FROM audit_chain WHERE tenant_id = ? ORDER BY seq")
    .bind(tenantId)
    .all<{ seq: number; prev_hash: string; hash: string; audit_id: string }>();
  return results;
}

/** Waits until the tenant's chain has `n` links (the outboxes write in the background). */
async function linksUntil(tenantId: string, n: number) {
  for (let i = 0; i < 400; i++) {
    const rows = await chainRows(tenantId);
    if (rows.length >= n) return rows;
    await scheduler.wait(25);
  }
  return chainRows(tenantId);
}

const entryOf = (tenantId: string, i: number, over: Partial<AuditEntry> = {}): AuditEntry => ({
  id: `aud_t${i}`,
  tenantId,
  sessionId: `s${i % 4}`,
  agent: "a",
  toolCallId: `tc${i}`,
  kind: "execute",
  name: "Run",
  operation: `echo ${i}`,
  outcome: "selected",
  optionId: "allow",
  optionKind: "allow_once",
  decidedBy: "person",
  decidedByKey: "key_1",
  decidedByUser: "alice",
  ruleId: null,
  at: 1_764_806_400_000 + i,
  ...over,
});

describe("audit hash chain", () => {
  it("several sessions' answers at once append one chain: seq 1..n without a gap, one link per row, each prev the hash before", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const SESSIONS = 4;
    const PER = 3;
    const sessions = [];
    for (let s = 0; s < SESSIONS; s++) sessions.push(await clientWithSession(t, agent));
    const asked: { client: (typeof sessions)[number]["client"]; agentId: string | number; clientId: unknown }[] = [];
    for (const [s, { client, sessionId }] of sessions.entries()) {
      await startTurn(client, agent, sessionId, `turn-${s}`);
      for (let i = 0; i < PER; i++) {
        const agentId = agent.askPermission(sessionId, {
          toolCallId: `c-${s}-${i}`,
          title: "Run",
          kind: "execute",
          rawInput: { command: `echo ${s} ${i}` },
        });
        const request = await client.next(isMethod("session/request_permission"));
        asked.push({ client, agentId, clientId: request.id });
      }
    }
    // Every answer of every session at once: each session's outbox appends to the tenant's chain while the others do.
    for (const a of asked) a.client.respond(a.clientId, { outcome: { outcome: "selected", optionId: "allow" } });
    for (const a of asked)
      expect((await agent.peer.next(isResponseTo(a.agentId), 10_000)).result).toEqual({
        outcome: { outcome: "selected", optionId: "allow" },
      });

    const rows = await linksUntil(t.tenantId, SESSIONS * PER);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: SESSIONS * PER }, (_, i) => i + 1));
    rows.forEach((r, i) => expect(r.prev_hash).toBe(i === 0 ? GENESIS : rows[i - 1]?.hash));
    const { results: audited } = await env.DB.prepare("SELECT id FROM decision_audit WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ id: string }>();
    expect(audited).toHaveLength(SESSIONS * PER);
    expect(rows.map((r) => r.audit_id).sort()).toEqual(audited.map((a) => a.id).sort());
    // Links of different sessions, in one chain: the export verifies end to end.
    const { lines, end } = await exported(t.adminKey);
    const sessionsInChain = new Set(lines.map((l) => (JSON.parse(l) as { entry: { sessionId: string } }).entry.sessionId));
    expect(sessionsInChain.size).toBe(SESSIONS);
    expect(verifyChain(lines, START, end)).toMatchObject({ ok: true, links: SESSIONS * PER, tenantId: t.tenantId });
  }, 60_000);

  it("writers racing for one tenant's tip, and a batch retried after its answer was lost, still make one chain with every entry once", async () => {
    const t = await seedTenant();
    const WRITERS = 8;
    const BATCHES = 3;
    // Batches of different sizes: a writer that lost seq n+1 to a shorter batch would otherwise
    // find n+2… free and hang links off its own n+1, which is not in the chain.
    const sizeOf = (w: number, b: number) => 1 + ((w + 2 * b) % 5);
    const batches = Array.from({ length: WRITERS }, (_, w) =>
      Array.from({ length: BATCHES }, (_, b) => Array.from({ length: sizeOf(w, b) }, (_, k) => entryOf(t.tenantId, w * 100 + b * 10 + k))),
    );
    // Each writer reads the same tip before any has written: all but one lose each round.
    await Promise.all(
      batches.map(async (mine) => {
        for (const batch of mine) {
          await insertAuditRows(env.DB, batch);
          await appendToChain(env.DB, t.tenantId, batch);
        }
      }),
    );
    // The outbox retrying a batch D1 wrote but whose answer it lost: nothing is added.
    const again = batches[1]?.[1] ?? [];
    expect(again).toHaveLength(4);
    await appendToChain(env.DB, t.tenantId, again);
    // A retry of a batch half of which D1 has: only the rest is appended.
    const half = [...again.slice(0, 2), entryOf(t.tenantId, 999)];
    await appendToChain(env.DB, t.tenantId, half);

    const total = batches.flat(2).length + 1;
    const rows = await chainRows(t.tenantId);
    expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    rows.forEach((r, i) => expect(r.prev_hash).toBe(i === 0 ? GENESIS : rows[i - 1]?.hash));
    expect(new Set(rows.map((r) => r.audit_id)).size).toBe(total);
    expect(rows.at(-1)?.audit_id).toBe("aud_t999");
    const { lines, end } = await exported(t.clientKey);
    expect(verifyChain(lines, START, end)).toMatchObject({ ok: true, links: total });
  }, 60_000);

  it("a summarising row written again with a risen count is a second link; the first still verifies", async () => {
    const t = await seedTenant();
    const first = entryOf(t.tenantId, 1, { id: "aud_ot_window", toolCallId: null, operation: "3 more permission requests outside a turn" });
    const risen = { ...first, operation: "5 more permission requests outside a turn", at: (first.at as number) + 30 };
    for (const e of [first, risen]) {
      await insertAuditRows(env.DB, [e]);
      await appendToChain(env.DB, t.tenantId, [e]);
    }
    const row = await env.DB.prepare("SELECT operation FROM decision_audit WHERE id = ?").bind(first.id).first<{ operation: string }>();
    expect(row?.operation).toBe("5 more permission requests outside a turn");
    const { lines, end } = await exported(t.adminKey);
    expect(lines.map((l) => (JSON.parse(l) as ChainLink & { entry: { operation: string } }).entry.operation)).toEqual([
      "3 more permission requests outside a turn",
      "5 more permission requests outside a turn",
    ]);
    expect(verifyChain(lines, START, end).ok).toBe(true);
  });

  it("rows a writer staged and left (it stopped before chaining them) are chained by the next export, after the links before them", async () => {
    const t = await seedTenant();
    await appendToChain(env.DB, t.tenantId, [entryOf(t.tenantId, 1)]);
    // As STAGE writes them: the entry's canonical JSON and its digest, queued behind nothing.
    const left = [2, 3].map((i) => {
      const text = canonicalJson({ id: `aud_left${i}`, sessionId: "s1", agent: "a", outcome: "selected", at: i });
      return { text, digest: sha256HexSync(text), id: `aud_left${i}` };
    });
    for (const l of left)
      await env.DB.prepare("INSERT INTO audit_chain_pending (tenant_id, entry, entry_digest, audit_id) VALUES (?, ?, ?, ?)")
        .bind(t.tenantId, l.text, l.digest, l.id)
        .run();
    const { lines, end } = await exported(t.clientKey);
    expect(lines.map((l) => (JSON.parse(l) as ChainLink & { entry: { id: string } }).entry.id)).toEqual([
      "aud_t1",
      "aud_left2",
      "aud_left3",
    ]);
    expect(verifyChain(lines, START, end)).toMatchObject({ ok: true, links: 3 });
    const staged = await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_chain_pending WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(staged?.n).toBe(0);
  });

  it("an edit of a chained row in D1 fails the export's verification at its line; a deleted row, as a gap", async () => {
    const t = await seedTenant();
    const entries = Array.from({ length: 5 }, (_, i) => entryOf(t.tenantId, i));
    await appendToChain(env.DB, t.tenantId, entries);
    const before = await exported(t.adminKey);
    expect(verifyChain(before.lines, START, before.end).ok).toBe(true);

    await env.DB.prepare(
      'UPDATE audit_chain SET entry = replace(entry, \'"optionId":"allow"\', \'"optionId":"reject"\') WHERE tenant_id = ? AND seq = 3',
    )
      .bind(t.tenantId)
      .run();
    const edited = await exported(t.adminKey);
    expect(verifyChain(edited.lines, START, before.end)).toMatchObject({ ok: false, fault: { line: 3, kind: "edited" } });

    await env.DB.prepare("DELETE FROM audit_chain WHERE tenant_id = ? AND seq = 2").bind(t.tenantId).run();
    const res = await exportOf(t.adminKey);
    const lines = (await textOf(res)).split("\n").slice(0, -1);
    expect(verifyChain(lines, START, before.end)).toMatchObject({ ok: false, fault: { line: 2, kind: "gap" } });
  });

  it("the export is the caller's tenant's, resumes after a seq, names its end, and refuses bad input with a clear error", async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    await appendToChain(
      env.DB,
      t.tenantId,
      Array.from({ length: 5 }, (_, i) => entryOf(t.tenantId, i)),
    );
    await appendToChain(env.DB, other.tenantId, [entryOf(other.tenantId, 1)]);

    expect((await SELF.fetch("http://gateway.test/v1/audit/export")).status).toBe(401);
    expect((await exportOf(t.agentKey)).status).toBe(403);
    const theirs = await exported(other.adminKey);
    expect(theirs.lines).toHaveLength(1);
    expect((JSON.parse(theirs.lines[0] as string) as ChainLink).tenantId).toBe(other.tenantId);

    const head = await exported(t.adminKey, "?limit=2");
    expect(head.lines).toHaveLength(2);
    expect(head.end.seq).toBe(2);
    expect(verifyChain(head.lines, START, head.end).ok).toBe(true);
    const rest = await exported(t.adminKey, `?after=${head.end.seq}`);
    expect(rest.lines).toHaveLength(3);
    expect(verifyChain(rest.lines, head.end, rest.end)).toMatchObject({ ok: true, links: 3, last: { seq: 5 } });
    // Caught up: nothing more, and the end is where the reader is.
    const none = await exported(t.adminKey, "?after=5");
    expect(none.lines).toEqual([]);
    expect(none.end).toEqual(rest.end);

    const past = await exportOf(t.adminKey, "?after=6");
    expect(past.status).toBe(400);
    expect(((await past.json()) as { error: { message: string } }).error.message).toBe(
      "after=6 is past the tenant's last audit link (seq 5)",
    );
    const bad = await exportOf(t.adminKey, "?limit=0");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/^limit must be a whole number from 1 to/);
  });
});
