import { env, evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { attachClient, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { objects } from "../../durable-objects/objects";

const sessionStub = (tenantId: string, sessionId: string) => objects.session(env, tenantId, sessionId);
const agentStub = (tenantId: string, name: string) => objects.agent(env, tenantId, name);

describe("faults", () => {
  it("rebuilds everything from storage after both objects are evicted: the pending request, the turn, the streams", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    alice.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "x" }] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    agent.update(sessionId, { sessionUpdate: "tool_call", toolCallId: "t1", title: "Edit", kind: "edit" });
    const agentReqId = agent.askPermission(sessionId, { toolCallId: "t1", status: "pending" });
    const copy = await bob.next(isMethod("session/request_permission"));
    await alice.next(isMethod("session/request_permission"));
    const before = await sessionStub(t.tenantId, sessionId).snapshot();

    await evictDurableObject(sessionStub(t.tenantId, sessionId));
    await evictDurableObject(agentStub(t.tenantId, agent.name));

    const after = await sessionStub(t.tenantId, sessionId).snapshot();
    expect(after).toEqual(before);
    bob.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(agentReqId))).result.outcome.optionId).toBe("allow");
    await alice.next(isMethod("$/cancel_request"));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
    expect((await alice.next((m) => m.params?.update?.sessionUpdate === "tool_call_update")).params.update.status).toBe("completed");
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await alice.next(isResponseTo(1))).result.stopReason).toBe("end_turn");
  });

  it("when the agent disconnects mid-turn: copies withdrawn, the prompt fails naming the cause, the session stays readable", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    const copy = await client.next(isMethod("session/request_permission"));
    agent.peer.close();
    const withdrawn = await client.next(isMethod("$/cancel_request"));
    expect(withdrawn.params.requestId).toBe(copy.id);
    const failed = await client.next(isResponseTo("turn"));
    expect(failed.error.code).toBe(-32603);
    expect(failed.error.message).toMatch(/disconnected/);
    const snapshot = await sessionStub(t.tenantId, sessionId).snapshot();
    expect(snapshot).toMatchObject({ turn: { state: "idle" }, pendingPermissions: [] });
    expect(snapshot?.toolCalls).toEqual([{ toolCallId: "t1", title: "Run", kind: "execute", status: "pending" }]);
  });

  it("a client that disconnects loses nothing: the request waits and its prompt result is not needed to go on", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    const agentReqId = agent.askPermission(sessionId, { toolCallId: "t9", kind: "read" });
    await client.next(isMethod("session/request_permission"));
    client.close();
    await client.closed;
    const back = await attachClient(t, agent, sessionId, t.clientKey);
    const copy = await back.next(isMethod("session/request_permission"));
    back.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(agentReqId))).result.outcome.optionId).toBe("allow");
  });
});

describe("deadlines", () => {
  it("cancels the turn exactly like session/cancel when a permission request's deadline passes, and says why", async () => {
    const t = await seedTenant({ permissionDeadlineMs: 300 });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    const agentReqId = agent.askPermission(sessionId, { toolCallId: "slow", kind: "execute" });
    const copy = await client.next(isMethod("session/request_permission"));
    const answer = await agent.peer.next(isResponseTo(agentReqId), 10_000);
    expect(answer.result).toEqual({ outcome: { outcome: "cancelled" } });
    await agent.peer.next(isMethod("session/cancel"));
    expect((await client.next(isMethod("$/cancel_request"))).params.requestId).toBe(copy.id);
    const ended = await client.next(isMethod("_acp_gateway/turn_ended"));
    expect(ended.params).toMatchObject({ sessionId, reason: "permission_deadline" });
  });
});
