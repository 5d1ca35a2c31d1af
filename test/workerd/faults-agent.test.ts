// Faults: the agent's connection drops in the middle of an update burst, of a permission request and
// of a cancel, then the agent reconnects. Whatever it sent before the drop is kept and delivered;
// nothing it asked stays pending; the turn ends exactly once, saying why; the session goes on.

import { afterAll, describe, expect, it } from "vitest";
import {
  type Peer,
  type ScriptedAgent,
  type SeededTenant,
  barrier,
  clientWithSession,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
} from "./helpers";
import { faultCounters, injected, printCounters, sessionStub } from "./fuzz-faults";

afterAll(() => printCounters("faults-agent"));

async function promptRunning() {
  const t = await seedTenant();
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
  await agent.peer.next(isMethod("session/prompt"));
  faultCounters.sequences++;
  return { t, agent, client, sessionId };
}

/** The drop: the agent's socket closes at once; the turn must end with one answer naming the cause. */
async function dropAndExpectTurnEnded(agent: ScriptedAgent, client: Peer) {
  agent.peer.close();
  injected("agent_drop");
  const failed = await client.next(isResponseTo("turn"));
  expect(failed.error?.code).toBe(-32603);
  expect(failed.error?.message).toMatch(/disconnected/);
  const ended = await client.next(isMethod("_acp_gateway/turn_ended"));
  expect(ended.params.reason).toBe("agent_disconnected");
  faultCounters.requestsAnswered++;
}

/** After the reconnect a whole new turn works: nothing is stuck. */
async function nextTurnWorks(t: SeededTenant, client: Peer, sessionId: string): Promise<ScriptedAgent> {
  const agent = await dialInAgent(t);
  client.send({ jsonrpc: "2.0", id: "again", method: "session/prompt", params: { sessionId, prompt: [] } });
  const prompt = await agent.peer.next(isMethod("session/prompt"));
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "back" } });
  agent.peer.respond(prompt.id, { stopReason: "end_turn" });
  expect((await client.next((m) => m.params?.update?.content?.text === "back")).params.sessionId).toBe(sessionId);
  expect((await client.next(isResponseTo("again"))).result).toEqual({ stopReason: "end_turn" });
  const snapshot = await sessionStub(t.tenantId, sessionId).snapshot();
  expect(snapshot).toMatchObject({ turn: { state: "idle" }, pendingPermissions: [] });
  faultCounters.invariantsChecked += 6;
  faultCounters.requestsAnswered++;
  return agent;
}

describe("faults: the agent drops and reconnects", () => {
  it("mid-update: every update sent before the drop is logged and delivered, in order, once", async () => {
    const { t, agent, client, sessionId } = await promptRunning();
    for (let i = 0; i < 40; i++) {
      agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress", rawOutput: i });
    }
    await dropAndExpectTurnEnded(agent, client);
    const outputs: unknown[] = [];
    for (let i = 0; i < 40; i++) outputs.push((await client.next(isMethod("session/update"))).params.update.rawOutput);
    expect(outputs).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const snapshot = await sessionStub(t.tenantId, sessionId).snapshot();
    expect(snapshot?.toolCalls).toEqual([{ toolCallId: "t1", status: "in_progress", rawOutput: 39 }]);
    await nextTurnWorks(t, client, sessionId);
  });

  it("mid-permission: a request asked just before the drop is withdrawn from clients and answered to nobody", async () => {
    const { t, agent, client, sessionId } = await promptRunning();
    agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    await dropAndExpectTurnEnded(agent, client);
    const snapshot = await sessionStub(t.tenantId, sessionId).snapshot();
    expect(snapshot?.pendingPermissions).toEqual([]);
    // Any copy the client got before the drop is withdrawn; its answer now reaches no agent.
    const copies = client.unclaimed().filter((m) => m.method === "session/request_permission");
    for (const copy of copies) {
      await client.next((m) => m.method === "$/cancel_request" && m.params.requestId === copy.id);
      client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    }
    const next = await nextTurnWorks(t, client, sessionId);
    await barrier(client, next, sessionId);
    expect(next.peer.unclaimed()).toEqual([]);
  });

  it("mid-cancel: session/cancel crossing the drop ends the turn once and withdraws the pending request", async () => {
    const { t, agent, client, sessionId } = await promptRunning();
    agent.askPermission(sessionId, { toolCallId: "t1", kind: "edit" });
    const copy = await client.next(isMethod("session/request_permission"));
    client.notify("session/cancel", { sessionId });
    agent.peer.close();
    injected("agent_drop");
    // Exactly one answer to the prompt, whichever came first: the cancel's turn end or the drop.
    const answer = await client.next(isResponseTo("turn"));
    expect(answer.error?.code ?? answer.result?.stopReason).toBeDefined();
    await client.next((m) => m.method === "$/cancel_request" && m.params.requestId === copy.id);
    await nextTurnWorks(t, client, sessionId);
    expect(client.unclaimed().filter((m) => m.id === "turn")).toEqual([]);
  });
});
