// The session's compiled copy of its tenant's rules (durable-objects/session/tenant-rules.ts): a permission
// request that a rule answers is decided in the session, with no call to the RulesObject (its shard
// is asked once per lease at most); and every change — revoke, expiry, a rule another session made,
// an eviction, a session told nothing — is seen before it could let a stale rule answer.

import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_OPTIONS,
  barrier,
  clientWithSession,
  dialInAgent,
  isMethod,
  isResponseTo,
  type Peer,
  type ScriptedAgent,
  seedTenant,
} from "./helpers";
import { countRulesCalls, losePushesTo, restartObject, sessionStub, setSessionLease } from "./fuzz-faults";
import { HARD_LIMITS } from "../../protocol/tenant-limits";

type Tenant = Awaited<ReturnType<typeof seedTenant>>;

const api = (path: string, key: string, method = "GET", body?: unknown) =>
  SELF.fetch(`http://gateway.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

async function createRule(t: Tenant, body: Record<string, unknown>): Promise<string> {
  const created = await api("/v1/rules", t.adminKey, "POST", body);
  expect(created.status).toBe(201);
  return ((await created.json()) as { rule: { id: string } }).rule.id;
}

async function revoke(t: Tenant, id: string): Promise<void> {
  expect((await api(`/v1/rules/${id}`, t.adminKey, "DELETE")).status).toBe(204);
}

const npmTest = { decision: "allow", matcher: { type: "command", prefix: ["npm", "test"] } };
const run = (id: string, command: string) => ({ toolCallId: id, kind: "execute", rawInput: { command } });

async function sessionInTurn(t: Tenant, agent: ScriptedAgent, key = t.clientKey) {
  const { client, sessionId } = await clientWithSession(t, agent, key);
  client.send({ jsonrpc: "2.0", id: `turn-${sessionId}`, method: "session/prompt", params: { sessionId, prompt: [] } });
  await agent.peer.next((m) => m.method === "session/prompt" && m.params.sessionId === sessionId);
  return { client, sessionId };
}

/** The request is answered by a rule: the agent gets allow, and no client was asked. */
async function answeredByRule(agent: ScriptedAgent, client: Peer, sessionId: string, toolCallId: string, command: string) {
  const id = agent.askPermission(sessionId, run(toolCallId, command));
  expect((await agent.peer.next(isResponseTo(id))).result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
  const resolved = await client.next((m) => m.method === "_acp_gateway/permission_resolved" && m.params.toolCallId === toolCallId);
  expect(resolved.params.decidedBy.type).toBe("rule");
  // The agent ran it and says so: a rule-answered command still running would hold a rule-answered write (decision 0046).
  agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId, status: "completed" });
  return resolved.params.decidedBy.ruleId as string;
}

/** The request reaches a person: the client gets the copy and the agent nothing until it answers. */
async function askedOfPeople(agent: ScriptedAgent, client: Peer, sessionId: string, toolCallId: string, command: string) {
  const id = agent.askPermission(sessionId, run(toolCallId, command));
  const copy = await client.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === toolCallId);
  expect(agent.peer.unclaimed().filter((m) => m.id === id)).toEqual([]);
  client.respond(copy.id, { outcome: { outcome: "selected", optionId: "reject" } });
  expect((await agent.peer.next(isResponseTo(id))).result.outcome.optionId).toBe("reject");
}

describe("the rules path for a tenant with no rules", () => {
  it("asks its shard once within the lease, and applies the first rule created through the API to the next request", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "norules");
    const { client, sessionId } = await sessionInTurn(t, agent);
    // Long enough that three asked round trips fit in it on a loaded machine (3 s did not, once).
    await setSessionLease(t.tenantId, sessionId, 60_000);
    const calls = countRulesCalls(t.tenantId);
    for (let i = 0; i < 3; i++) {
      const id = agent.askPermission(sessionId, run(`tc${i}`, `make ${i}`), DEFAULT_OPTIONS);
      const copy = await client.next(isMethod("session/request_permission"));
      client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
      await agent.peer.next((m) => m.id === id);
    }
    expect(calls).toEqual({ snapshot: 1, check: 0 });

    await createRule(t, npmTest); // an allow: the session holding a lease on the empty rules is told (decision 0049)
    // The very next request is answered by the rule, without asking anyone.
    await answeredByRule(agent, client, sessionId, "tc9", "npm test");
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
    expect(calls.snapshot).toBe(2);
  });
});

describe("a new allow rule answers at once, without the fence (decision 0049)", { timeout: 30_000 }, () => {
  it("POST of an allow rule answers without waiting out a session's long lease on older rules, and that session's next request is answered by it", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    // A lease as long as the shard's own (10 s): a fence would wait it out.
    await setSessionLease(t.tenantId, sessionId, 60_000);
    await askedOfPeople(agent, client, sessionId, "warm", "make x");
    const posted = Date.now();
    await createRule(t, npmTest);
    // Far under the lease a fence would wait out (60 s), with room for a loaded machine.
    expect(Date.now() - posted).toBeLessThan(10_000);
    await answeredByRule(agent, client, sessionId, "next", "npm test");
    expect(client.unclaimed().filter(isMethod("session/request_permission"))).toEqual([]);
  });

  it("a reject rule keeps the fence: POST answers only once the session's lease on older rules ran out", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    const leaseMs = 1500;
    await setSessionLease(t.tenantId, sessionId, leaseMs);
    const asked = Date.now();
    await askedOfPeople(agent, client, sessionId, "warm", "make x");
    await createRule(t, { decision: "reject", matcher: { type: "command", prefix: ["make"] } });
    expect(Date.now() - asked).toBeGreaterThanOrEqual(leaseMs);
  });
});

describe("the compiled rules cache in the session", { timeout: 30_000 }, () => {
  it("decides locally: many requests answered by a rule cost one snapshot of the rules and no lease check (the unseen-changes check is one call to the root, decision 0046)", async () => {
    const t = await seedTenant();
    const ruleId = await createRule(t, npmTest);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    await setSessionLease(t.tenantId, sessionId, 30_000);
    const calls = countRulesCalls(t.tenantId);
    for (let i = 0; i < 5; i++)
      expect(await answeredByRule(agent, client, sessionId, `n${i}`, i % 2 === 0 ? "npm test" : "npm test --silent")).toBe(ruleId);
    await askedOfPeople(agent, client, sessionId, "other", "npm publish");
    expect(calls).toEqual({ snapshot: 1, check: 0 });
  });

  it("revoke, then ask: once DELETE has answered, the revoked rule never answers again (five rounds, the ask racing the revoke)", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    for (let round = 0; round < 5; round++) {
      const ruleId = await createRule(t, npmTest);
      expect(await answeredByRule(agent, client, sessionId, `warm${round}`, "npm test")).toBe(ruleId);
      // A request in flight while the revoke runs may go either way; one sent after it answered may not.
      const racing = agent.askPermission(sessionId, run(`race${round}`, "npm test"));
      await revoke(t, ruleId);
      await askedOfPeople(agent, client, sessionId, `after${round}`, "npm test");
      const raced = await Promise.race([
        agent.peer.next(isResponseTo(racing)),
        client.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === `race${round}`),
      ]);
      if (raced.method) client.respond(raced.id, { outcome: { outcome: "selected", optionId: "reject" } });
    }
  });

  it("a session told nothing (its push throws): DELETE waits out the lease it holds, and the revoked rule does not answer after it", async () => {
    const t = await seedTenant();
    const ruleId = await createRule(t, npmTest);
    const leaseMs = 1500;
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    await setSessionLease(t.tenantId, sessionId, leaseMs);
    // The session cannot be told: its shard's push to it fails (it is not needed: the lease is the fence).
    await losePushesTo(t.tenantId, sessionId);
    const asked = Date.now();
    await answeredByRule(agent, client, sessionId, "warm", "npm test");
    await revoke(t, ruleId);
    // The lease began after `asked` (when the shard granted it): DELETE answered no sooner than its end.
    expect(Date.now() - asked).toBeGreaterThanOrEqual(leaseMs);
    await askedOfPeople(agent, client, sessionId, "after", "npm test");
  });

  it("a cached rule stops answering at its expiry, with no change pushed", async () => {
    // The rule must still be live when the first request is answered: on a loaded machine the set-up
    // can take longer than a short expiry, so a set-up that left under a second of the rule's life is
    // started again with four times the time (the expiry is what is under test, not the set-up's speed).
    for (let lifeMs = 1500; ; lifeMs *= 4) {
      const t = await seedTenant();
      const expiresAt = Date.now() + lifeMs;
      await createRule(t, { ...npmTest, expiresAt });
      const agent = await dialInAgent(t);
      const { client, sessionId } = await sessionInTurn(t, agent);
      if (expiresAt - Date.now() < 1000 && lifeMs < 60_000) {
        client.close();
        agent.peer.close();
        continue;
      }
      await expiresAfterAnswering(t, agent, client, sessionId, expiresAt);
      return;
    }
  });

  async function expiresAfterAnswering(
    t: Awaited<ReturnType<typeof seedTenant>>,
    agent: Awaited<ReturnType<typeof dialInAgent>>,
    client: Awaited<ReturnType<typeof sessionInTurn>>["client"],
    sessionId: string,
    expiresAt: number,
  ): Promise<void> {
    const calls = countRulesCalls(t.tenantId);
    await answeredByRule(agent, client, sessionId, "before", "npm test");
    // Time itself is what is under test here: wait until the rule's expiry has passed.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 50));
    await askedOfPeople(agent, client, sessionId, "after", "npm test");
    expect(calls.snapshot).toBe(1);
  }

  it("a rule another session made (a person's always-allow) answers this session's next request at once", async () => {
    const t = await seedTenant();
    await createRule(t, { decision: "allow", matcher: { type: "command", prefix: ["ls"] } }); // so both hold non-empty rules
    const agent = await dialInAgent(t);
    const alice = await sessionInTurn(t, agent);
    const bob = await sessionInTurn(t, agent, t.clientKey2);
    // Both sessions have their rules cached, without npm test.
    await askedOfPeople(agent, bob.client, bob.sessionId, "b0", "npm test");
    const asked = agent.askPermission(alice.sessionId, run("a1", "npm test"));
    const copy = await alice.client.next(isMethod("session/request_permission"));
    alice.client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow-always" } });
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome.optionId).toBe("allow");
    const created = await alice.client.next(isMethod("_acp_gateway/rule_created"));
    expect(await answeredByRule(agent, bob.client, bob.sessionId, "b1", "npm test")).toBe(created.params.rule.id);
  });

  it("10,000 rules: the session decides from the index, and the right rule answers", async () => {
    // Beyond the default bounds on a tenant's rules (decision 0041), as its operator may allow.
    const t = await seedTenant({
      limits: { rulesPerTenant: HARD_LIMITS.rulesPerTenant, ruleBytesPerTenant: HARD_LIMITS.ruleBytesPerTenant },
    });
    const at = Date.now();
    const values = Array.from(
      { length: 10_000 },
      (_, i) =>
        `('rule_fill_${t.tenantId}_${i}', '${t.tenantId}', 'allow', '{"type":"command","prefix":["tool${i}","run"]}', 'command tool${i} run', 'filler', ${at})`,
    );
    const statements = [];
    for (let i = 0; i < values.length; i += 500) {
      statements.push(
        env.DB.prepare(
          `INSERT INTO decision_rules (id, tenant_id, decision, matcher, matcher_text, description, created_at) VALUES ${values.slice(i, i + 500).join(",")}`,
        ),
      );
    }
    await env.DB.batch(statements);
    const ruleId = await createRule(t, npmTest); // also tells the RulesObject that the rules changed
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    await setSessionLease(t.tenantId, sessionId, 30_000);
    const calls = countRulesCalls(t.tenantId);
    expect(await answeredByRule(agent, client, sessionId, "n", "npm test")).toBe(ruleId);
    expect(await answeredByRule(agent, client, sessionId, "t7", "tool7777 run")).toBe(`rule_fill_${t.tenantId}_7777`);
    await askedOfPeople(agent, client, sessionId, "t8", "tool7777 build");
    await askedOfPeople(agent, client, sessionId, "t9", "tool10000 run");
    expect(calls).toEqual({ snapshot: 1, check: 0 });
  });

  it("an evicted session rebuilds its cache, and a revoke made while it was evicted holds", async () => {
    const t = await seedTenant();
    const ruleId = await createRule(t, npmTest);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    const calls = countRulesCalls(t.tenantId);
    await answeredByRule(agent, client, sessionId, "first", "npm test");
    await restartObject(sessionStub(t.tenantId, sessionId));
    await answeredByRule(agent, client, sessionId, "rebuilt", "npm test");
    expect(calls.snapshot).toBe(2);
    await restartObject(sessionStub(t.tenantId, sessionId));
    await revoke(t, ruleId);
    await askedOfPeople(agent, client, sessionId, "revoked", "npm test");
    await barrier(client, agent, sessionId);
  });

  it("an expired lease is confirmed with one version check, not a new snapshot", async () => {
    const t = await seedTenant();
    const ruleId = await createRule(t, npmTest);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await sessionInTurn(t, agent);
    await setSessionLease(t.tenantId, sessionId, 300);
    const calls = countRulesCalls(t.tenantId);
    await answeredByRule(agent, client, sessionId, "first", "npm test");
    // Time is what is under test: the lease runs out.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await answeredByRule(agent, client, sessionId, "second", "npm test")).toBe(ruleId);
    expect(calls.snapshot).toBe(1);
    expect(calls.check).toBeGreaterThanOrEqual(1);
  });
});
