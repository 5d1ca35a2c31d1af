// Faults: D1 failing or slow inside the objects. Sessions keep running on their own storage; with the
// rules unknown the gateway asks people; nothing is auto-allowed on missing data; audit rows survive.

import { SELF, env } from "cloudflare:test";
import { afterAll, describe, expect, it, vi } from "vitest";
import { barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { faultCounters, printCounters, restartObject, rulesStub, sessionStub, setD1 } from "./fuzz-faults";

afterAll(() => printCounters("faults-d1"));

const lsAllowed = { decision: "allow", scope: { project: "/projects/demo" }, matcher: { type: "command", prefix: ["ls"] } };

async function sessionWithLsRule() {
  const t = await seedTenant();
  const created = await SELF.fetch("http://gateway.test/v1/rules", {
    method: "POST",
    headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
    body: JSON.stringify(lsAllowed),
  });
  expect(created.status).toBe(201);
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
  const prompt = await agent.peer.next(isMethod("session/prompt"));
  faultCounters.sequences++;
  return { t, agent, client, sessionId, prompt };
}

const ls = (id: string) => ({ toolCallId: id, title: "List", kind: "execute", rawInput: { command: "ls -la" } });

describe("faults: D1 failing or slow", () => {
  it("the baseline: with D1 up, the tenant's rule answers `ls` without asking anyone", async () => {
    const { agent, sessionId } = await sessionWithLsRule();
    const id = agent.askPermission(sessionId, ls("t1"));
    expect((await agent.peer.next(isResponseTo(id))).result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
  });

  it("rules unknown (D1 down, nothing cached): people are asked, nothing is auto-allowed; with D1 back the rule applies again", async () => {
    const { t, agent, client, sessionId } = await sessionWithLsRule();
    await restartObject(rulesStub(t.tenantId)); // nothing cached: the rules must be read from D1
    await setD1(rulesStub(t.tenantId), "down");
    const id = agent.askPermission(sessionId, ls("t1"));
    const copy = await client.next(isMethod("session/request_permission"));
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === id)).toEqual([]);
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "reject" } });
    expect((await agent.peer.next(isResponseTo(id))).result.outcome.optionId).toBe("reject");

    await setD1(rulesStub(t.tenantId), "up");
    const again = agent.askPermission(sessionId, ls("t2"));
    expect((await agent.peer.next(isResponseTo(again))).result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    faultCounters.requestsAnswered += 2;
    faultCounters.invariantsChecked += 3;
  });

  it("slow D1 for the rules: updates keep flowing while the request waits, then the rule answers once and nobody is asked", async () => {
    const { t, agent, client, sessionId } = await sessionWithLsRule();
    await restartObject(rulesStub(t.tenantId));
    await setD1(rulesStub(t.tenantId), "slow", 1500);
    const id = agent.askPermission(sessionId, ls("t1"));
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "still here" } });
    await client.next((m) => m.params?.update?.content?.text === "still here");
    const answer = await agent.peer.next(isResponseTo(id), 10_000);
    expect(answer.result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    await barrier(client, agent, sessionId);
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
    await setD1(rulesStub(t.tenantId), "up");
    faultCounters.requestsAnswered++;
    faultCounters.invariantsChecked += 2;
  });

  it("D1 down for the session: the turn runs, permissions are answered, the turn ends", async () => {
    const { t, agent, client, sessionId, prompt } = await sessionWithLsRule();
    await setD1(sessionStub(t.tenantId, sessionId), "down");
    const id = agent.askPermission(sessionId, { toolCallId: "t1", kind: "edit", title: "Edit" });
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(id))).result.outcome.optionId).toBe("allow");
    agent.update(sessionId, { sessionUpdate: "session_info_update", title: "Renamed while D1 is down" });
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("turn"))).result).toEqual({ stopReason: "end_turn" });
    await setD1(sessionStub(t.tenantId, sessionId), "up");
    faultCounters.requestsAnswered += 2;
    faultCounters.invariantsChecked += 2;
  });

  // Issue 11: audit rows are kept in the session (audit-outbox.ts) until D1 takes them.
  // The resolution below happens while the session's D1 is down; once D1 is back the row must appear.
  it("an audit row written while D1 is down is kept and written when D1 is back", async () => {
    const { t, agent, client, sessionId } = await sessionWithLsRule();
    await setD1(sessionStub(t.tenantId, sessionId), "down");
    const id = agent.askPermission(sessionId, { toolCallId: "t1", kind: "edit", title: "Edit" });
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(id));
    await setD1(sessionStub(t.tenantId, sessionId), "up");
    // Wake the session with more work, as any later traffic would, then look for the row.
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "later" } });
    await client.next((m) => m.params?.update?.content?.text === "later");
    // Audit rows go to D1 in batches, a moment after the resolution (session/audit-outbox.ts `auditPort` `queued`): poll, bounded.
    const rows = () =>
      env.DB.prepare("SELECT outcome FROM decision_audit WHERE tenant_id = ? AND tool_call_id = 't1'").bind(t.tenantId).all();
    await vi.waitFor(async () => expect((await rows()).results).toEqual([{ outcome: "selected" }]), { timeout: 3000, interval: 20 });
  });

  // Issue 11: "with the rules unknown the gateway asks people and says so": the copy carries
  // `_meta.acpGateway.rulesUnavailable` and every client gets `_acp_gateway/rules_unavailable`.
  it("with the rules unknown, the people asked are told that remembered decisions could not be consulted", async () => {
    const { t, agent, client, sessionId } = await sessionWithLsRule();
    await restartObject(rulesStub(t.tenantId));
    await setD1(rulesStub(t.tenantId), "down");
    agent.askPermission(sessionId, ls("t1"));
    const copy = await client.next(isMethod("session/request_permission"));
    await barrier(client, agent, sessionId);
    await setD1(rulesStub(t.tenantId), "up");
    const told = [copy, ...client.unclaimed()].some((m) =>
      /rules?/i.test(JSON.stringify(m._meta ?? m.params?._meta ?? (m.method?.startsWith("_") ? m : {}))),
    );
    expect(told).toBe(true);
    expect(copy.params._meta.acpGateway.rulesUnavailable.message).toMatch(/could not be consulted/);
    const notice = client.unclaimed().find((m) => m.method === "_acp_gateway/rules_unavailable");
    expect(notice?.params).toMatchObject({ sessionId, toolCallId: "t1" });
  });
});
