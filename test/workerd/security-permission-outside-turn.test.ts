// A permission request that arrives while no turn runs, after the turn was cancelled, or after its
// deadline fired is answered `cancelled` at once and audited: no rule answers it, no client is asked.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type Peer, type ScriptedAgent, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";

const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const run = (id: string, command: string) => ({ toolCallId: id, title: "Run", kind: "execute", rawInput: { command } });

async function startTurn(client: Peer, agent: ScriptedAgent, sessionId: string) {
  client.send({ jsonrpc: "2.0", id: `turn-${crypto.randomUUID()}`, method: "session/prompt", params: { sessionId, prompt: [] } });
  return agent.peer.next(isMethod("session/prompt"));
}

/** A session where a person chose "always allow" for `git status`: the tenant has an allow rule. */
async function sessionWithAllowRule(settings: Record<string, unknown> = {}) {
  const t = await seedTenant(settings);
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  const prompt = await startTurn(client, agent, sessionId);
  const first = agent.askPermission(sessionId, run("c1", "git status"), OPTIONS);
  const copy = await client.next(isMethod("session/request_permission"));
  client.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
  await agent.peer.next(isResponseTo(first));
  await client.next(isMethod("_acp_gateway/rule_created"));
  agent.peer.respond(prompt.id, { stopReason: "end_turn" });
  await client.next((m) => m.result?.stopReason === "end_turn");
  return { t, agent, client, sessionId };
}

async function auditRow(tenantId: string, toolCallId: string) {
  for (let i = 0; i < 100; i++) {
    const row = await env.DB.prepare("SELECT outcome, decided_by, rule_id FROM decision_audit WHERE tenant_id = ? AND tool_call_id = ?")
      .bind(tenantId, toolCallId)
      .first();
    if (row) return row;
    await scheduler.wait(20);
  }
  throw new Error(`no audit row for ${toolCallId}`);
}

async function expectCancelledUnasked(agent: ScriptedAgent, client: Peer, sessionId: string, reqId: string | number) {
  const answer = await agent.peer.next(isResponseTo(reqId));
  expect(answer.result).toEqual({ outcome: { outcome: "cancelled" } });
  const marker = crypto.randomUUID();
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: marker } });
  await client.next((m) => m.params?.update?.content?.text === marker);
  expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
  expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/permission_resolved" && m.params.decidedBy.type === "rule")).toEqual(
    [],
  );
}

describe("permission requests outside a running turn", () => {
  it("TC-11: a permission request after session/cancel is answered cancelled, not auto-allowed by a matching rule", async () => {
    const { t, agent, client, sessionId } = await sessionWithAllowRule();
    await startTurn(client, agent, sessionId);
    client.notify("session/cancel", { sessionId });
    await agent.peer.next(isMethod("session/cancel"));
    const late = agent.askPermission(sessionId, run("late", "git status"), OPTIONS);
    await expectCancelledUnasked(agent, client, sessionId, late);
    expect(await auditRow(t.tenantId, "late")).toEqual({ outcome: "cancelled", decided_by: "cancel", rule_id: null });
  });

  it("TC-11: a permission request while no turn runs is answered cancelled at once, audited, and no client is asked", async () => {
    const { t, agent, client, sessionId } = await sessionWithAllowRule();
    const idle = agent.askPermission(sessionId, run("idle", "git status"), OPTIONS);
    await expectCancelledUnasked(agent, client, sessionId, idle);
    const other = agent.askPermission(sessionId, run("idle2", "rm -rf /"), OPTIONS);
    await expectCancelledUnasked(agent, client, sessionId, other);
    expect(await auditRow(t.tenantId, "idle")).toEqual({ outcome: "cancelled", decided_by: "turn_end", rule_id: null });
  });

  it("TC-11: a permission request after the permission deadline cancelled the turn is answered cancelled", async () => {
    const { agent, client, sessionId } = await sessionWithAllowRule({ permissionDeadlineMs: 200 });
    await startTurn(client, agent, sessionId);
    const slow = agent.askPermission(sessionId, run("slow", "make deploy"), OPTIONS);
    await client.next(isMethod("session/request_permission"));
    expect((await agent.peer.next(isResponseTo(slow), 10_000)).result).toEqual({ outcome: { outcome: "cancelled" } });
    await client.next(isMethod("_acp_gateway/turn_ended"));
    const after = agent.askPermission(sessionId, run("after", "git status"), OPTIONS);
    await expectCancelledUnasked(agent, client, sessionId, after);
  });
});
