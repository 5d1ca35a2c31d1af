import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { attachClient, clientWithSession, dialInAgent, isMethod, isResponseTo, type Peer, type ScriptedAgent, seedTenant } from "./helpers";
import { objects } from "../../durable-objects/objects";

const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
  { optionId: "never", name: "Always reject", kind: "reject_always" },
];
const run = (id: string, command: string) => ({ toolCallId: id, title: "Run", kind: "execute", rawInput: { command } });

async function startTurn(client: Peer, agent: ScriptedAgent, sessionId: string) {
  client.send({ jsonrpc: "2.0", id: `turn-${crypto.randomUUID()}`, method: "session/prompt", params: { sessionId, prompt: [] } });
  return agent.peer.next(isMethod("session/prompt"));
}

describe("remembered decisions in a live session", () => {
  it("TC-11: an always-allow is stored for the tenant, relayed as allow_once, and the next identical request never reaches a client", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);

    const first = agent.askPermission(sessionId, run("c1", "git status"), OPTIONS);
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
    expect((await agent.peer.next(isResponseTo(first))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    const created = await client.next(isMethod("_acp_gateway/rule_created"));
    expect(created.params.rule).toMatchObject({ decision: "allow" });
    expect(created.params.rule.description).toMatch(/git status/);

    const second = agent.askPermission(sessionId, run("c2", "git status --short"), OPTIONS);
    expect((await agent.peer.next(isResponseTo(second))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    const resolved = await client.next((m) => m.method === "_acp_gateway/permission_resolved" && m.params.toolCallId === "c2");
    expect(resolved.params.decidedBy).toMatchObject({ type: "rule", ruleId: created.params.rule.id });
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);

    // A different command is asked again (TC-18).
    agent.askPermission(sessionId, run("c3", "git push"), OPTIONS);
    expect((await client.next(isMethod("session/request_permission"))).params.toolCall.toolCallId).toBe("c3");
  });

  it("an always-allow of an operation with nothing to identify it stores no rule: the person is told why and the next one is asked again", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    // An edit with no raw input, no locations, no diff and no name: nothing says what it changes.
    const blind = { toolCallId: "e1", title: "Edit the config", kind: "edit" };
    const first = agent.askPermission(sessionId, blind, OPTIONS);
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
    expect((await agent.peer.next(isResponseTo(first))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    const notCreated = await client.next(isMethod("_acp_gateway/rule_not_created"));
    expect(notCreated.params).toMatchObject({ sessionId, toolCallId: "e1" });
    expect(notCreated.params.reason).toEqual(expect.any(String));
    expect(notCreated.params.reason.length).toBeGreaterThan(10);
    const rules = await env.DB.prepare("SELECT count(*) AS n FROM decision_rules WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(rules?.n).toBe(0);
    // The same blind edit again (even a different title) is asked again, not answered by anything remembered.
    agent.askPermission(sessionId, { ...blind, toolCallId: "e2", title: "Edit the config again" }, OPTIONS);
    expect((await client.next(isMethod("session/request_permission"))).params.toolCall.toolCallId).toBe("e2");
  });

  it("a new always-rule resolves the tenant's other matching pending requests at once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId: s1 } = await clientWithSession(t, agent);
    const { client: bob, sessionId: s2 } = await clientWithSession(t, agent, t.clientKey2);
    await startTurn(alice, agent, s1);
    await startTurn(bob, agent, s2);
    const waiting = agent.askPermission(s2, run("b1", "npm test"), OPTIONS);
    await bob.next(isMethod("session/request_permission"));
    const asked = agent.askPermission(s1, run("a1", "npm test --silent"), OPTIONS);
    const copy = await alice.next(isMethod("session/request_permission"));
    alice.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome.optionId).toBe("once");
    expect((await agent.peer.next(isResponseTo(waiting))).result.outcome.optionId).toBe("once");
    await bob.next(isMethod("$/cancel_request"));
  });

  it("a reject-always answers later requests with the offered reject option, never cancelled", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const first = agent.askPermission(sessionId, run("r1", "curl evil.example"), OPTIONS);
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "never" } });
    // "curl evil.example" has no subcommand: remembered exactly.
    expect((await agent.peer.next(isResponseTo(first))).result.outcome.optionId).toBe("no");
    await client.next(isMethod("_acp_gateway/rule_created"));
    const again = agent.askPermission(
      sessionId,
      run("r2", "curl evil.example"),
      OPTIONS.filter((o) => o.kind !== "reject_once"),
    );
    expect((await agent.peer.next(isResponseTo(again))).result.outcome).toEqual({ outcome: "selected", optionId: "never" });
  });

  it("a revoked rule stops applying in a live session", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const first = agent.askPermission(sessionId, run("v1", "git log"), OPTIONS);
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
    await agent.peer.next(isResponseTo(first));
    const created = await client.next(isMethod("_acp_gateway/rule_created"));
    await env.DB.prepare("UPDATE decision_rules SET revoked_at = ? WHERE id = ?").bind(Date.now(), created.params.rule.id).run();
    await objects.rules(env, t.tenantId).changed();
    agent.askPermission(sessionId, run("v2", "git log"), OPTIONS);
    expect((await client.next(isMethod("session/request_permission"))).params.toolCall.toolCallId).toBe("v2");
  });

  it("another tenant's rule never applies", async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const agentA = await dialInAgent(a);
    const agentB = await dialInAgent(b);
    const { client: ca, sessionId: sa } = await clientWithSession(a, agentA);
    const { client: cb, sessionId: sb } = await clientWithSession(b, agentB);
    await startTurn(ca, agentA, sa);
    await startTurn(cb, agentB, sb);
    const first = agentA.askPermission(sa, run("x1", "make build"), OPTIONS);
    ca.respond((await ca.next(isMethod("session/request_permission"))).id, { outcome: { outcome: "selected", optionId: "always" } });
    await agentA.peer.next(isResponseTo(first));
    await ca.next(isMethod("_acp_gateway/rule_created"));
    agentB.askPermission(sb, run("x2", "make build"), OPTIONS);
    expect((await cb.next(isMethod("session/request_permission"))).params.toolCall.toolCallId).toBe("x2");
  });

  it("relays the person's choice as made when the tenant says so", async () => {
    const t = await seedTenant({ relayAlwaysAsMade: true });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const first = agent.askPermission(sessionId, run("m1", "cargo build"), OPTIONS);
    client.respond((await client.next(isMethod("session/request_permission"))).id, {
      outcome: { outcome: "selected", optionId: "always" },
    });
    expect((await agent.peer.next(isResponseTo(first))).result.outcome.optionId).toBe("always");
  });

  it("audits every resolution: by a person, by a rule, by cancel", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const observer = await attachClient(t, agent, sessionId);
    await startTurn(client, agent, sessionId);
    const p1 = agent.askPermission(sessionId, run("a1", "git diff"), OPTIONS);
    client.respond((await client.next(isMethod("session/request_permission"))).id, {
      outcome: { outcome: "selected", optionId: "always" },
    });
    await agent.peer.next(isResponseTo(p1));
    const p2 = agent.askPermission(sessionId, run("a2", "git diff HEAD"), OPTIONS);
    await agent.peer.next(isResponseTo(p2));
    agent.askPermission(sessionId, run("a3", "rm -rf /tmp/x"), OPTIONS);
    await observer.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === "a3");
    client.notify("session/cancel", { sessionId });
    await observer.next((m) => m.method === "_acp_gateway/permission_resolved" && m.params.toolCallId === "a3");
    const rows = await waitForAudit(t.tenantId, 3);
    expect(rows.map((r) => [r.tool_call_id, r.decided_by, r.outcome, r.option_kind])).toEqual([
      ["a1", "person", "selected", "allow_always"],
      ["a2", "rule", "selected", "allow_once"],
      ["a3", "cancel", "cancelled", null],
    ]);
    expect(rows[0]).toMatchObject({ decided_by_user: "alice", operation: "git diff", kind: "execute" });
  });
});

/** Audit rows are written off the hot path; poll D1 (bounded) until they are all there. */
async function waitForAudit(tenantId: string, count: number) {
  for (let i = 0; i < 100; i++) {
    const { results } = await env.DB.prepare("SELECT * FROM decision_audit WHERE tenant_id = ? ORDER BY at, tool_call_id")
      .bind(tenantId)
      .all<Record<string, unknown>>();
    if (results.length >= count) return results;
    await scheduler.wait(20);
  }
  throw new Error(`fewer than ${count} audit rows`);
}
