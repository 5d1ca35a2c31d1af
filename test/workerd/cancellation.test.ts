import { describe, expect, it } from "vitest";
import {
  type ScriptedAgent,
  attachClient,
  barrier,
  clientWithSession,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
} from "./helpers";

type Json = Record<string, any>;

/** The order in which the agent received session/cancel and the answers to `ids`, as its socket delivered them. */
function arrivalOrder(agent: ScriptedAgent, ids: unknown[]): unknown[] {
  return agent.peer.raw
    .map((text) => JSON.parse(text) as Json)
    .filter((m) => m.method === "session/cancel" || (ids.includes(m.id) && !("method" in m)))
    .map((m) => (m.method === "session/cancel" ? m.method : m.id));
}

const call = (id: string) => ({ toolCallId: id, title: `Run ${id}`, kind: "execute", rawInput: { command: `echo ${id}` } });

describe("cancellation", () => {
  it("TC-12: forwards the cancel to the agent first, then answers every pending permission 'cancelled'", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    alice.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    const first = agent.askPermission(sessionId, call("a"));
    const second = agent.askPermission(sessionId, call("b"));
    const aliceCopies = [
      await alice.next(isMethod("session/request_permission")),
      await alice.next(isMethod("session/request_permission")),
    ];
    await bob.next(isMethod("session/request_permission"));
    await bob.next(isMethod("session/request_permission"));

    bob.notify("session/cancel", { sessionId });
    const answers = [await agent.peer.next(isResponseTo(first)), await agent.peer.next(isResponseTo(second))];
    for (const a of answers) expect(a.result).toEqual({ outcome: { outcome: "cancelled" } });
    const cancel = await agent.peer.next(isMethod("session/cancel"));
    expect(cancel.params).toEqual({ sessionId });
    // The order the agent read them in: the cancel, then the answers (qwen ends a turn answered first as `end_turn`).
    expect(arrivalOrder(agent, [first, second])).toEqual(["session/cancel", first, second]);
    // Both clients' copies are withdrawn.
    const withdrawn = [await alice.next(isMethod("$/cancel_request")), await alice.next(isMethod("$/cancel_request"))];
    expect(withdrawn.map((w) => w.params.requestId).sort()).toEqual(aliceCopies.map((c) => c.id).sort());
    await bob.next(isMethod("$/cancel_request"));
    await bob.next(isMethod("$/cancel_request"));

    // Updates after the cancel still reach everyone, and the prompt result goes to the prompter.
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "a", status: "failed" });
    const late = await bob.next((m) => m.method === "session/update" && m.params.update.sessionUpdate === "tool_call_update");
    expect(late.params.update.status).toBe("failed");
    agent.peer.respond(prompt.id, { stopReason: "cancelled" });
    expect((await alice.next(isResponseTo(1))).result).toEqual({ stopReason: "cancelled" });
  });

  it("a permission deadline cancels like a client: session/cancel reaches the agent before the waiting request's `cancelled`", async () => {
    const t = await seedTenant({ permissionDeadlineMs: 300 });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const asked = agent.askPermission(sessionId, call("slow"));
    await client.next(isMethod("session/request_permission"));
    const answer = await agent.peer.next(isResponseTo(asked), 10_000);
    expect(answer.result).toEqual({ outcome: { outcome: "cancelled" } });
    expect(arrivalOrder(agent, [asked])).toEqual(["session/cancel", asked]);
    expect((await client.next(isMethod("_acp_gateway/turn_ended"))).params.reason).toBe("permission_deadline");
  });

  it("a lax agent's end_turn after a cancel still reaches the prompter, and the session takes a new prompt", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "p1", method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    client.notify("session/cancel", { sessionId });
    await agent.peer.next(isMethod("session/cancel"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("p1"))).result).toEqual({ stopReason: "end_turn" });
    client.send({ jsonrpc: "2.0", id: "p2", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
  });

  it("a second cancel, or a cancel when idle, is harmless", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.notify("session/cancel", { sessionId });
    client.notify("session/cancel", { sessionId });
    await agent.peer.next(isMethod("session/cancel"));
    await agent.peer.next(isMethod("session/cancel"));
    client.send({ jsonrpc: "2.0", id: 5, method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo(5))).result.stopReason).toBe("end_turn");
  });

  it("rewrites $/cancel_request from a client to the agent's id space", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: 42, method: "session/set_mode", params: { sessionId, modeId: "plan" } });
    const forwarded = await agent.peer.next(isMethod("session/set_mode"));
    client.notify("$/cancel_request", { requestId: 42 });
    const cancel = await agent.peer.next(isMethod("$/cancel_request"));
    expect(cancel.params.requestId).toBe(forwarded.id);
    agent.peer.send({ jsonrpc: "2.0", id: forwarded.id, error: { code: -32800, message: "Request cancelled" } });
    expect((await client.next(isResponseTo(42))).error.code).toBe(-32800);
  });

  it("rewrites $/cancel_request from the agent into each client's id space and confirms with -32800", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const agentReqId = agent.askPermission(sessionId, call("x"));
    const copy = await client.next(isMethod("session/request_permission"));
    agent.peer.notify("$/cancel_request", { requestId: agentReqId });
    const withdrawn = await client.next(isMethod("$/cancel_request"));
    expect(withdrawn.params.requestId).toBe(copy.id);
    const confirm = await agent.peer.next(isResponseTo(agentReqId));
    expect(confirm.error.code).toBe(-32800);
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
  });
});
