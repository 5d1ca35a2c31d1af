// One tenant cannot fill everyone's D1 with audit rows (decision 0022): each row's agent text is
// bounded (the operation cut past 4 KiB, with its length and SHA-256), and out-of-turn permission
// requests past the tenant's rate are still answered cancelled but counted in one summarising row.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_AUDIT_OPERATION_BYTES } from "../../durable-objects/session/permission-audit";
import { sha256HexSync } from "../../protocol/sha256";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";

const run = (id: string, command: string) => ({ toolCallId: id, title: "Run", kind: "execute", rawInput: { command } });

interface AuditRowOut {
  id: string;
  tool_call_id: string | null;
  operation: string | null;
  bytes: number;
}

async function auditRows(tenantId: string, sessionId: string): Promise<AuditRowOut[]> {
  const { results } = await env.DB.prepare(
    "SELECT id, tool_call_id, operation, length(CAST(operation AS BLOB)) AS bytes FROM decision_audit WHERE tenant_id = ? AND session_id = ? ORDER BY at, id",
  )
    .bind(tenantId, sessionId)
    .all<AuditRowOut>();
  return results;
}

/** Waits until the session's audit rows in D1 satisfy `done` (the outbox writes in the background). */
async function auditUntil(tenantId: string, sessionId: string, done: (rows: AuditRowOut[]) => boolean): Promise<AuditRowOut[]> {
  let rows: AuditRowOut[] = [];
  for (let i = 0; i < 200; i++) {
    rows = await auditRows(tenantId, sessionId);
    if (done(rows)) return rows;
    await scheduler.wait(25);
  }
  return rows;
}

describe("audit bounds", () => {
  it("an out-of-turn request with a 900 KB command is answered cancelled and audited within 4 KiB, with its length and SHA-256", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await clientWithSession(t, agent);
    const command = `echo ${"A".repeat(900 * 1024)}`;
    const id = agent.askPermission(sessionId, run("huge", command));
    expect((await agent.peer.next(isResponseTo(id), 15_000)).result).toEqual({ outcome: { outcome: "cancelled" } });
    const [row] = await auditUntil(t.tenantId, sessionId, (rows) => rows.length === 1);
    expect(row?.bytes).toBeLessThanOrEqual(MAX_AUDIT_OPERATION_BYTES);
    expect(row?.operation?.startsWith("echo AAAA")).toBe(true);
    expect(row?.operation).toContain(`cut: ${new TextEncoder().encode(command).length} bytes in full, sha256 ${sha256HexSync(command)}]`);
  });

  it("past 10 out-of-turn requests a minute, each is still answered cancelled; D1 gets 10 rows and one summary counting the rest; clients are told once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const ids = Array.from({ length: 40 }, (_, i) =>
      agent.askPermission(sessionId, run(`flood-${i}`, `rm -rf /tmp/${i} ${"x".repeat(50_000)}`)),
    );
    for (const id of ids) expect((await agent.peer.next(isResponseTo(id), 15_000)).result).toEqual({ outcome: { outcome: "cancelled" } });
    const notice = await client.next(isMethod("_acp_gateway/limit_reached"));
    expect(notice.params.data).toEqual({ reason: "outside_turn_audit_summarised", limit: "outsideTurnAuditsPerMinute", value: 10 });
    const rows = await auditUntil(t.tenantId, sessionId, (r) => r.length === 11 && r.some((x) => x.operation?.startsWith("30 more")));
    expect(rows.filter((r) => r.tool_call_id !== null).map((r) => r.tool_call_id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `flood-${i}`),
    );
    const summary = rows.find((r) => r.tool_call_id === null);
    expect(summary?.operation).toMatch(
      /^30 more permission requests outside a turn in the minute from .* were answered cancelled and counted here/,
    );
    for (const r of rows) expect(r.bytes).toBeLessThanOrEqual(MAX_AUDIT_OPERATION_BYTES);
    // One notice for the window, not one per request.
    expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/limit_reached")).toEqual([]);
  }, 30_000);
});
