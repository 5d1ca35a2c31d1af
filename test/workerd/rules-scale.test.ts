// A rule change with many sessions (decision 0031): a revocation is effective in every session before
// the API answers, a session the change never reaches does not use its copy past that, and the calls
// the change makes on the API's path are a fixed number (one per rules shard that took a lease), not
// one per session. Counted through the RulesObject's test seam (`changeCalls`), not by timing.

import { SELF, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { objects } from "../../durable-objects/objects";
import { RULES_SHARDS, SESSION_LEASE_MS } from "../../durable-objects/rules/contract";
import { type RulesObject, rulesTesting } from "../../durable-objects/rules/rules-object";
import { shardOf } from "../../protocol/generation-lease";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { rulesStub } from "./fuzz-faults";

type Tenant = Awaited<ReturnType<typeof seedTenant>>;

const api = (t: Tenant, path: string, method = "GET", body?: unknown) =>
  SELF.fetch(`http://gateway.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${t.adminKey}`, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

async function createRule(t: Tenant, prefix: string[], decision: "allow" | "reject" = "allow"): Promise<string> {
  const created = await api(t, "/v1/rules", "POST", { decision, matcher: { type: "command", prefix } });
  expect(created.status).toBe(201);
  return ((await created.json()) as { rule: { id: string } }).rule.id;
}

async function revoke(t: Tenant, id: string): Promise<void> {
  expect((await api(t, `/v1/rules/${id}`, "DELETE")).status).toBe(204);
}

/** The calls the tenant's root has made on the API's path so far (its test seam). */
const changeCalls = (tenantId: string) => runInDurableObject(rulesStub(tenantId), (o: RulesObject) => rulesTesting(o).changeCalls);

const run = (id: string, command: string) => ({ toolCallId: id, kind: "execute", rawInput: { command } });

describe("a rule change with many sessions", { timeout: 60_000 }, () => {
  it("a revocation is effective in every session before the API answers: a request sent after it is never answered by the revoked rule", async () => {
    const t = await seedTenant();
    const ruleId = await createRule(t, ["npm", "test"]);
    const agent = await dialInAgent(t);
    const sessions = [];
    for (let i = 0; i < 12; i++) {
      const { client, sessionId } = await clientWithSession(t, agent);
      await startTurn(client, agent, sessionId, `turn-${i}`);
      sessions.push({ client, sessionId });
    }
    // Every session asks and is answered by the rule: each now holds it, on a lease just taken.
    await Promise.all(
      sessions.map(async ({ sessionId }, i) => {
        const id = agent.askPermission(sessionId, run(`warm${i}`, "npm test"));
        expect((await agent.peer.next(isResponseTo(id))).result.outcome.optionId).toBe("allow");
      }),
    );
    // Requests racing the revocation may go either way; each is answered once.
    const racing = sessions.map(({ sessionId }, i) => agent.askPermission(sessionId, run(`race${i}`, "npm test")));
    await revoke(t, ruleId);
    // After the API answered: no session is answered by the revoked rule; every request reaches people.
    const after = sessions.map(({ sessionId }, i) => agent.askPermission(sessionId, run(`after${i}`, "npm test")));
    await Promise.all(
      sessions.map(async ({ client }, i) => {
        const copy = await client.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === `after${i}`);
        client.respond(copy.id, { outcome: { outcome: "selected", optionId: "reject" } });
      }),
    );
    for (const id of after) expect((await agent.peer.next(isResponseTo(id))).result.outcome.optionId).toBe("reject");
    for (const [i, id] of racing.entries()) {
      const raced = await Promise.race([
        agent.peer.next(isResponseTo(id)),
        (sessions[i] as (typeof sessions)[number]).client.next(
          (m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === `race${i}`,
        ),
      ]);
      if (raced.method)
        (sessions[i] as (typeof sessions)[number]).client.respond(raced.id, { outcome: { outcome: "selected", optionId: "reject" } });
    }
    for (const { client } of sessions) expect(client.unclaimed().filter(isMethod("session/request_permission"))).toEqual([]);
  });

  it("the API's calls per change are one per rules shard that took a lease, the same at 1,000 and at 3,000 sessions' leases", async () => {
    const t = await seedTenant();
    await createRule(t, ["npm", "test"]);
    // Sessions' leases, taken from their shards as a session's cache takes them (the shard's RPC).
    const lease = async (from: number, to: number) => {
      const calls = [];
      for (let i = from; i < to; i++) {
        const sessionId = `scale-${i}`;
        calls.push(objects.rulesShard(env, t.tenantId, shardOf(sessionId, RULES_SHARDS)).check(sessionId));
      }
      await Promise.all(calls);
    };
    const perChange = async (): Promise<number> => {
      const before = await changeCalls(t.tenantId);
      // A reject rule: fenced (a new allow is not, decision 0049, and would tell these leases' takers).
      await createRule(t, ["make", crypto.randomUUID()], "reject");
      return (await changeCalls(t.tenantId)) - before;
    };
    await lease(0, 1000);
    const atThousand = await perChange();
    const leasing = Date.now();
    await lease(1000, 3000);
    const atThreeThousand = await perChange();
    const answered = Date.now();
    // Every shard took a lease by the first 1,000 (session ids hash evenly): one call each, and no more at 3,000.
    expect(atThousand).toBe(RULES_SHARDS);
    expect(atThreeThousand).toBe(RULES_SHARDS);
    // The change waited out the leases granted after `leasing` (it did not answer while one could be used).
    expect(answered - leasing).toBeGreaterThanOrEqual(SESSION_LEASE_MS);
  });

  it("a tenant's change tells only the shards its sessions used: one session, one call", async () => {
    const t = await seedTenant();
    await createRule(t, ["npm", "test"]);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const id = agent.askPermission(sessionId, run("one", "npm test"));
    expect((await agent.peer.next(isResponseTo(id))).result.outcome.optionId).toBe("allow");
    const before = await changeCalls(t.tenantId);
    await createRule(t, ["make", "x"]);
    expect((await changeCalls(t.tenantId)) - before).toBe(1);
  });
});
