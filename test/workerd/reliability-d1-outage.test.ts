// D1 having a bad minute: a security boundary does not trust a key for ever because its database
// cannot answer, and the decision audit keeps its rows until D1 takes them.

import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { objects } from "../../durable-objects/objects";

/** Makes the real D1 fail for one table (renamed away) while `body` runs, and puts it back after. */
async function withTableGone<T>(table: string, body: () => Promise<T>): Promise<T> {
  await env.DB.exec(`ALTER TABLE ${table} RENAME TO ${table}_offline`);
  try {
    return await body();
  } finally {
    await env.DB.exec(`ALTER TABLE ${table}_offline RENAME TO ${table}`);
  }
}

describe("reliability: D1 unavailable", () => {
  it("closes a client connection with 1013 and a reason once its key could not be re-checked for the grace period, not before", async () => {
    const t = await seedTenant();
    const client = await connect("/acp?agent=none", t.clientKey);
    await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const closed = await withTableGone("api_keys", async () => {
      const from = Date.now();
      const close = await client.closed;
      return { ...close, after: Date.now() - from };
    });
    expect(closed.code).toBe(1013);
    expect(closed.reason).toMatch(/could not verify the API key/);
    expect(closed.after).toBeGreaterThanOrEqual(1500); // KEY_UNVERIFIED_GRACE_MS in vitest.config.ts
  });
});

describe("reliability: the decision audit while D1 fails", () => {
  it("keeps the audit row in the session until D1 is back, then the alarm writes it once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const session = objects.session(env, t.tenantId, sessionId);
    await startTurn(client, agent, sessionId);
    const agentReqId = agent.askPermission(sessionId, { toolCallId: "audited", kind: "edit", title: "Edit" });
    const copy = await client.next(isMethod("session/request_permission"));
    await withTableGone("decision_audit", async () => {
      client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
      await agent.peer.next(isResponseTo(agentReqId));
      // The write to D1 has failed once the outbox says when it will try again.
      await until(() => runInDurableObject(session, (instance: SessionObject) => outboxOf(instance).retryAt() !== undefined));
      expect(await runInDurableObject(session, (instance: SessionObject) => outboxOf(instance).waiting())).toBe(1);
    });
    expect(await auditRows(t.tenantId, sessionId)).toBe(0);
    expect(await runDurableObjectAlarm(session)).toBe(true);
    await until(async () => (await auditRows(t.tenantId, sessionId)) === 1);
    expect(await runInDurableObject(session, (instance: SessionObject) => outboxOf(instance).waiting())).toBe(0);
    await runDurableObjectAlarm(session);
    expect(await auditRows(t.tenantId, sessionId)).toBe(1);
  });
});

/** The session's audit outbox (its test seam). */
const outboxOf = (instance: SessionObject) => sessionTesting(instance).audits;

async function auditRows(tenantId: string, sessionId: string): Promise<number> {
  const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM decision_audit WHERE tenant_id = ? AND session_id = ?")
    .bind(tenantId, sessionId)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** Waits for a condition that fire-and-forget work makes true, checking every 20 ms for at most 5 s. */
async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("the condition did not become true within 5 s");
    await new Promise((r) => setTimeout(r, 20));
  }
}
