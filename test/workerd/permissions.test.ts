import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { attachClient, barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, withoutCursor } from "./helpers";
import { objects } from "../../durable-objects/objects";

const editCall = {
  toolCallId: "call-1",
  title: "Edit a.ts",
  kind: "edit",
  status: "pending",
  locations: [{ path: "/projects/demo/a.ts" }],
};

async function twoClientsWithPrompt() {
  const t = await seedTenant();
  const agent = await dialInAgent(t);
  const { client: alice, sessionId } = await clientWithSession(t, agent);
  const bob = await attachClient(t, agent, sessionId);
  alice.send({ jsonrpc: "2.0", id: 0, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "edit" }] } });
  const prompt = await agent.peer.next(isMethod("session/prompt"));
  return { t, agent, alice, bob, sessionId, prompt };
}

describe("permission requests", () => {
  it("TC-9: applies the request's toolCall to the table and sends the request to every attached client", async () => {
    const { t, agent, alice, bob, sessionId } = await twoClientsWithPrompt();
    agent.askPermission(sessionId, editCall);
    const [a, b] = await Promise.all([
      alice.next(isMethod("session/request_permission")),
      bob.next(isMethod("session/request_permission")),
    ]);
    expect(withoutCursor(a.params)).toEqual(withoutCursor(b.params));
    expect(a.params.toolCall).toEqual(editCall);
    const snapshot = await objects.session(env, t.tenantId, sessionId).snapshot();
    expect(snapshot?.toolCalls).toEqual([editCall]);
    expect(snapshot?.pendingPermissions).toHaveLength(1);
  });

  it("first answer wins: the agent gets it under its own id and the other client's copy is withdrawn", async () => {
    const { agent, alice, bob, sessionId } = await twoClientsWithPrompt();
    const agentReqId = agent.askPermission(sessionId, editCall);
    const [a, b] = await Promise.all([
      alice.next(isMethod("session/request_permission")),
      bob.next(isMethod("session/request_permission")),
    ]);
    bob.respond(b.id, { outcome: { outcome: "selected", optionId: "allow" }, _meta: { ui: "bob" } });
    const answer = await agent.peer.next(isResponseTo(agentReqId));
    expect(answer.result).toEqual({ outcome: { outcome: "selected", optionId: "allow" }, _meta: { ui: "bob" } });
    const withdrawn = await alice.next(isMethod("$/cancel_request"));
    expect(withdrawn.params.requestId).toBe(a.id);
    const resolved = await alice.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params).toMatchObject({ sessionId, toolCallId: "call-1", decidedBy: { type: "person", user: "bob" } });
    // A late answer from the losing client is ignored: the agent receives exactly one answer.
    alice.respond(a.id, { outcome: { outcome: "selected", optionId: "reject" } });
    await barrier(alice, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
  });

  it("TC-10: an optionId that was not offered is refused with -32602 and the request stays pending", async () => {
    const { agent, alice, bob, sessionId } = await twoClientsWithPrompt();
    const agentReqId = agent.askPermission(sessionId, editCall);
    const a = await alice.next(isMethod("session/request_permission"));
    await bob.next(isMethod("session/request_permission"));
    alice.respond(a.id, { outcome: { outcome: "selected", optionId: "yolo" } });
    const refusal = await alice.next((m) => m.error !== undefined);
    expect(refusal.error.code).toBe(-32602);
    expect(refusal.error.message).toMatch(/yolo.*not offered/);
    expect(refusal.error.data.requestId).toBe(a.id);
    // Asked again, under a new id; the agent has heard nothing.
    const again = await alice.next(isMethod("session/request_permission"));
    expect(again.id).not.toBe(a.id);
    alice.respond(again.id, { outcome: { outcome: "selected", optionId: "reject" } });
    const answer = await agent.peer.next(isResponseTo(agentReqId));
    expect(answer.result.outcome).toEqual({ outcome: "selected", optionId: "reject" });
  });

  it("TC-17: an unrecognised outcome is never forwarded as approval", async () => {
    const { agent, alice, sessionId } = await twoClientsWithPrompt();
    const agentReqId = agent.askPermission(sessionId, editCall);
    const a = await alice.next(isMethod("session/request_permission"));
    alice.respond(a.id, { outcome: { outcome: "approved", optionId: "allow" } });
    const refusal = await alice.next((m) => m.error !== undefined);
    expect(refusal.error.code).toBe(-32602);
    await barrier(alice, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
  });

  it("a request with no client attached waits and is sent to the next client that attaches", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: 0, method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    client.close();
    await client.closed;
    const agentReqId = agent.askPermission(sessionId, editCall);
    const later = await attachClient(t, agent, sessionId, t.clientKey);
    const copy = await later.next(isMethod("session/request_permission"));
    later.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    const answer = await agent.peer.next(isResponseTo(agentReqId));
    expect(answer.result.outcome.optionId).toBe("allow");
  });

  it("rewrites ids so two clients that both use id 0 never collide", async () => {
    const { agent, alice, bob, sessionId, prompt } = await twoClientsWithPrompt();
    // alice's prompt used id 0; bob sends another request with id 0.
    bob.send({ jsonrpc: "2.0", id: 0, method: "session/set_mode", params: { sessionId, modeId: "plan" } });
    const setMode = await agent.peer.next(isMethod("session/set_mode"));
    expect(setMode.id).not.toBe(prompt.id);
    agent.peer.respond(setMode.id, { fromAgent: "set_mode" });
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    const bobAnswer = await bob.next(isResponseTo(0));
    const aliceAnswer = await alice.next(isResponseTo(0));
    expect(bobAnswer.result).toEqual({ fromAgent: "set_mode" });
    expect(aliceAnswer.result).toEqual({ stopReason: "end_turn" });
  });
});
