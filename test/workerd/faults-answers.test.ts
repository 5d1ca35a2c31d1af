// Faults on the answering side: two clients answering one request in the same instant, a client
// that drops with its answer in flight, and the deadline firing while no client is attached.

import { afterAll, describe, expect, it } from "vitest";
import { attachClient, barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { faultCounters, injected, printCounters, sessionStub } from "./fuzz-faults";

afterAll(() => printCounters("faults-answers"));

async function turnWithTwoClients(settings: Record<string, unknown> = {}) {
  const t = await seedTenant(settings);
  const agent = await dialInAgent(t);
  const { client: alice, sessionId } = await clientWithSession(t, agent);
  const bob = await attachClient(t, agent, sessionId);
  alice.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
  const prompt = await agent.peer.next(isMethod("session/prompt"));
  faultCounters.sequences++;
  return { t, agent, alice, bob, sessionId, prompt };
}

describe("faults: answers", () => {
  it("two clients answer the same request in the same instant: exactly one wins, both learn the outcome", async () => {
    for (let round = 0; round < 3; round++) {
      const { agent, alice, bob, sessionId } = await turnWithTwoClients();
      const agentReqId = agent.askPermission(sessionId, { toolCallId: "t1", kind: "execute" });
      const [a, b] = await Promise.all([
        alice.next(isMethod("session/request_permission")),
        bob.next(isMethod("session/request_permission")),
      ]);
      alice.respond(a.id, { outcome: { outcome: "selected", optionId: "allow" } });
      bob.respond(b.id, { outcome: { outcome: "selected", optionId: "reject" } });
      injected("same_instant_answers");
      const answer = await agent.peer.next(isResponseTo(agentReqId));
      const [toAlice, toBob] = await Promise.all([
        alice.next(isMethod("_acp_gateway/permission_resolved")),
        bob.next(isMethod("_acp_gateway/permission_resolved")),
      ]);
      expect(toAlice.params.outcome).toEqual(answer.result.outcome);
      expect(toBob.params.outcome).toEqual(answer.result.outcome);
      await barrier(alice, agent, sessionId);
      await barrier(bob, agent, sessionId);
      expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
      faultCounters.requestsAnswered++;
      faultCounters.invariantsChecked += 3;
    }
  }, 30_000);

  it("a client that drops with its answer in flight: the answer counts exactly once, or the request stays pending for the others", async () => {
    for (let round = 0; round < 3; round++) {
      const { t, agent, alice, bob, sessionId } = await turnWithTwoClients();
      const agentReqId = agent.askPermission(sessionId, { toolCallId: "t1", kind: "edit" });
      const a = await alice.next(isMethod("session/request_permission"));
      const b = await bob.next(isMethod("session/request_permission"));
      alice.respond(a.id, { outcome: { outcome: "selected", optionId: "allow" } });
      alice.close();
      injected("client_drop_answer_in_flight");
      await alice.closed;
      // Either the answer arrived (bob's copy is withdrawn) or it did not (bob can still answer).
      await barrier(bob, agent, sessionId);
      const snapshot = await sessionStub(t.tenantId, sessionId).snapshot();
      if (snapshot?.pendingPermissions.length === 0) {
        expect((await agent.peer.next(isResponseTo(agentReqId))).result.outcome.optionId).toBe("allow");
        await bob.next((m) => m.method === "$/cancel_request" && m.params.requestId === b.id);
      } else {
        bob.respond(b.id, { outcome: { outcome: "selected", optionId: "reject" } });
        expect((await agent.peer.next(isResponseTo(agentReqId))).result.outcome.optionId).toBe("reject");
      }
      await barrier(bob, agent, sessionId);
      expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
      faultCounters.requestsAnswered++;
      faultCounters.invariantsChecked += 2;
    }
  }, 30_000);

  it("the deadline fires with no client attached: the agent hears cancelled, the turn ends, a client attaching later is not asked", async () => {
    const { t, agent, alice, bob, sessionId, prompt } = await turnWithTwoClients({ permissionDeadlineMs: 300 });
    alice.close();
    bob.close();
    await Promise.all([alice.closed, bob.closed]);
    const agentReqId = agent.askPermission(sessionId, { toolCallId: "t1", kind: "execute" });
    injected("deadline_unattended");
    expect((await agent.peer.next(isResponseTo(agentReqId), 10_000)).result).toEqual({ outcome: { outcome: "cancelled" } });
    await agent.peer.next(isMethod("session/cancel"));
    agent.peer.respond(prompt.id, { stopReason: "cancelled" });
    const later = await attachClient(t, agent, sessionId, t.clientKey);
    await barrier(later, agent, sessionId);
    expect(later.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
    const snapshot = await sessionStub(t.tenantId, sessionId).snapshot();
    expect(snapshot).toMatchObject({ turn: { state: "idle" }, pendingPermissions: [] });
    faultCounters.requestsAnswered++;
    faultCounters.invariantsChecked += 3;
  });
});
