// The AgentObject's map of the agent's open requests (which session each went to) lives in memory,
// not in SQLite. An eviction drops that memory but keeps the agent's dial-in socket: what the map is
// for must still hold across it. The answer reaches the agent once, a second try of it sends nothing,
// and the agent's $/cancel_request still reaches the session that holds the request.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ToAgent } from "../../durable-objects/agent/contract";
import { type AgentObject, agentTesting } from "../../durable-objects/agent/agent-object";
import { barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { agentStub, restartObject, sessionStub } from "./fuzz-faults";

/** The AgentObject's current connection epoch, as its store holds it. */
async function epochOf(stub: ReturnType<typeof agentStub>): Promise<number> {
  return runInDurableObject(stub, (instance: AgentObject) => agentTesting(instance).epoch);
}

/** A turn with one permission request pending at the client; returns what the test needs. */
async function pendingRequest() {
  const t = await seedTenant();
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  await startTurn(client, agent, sessionId);
  const agentReqId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
  const copy = await client.next(isMethod("session/request_permission"));
  return { t, agent, client, sessionId, agentReqId, copy, stub: agentStub(t.tenantId, agent.name) };
}

describe("the agent's open requests, mapped in the AgentObject's memory", () => {
  it("the AgentObject evicted between the request and the answer: the answer reaches the agent once, and a second try sends nothing", async () => {
    const { t, agent, client, sessionId, agentReqId, copy, stub } = await pendingRequest();
    await restartObject(stub);
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    const answer = await agent.peer.next(isResponseTo(agentReqId));
    expect(answer.result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    // The session's second try of the same answer (its first call's result lost), on the woken instance.
    const again: ToAgent = { type: "response", epoch: await epochOf(stub), id: agentReqId, result: answer.result };
    expect(await stub.toAgent(agent.name, { tenantId: t.tenantId, sessionId }, again)).toBe(true);
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
  });

  it("without an eviction, a second try of an answer sends nothing either", async () => {
    const { t, agent, client, sessionId, agentReqId, copy, stub } = await pendingRequest();
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    const answer = await agent.peer.next(isResponseTo(agentReqId));
    const again: ToAgent = { type: "response", epoch: await epochOf(stub), id: agentReqId, result: answer.result };
    expect(await stub.toAgent(agent.name, { tenantId: t.tenantId, sessionId }, again)).toBe(true);
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
  });

  it("the agent's $/cancel_request after an eviction withdraws the clients' copy, and another session's request stays", async () => {
    const { t, agent, client, agentReqId, copy, stub } = await pendingRequest();
    const other = await clientWithSession(t, agent, t.clientKey2);
    other.client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId: other.sessionId, prompt: [] } });
    await agent.peer.next((m) => m.method === "session/prompt" && m.params.sessionId === other.sessionId);
    const otherReqId = agent.askPermission(other.sessionId, { toolCallId: "o1", title: "Edit", kind: "edit" });
    await other.client.next(isMethod("session/request_permission"));
    await restartObject(stub);

    agent.peer.notify("$/cancel_request", { requestId: agentReqId });
    const withdrawn = await client.next(isMethod("$/cancel_request"));
    expect(withdrawn.params.requestId).toBe(copy.id);
    // The session confirms the withdrawal to the agent (-32800), through the woken object.
    expect((await agent.peer.next(isResponseTo(agentReqId))).error.code).toBe(-32800);
    // The woken object did not know where the request went; the edge, which saw it, named the session,
    // so the other session's request is untouched (a dial-out agent's cancel would reach every active
    // session, and those that do not hold the id ignore it).
    await barrier(other.client, agent, other.sessionId);
    expect((await sessionStub(t.tenantId, other.sessionId).snapshot())?.pendingPermissions).toHaveLength(1);
    expect(agent.peer.unclaimed().filter((m) => m.id === otherReqId)).toEqual([]);
    expect(other.client.unclaimed().filter((m) => m.method === "$/cancel_request")).toEqual([]);
  });
});
