// Every hand-off that can fail leaves the session consistent: a prompt that cannot reach the agent gets
// an error and the turn returns to idle; an answer that cannot reach the agent is not announced as
// resolved. The failing hand-off is produced by the session's call to its AgentObject's toAgent
// failing (a failure no real peer produces on demand), or by the AgentObject not holding the session.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ToAgent } from "../../durable-objects/agent/contract";
import type { SessionRef } from "../../durable-objects/session/contract";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { attachClient, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { objects } from "../../durable-objects/objects";
import { closeEdgeLinks } from "./fuzz-faults";

const agentStub = (tenantId: string, name: string) => objects.agent(env, tenantId, name);
const sessionStub = (tenantId: string, sessionId: string) => objects.session(env, tenantId, sessionId);
const snapshotOf = (tenantId: string, sessionId: string) => objects.session(env, tenantId, sessionId).snapshot();

/**
 * Makes the session's hand-off to its AgentObject fail for frames of `type` until the returned
 * function is called, through the session's test seam: such a frame is refused on the agent link (as
 * a closing link refuses it), so it goes by RPC, where its call to the AgentObject's `toAgent` fails.
 */
async function breakHandOff(tenantId: string, sessionId: string, type: string): Promise<() => Promise<void>> {
  const failing = (frame: ToAgent) => frame.type === type;
  await runInDurableObject(sessionStub(tenantId, sessionId), (instance: SessionObject) => {
    const seam = sessionTesting(instance);
    seam.onLinkSend = (frame, send) => (failing(frame) ? false : send());
    seam.agent = (real) =>
      new Proxy(real, {
        get(target, prop) {
          if (prop === "toAgent")
            return (agent: string, ref: SessionRef, frame: ToAgent, key?: number) =>
              failing(frame) ? Promise.reject(new Error("hand-off failed (test)")) : target.toAgent(agent, ref, frame, key);
          const value: unknown = Reflect.get(target, prop);
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
  });
  return () =>
    runInDurableObject(sessionStub(tenantId, sessionId), (instance: SessionObject) => {
      const seam = sessionTesting(instance);
      seam.onLinkSend = undefined;
      seam.agent = undefined;
    });
}

describe("hand-offs that fail leave the session consistent", () => {
  it("a prompt whose hand-off to the agent fails gets an error, the turn returns to idle, and the next prompt works", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const repair = await breakHandOff(t.tenantId, sessionId, "request");
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
    const repair = await breakHandOff(t.tenantId, sessionId, "response");
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
