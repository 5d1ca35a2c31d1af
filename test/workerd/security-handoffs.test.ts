// Every hand-off that can fail leaves the session consistent: a prompt that cannot reach the agent gets
// an error and the turn returns to idle; an answer that cannot reach the agent is not announced as
// resolved. The failing hand-off is produced by making the real AgentObject's toAgent throw (a
// failure no real peer produces on demand), or by the AgentObject not holding the session.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { AgentObject } from "../../durable-objects/agent/agent-object";
import { attachClient, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { objects } from "../../durable-objects/objects";
import { closeEdgeLinks } from "./fuzz-faults";

const agentStub = (tenantId: string, name: string) => objects.agent(env, tenantId, name);
const snapshotOf = (tenantId: string, sessionId: string) => objects.session(env, tenantId, sessionId).snapshot();

/**
 * Makes AgentObject.toAgent throw for frames of `type` until the returned function is called. RPC
 * dispatches through the class's prototype, so that is what is patched (and restored).
 */
async function breakHandOff(tenantId: string, name: string, type: string): Promise<() => Promise<void>> {
  const stub = agentStub(tenantId, name);
  const original = await runInDurableObject(stub, (instance: AgentObject) => {
    const proto = Object.getPrototypeOf(instance) as AgentObject;
    const real = proto.toAgent;
    proto.toAgent = async function (this: AgentObject, agent, ref, frame) {
      if (frame.type === type) throw new Error("hand-off failed (test)");
      return real.call(this, agent, ref, frame);
    };
    return real;
  });
  return () =>
    runInDurableObject(stub, (instance: AgentObject) => {
      (Object.getPrototypeOf(instance) as AgentObject).toAgent = original;
    });
}

describe("hand-offs that fail leave the session consistent", () => {
  it("a prompt whose hand-off to the agent fails gets an error, the turn returns to idle, and the next prompt works", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const repair = await breakHandOff(t.tenantId, agent.name, "request");
    client.send({ jsonrpc: "2.0", id: "lost", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "x" }] } });
    const failed = await client.next(isResponseTo("lost"));
    expect(failed.error).toMatchObject({ code: -32603, data: { reason: "agent_unreachable" } });
    expect(failed.error.message).toMatch(/could not hand session\/prompt to the agent/);
    expect((await client.next(isMethod("_acp_gateway/turn_ended"))).params.reason).toBe("agent_unreachable");
    expect((await snapshotOf(t.tenantId, sessionId))?.turn).toEqual({ state: "idle" });
    await repair();
    client.send({ jsonrpc: "2.0", id: "next", method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("next"))).result.stopReason).toBe("end_turn");
  });

  it("a prompt for a session the agent's object does not hold gets an error at once instead of a turn that runs for ever", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await runInDurableObject(agentStub(t.tenantId, agent.name), (_instance, state) => {
      state.storage.sql.exec("DELETE FROM sessions");
    });
    for (const id of ["p1", "p2"]) {
      client.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [] } });
      expect((await client.next(isResponseTo(id))).error.message).toMatch(/does not hold this session/);
    }
    expect((await snapshotOf(t.tenantId, sessionId))?.turn).toEqual({ state: "idle" });
  });

  it("an answer whose hand-off fails is not announced as resolved: the request is pending again, and the next answer is delivered and announced", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    alice.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    const agentReqId = agent.askPermission(sessionId, { toolCallId: "t1", kind: "execute", rawInput: { command: "make" } });
    const first = await alice.next(isMethod("session/request_permission"));
    await bob.next(isMethod("session/request_permission"));
    // The answer goes on the edge link while one is open (decision 0034): closed, it goes through the AgentObject, whose hand-off fails.
    expect(await closeEdgeLinks(t.tenantId, sessionId)).toBeGreaterThan(0);
    const repair = await breakHandOff(t.tenantId, agent.name, "response");
    alice.respond(first.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await bob.next(isMethod("$/cancel_request"));
    // Asked again, because the agent never got the answer; nobody was told it was resolved.
    const again = await bob.next(isMethod("session/request_permission"));
    await alice.next(isMethod("session/request_permission"));
    expect(bob.unclaimed().filter((m) => m.method === "_acp_gateway/permission_resolved")).toEqual([]);
    expect(alice.unclaimed().filter((m) => m.method === "_acp_gateway/permission_resolved")).toEqual([]);
    expect((await snapshotOf(t.tenantId, sessionId))?.pendingPermissions).toHaveLength(1);
    await repair();
    bob.respond(again.id, { outcome: { outcome: "selected", optionId: "reject" } });
    expect((await agent.peer.next(isResponseTo(agentReqId))).result.outcome.optionId).toBe("reject");
    const resolved = await alice.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params).toMatchObject({ outcome: { outcome: "selected", optionId: "reject" }, decidedBy: { user: "bob" } });
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
  });
});
