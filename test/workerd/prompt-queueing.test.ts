// Prompt queueing (decision 0067): to an agent whose initialize advertises it where claude-agent-acp
// does (`agentCapabilities._meta.claudeCode.promptQueueing: true`), a prompt while a turn runs is
// relayed at once, as sent, and joins the turn; the turn ends when the last prompt in flight is
// answered. The hand-written agent speaks the wire as claude-agent-acp does: it takes the second
// prompt while the first runs, answers the first `end_turn` when it hands over, and answers every
// prompt `cancelled` after session/cancel. Every other agent is refused as before.

import { describe, expect, it } from "vitest";
import {
  type Peer,
  addKey,
  api,
  attachClient,
  barrier,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
} from "./helpers";

type Json = Record<string, any>;

const QUEUES = { _meta: { claudeCode: { promptQueueing: true } } };
const prompt = (sessionId: string, text: string) => ({ sessionId, prompt: [{ type: "text", text }] });
const call = { toolCallId: "t1", title: "Run make deploy", kind: "execute", rawInput: { command: "make deploy" } };

/** The echo of a prompt someone else sent, as a client sees it (the gateway's synthesized user_message_chunk). */
const echoOf = (text: string) => (m: Json) =>
  m.method === "session/update" && m.params?.update?.sessionUpdate === "user_message_chunk" && m.params.update.content?.text === text;

/** The session's turn and the approvals waiting, as the sessions index lists them (published after each change). */
async function listed(key: string, sessionId: string): Promise<unknown> {
  const page = (await (await api("/v1/sessions", key)).json()) as { items: { id: string; state: unknown }[] };
  return page.items.find((s) => s.id === sessionId)?.state;
}

async function turnOf(key: string, sessionId: string): Promise<string> {
  return ((await (await api(`/v1/sessions/${sessionId}`, key)).json()) as { turn: { state: string } }).turn.state;
}

/** Whether the agent's socket carried an answer to its request `id` (after a barrier: absence is proven). */
const answered = (agent: { peer: Peer }, id: unknown) =>
  agent.peer.raw.map((text) => JSON.parse(text) as Json).some((m) => m.id === id && !("method" in m));

describe("prompt queueing, for an agent that advertises it", () => {
  it("a teammate's prompt while the turn runs reaches the agent at once, shown with its author; the turn ends with the last answer", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "queues", QUEUES);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    alice.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt(sessionId, "fix the build") });
    const first = await agent.peer.next(isMethod("session/prompt"));
    const asked = agent.askPermission(sessionId, call);
    await alice.next(isMethod("session/request_permission"));

    bob.send({ jsonrpc: "2.0", id: "b", method: "session/prompt", params: prompt(sessionId, "and run the tests") });
    const second = await agent.peer.next(isMethod("session/prompt"));
    // Relayed as sent, under the gateway's own id.
    expect(second.params).toEqual(prompt(sessionId, "and run the tests"));
    expect(second.id).not.toBe(first.id);
    // Alice's console shows Bob's prompt, and who sent it.
    const echo = await alice.next(echoOf("and run the tests"));
    expect(echo.params._meta.acpGateway).toMatchObject({ synthesized: true, user: "bob" });

    // claude-agent-acp answers the running prompt `end_turn` when it takes up the queued one: the turn goes on.
    agent.peer.respond(first.id, { stopReason: "end_turn" });
    expect((await alice.next(isResponseTo(1))).result).toEqual({ stopReason: "end_turn" });
    await barrier(alice, agent, sessionId);
    expect(answered(agent, asked)).toBe(false); // its permission request is still the people's
    expect(await turnOf(t.clientKey, sessionId)).toBe("running");
    await expect.poll(() => listed(t.clientKey, sessionId), { timeout: 10_000, interval: 20 }).toEqual({ turn: "running", waiting: 1 });

    // The last answer ends the turn: the request still pending is answered `cancelled` (TC-12).
    agent.peer.respond(second.id, { stopReason: "end_turn" });
    expect((await bob.next(isResponseTo("b"))).result).toEqual({ stopReason: "end_turn" });
    expect((await agent.peer.next(isResponseTo(asked))).result).toEqual({ outcome: { outcome: "cancelled" } });
    expect(await turnOf(t.clientKey, sessionId)).toBe("idle");
    await expect.poll(() => listed(t.clientKey, sessionId), { timeout: 10_000, interval: 20 }).toEqual({ turn: "idle", waiting: 0 });
    // Both prompts are in the session's history, each with its author.
    const later = await attachClient(t, agent, sessionId);
    expect((await later.next(echoOf("fix the build"))).params._meta.acpGateway.user).toBe("alice");
    expect((await later.next(echoOf("and run the tests"))).params._meta.acpGateway.user).toBe("bob");
  });

  it("session/cancel cancels the whole turn: one cancel to the agent, every prompt answered `cancelled`; a prompt meanwhile is refused", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "queues", QUEUES);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    alice.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt(sessionId, "one") });
    const first = await agent.peer.next(isMethod("session/prompt"));
    alice.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: prompt(sessionId, "two") });
    const second = await agent.peer.next(isMethod("session/prompt"));
    const asked = agent.askPermission(sessionId, call);
    await alice.next(isMethod("session/request_permission"));

    alice.notify("session/cancel", { sessionId });
    await agent.peer.next(isMethod("session/cancel"));
    expect((await agent.peer.next(isResponseTo(asked))).result).toEqual({ outcome: { outcome: "cancelled" } });
    // The turn is being cancelled: a prompt now starts nothing (it would be cancelled with the rest).
    const meanwhile = await alice.request("session/prompt", prompt(sessionId, "three"), 3);
    expect(meanwhile.error).toMatchObject({ code: -32600, data: { reason: "turn_in_progress" } });
    expect(meanwhile.error.message).toMatch(/being cancelled/);

    // As claude-agent-acp does: the queued prompt is answered `cancelled`, then the running one.
    agent.peer.respond(second.id, { stopReason: "cancelled" });
    expect((await alice.next(isResponseTo(2))).result).toEqual({ stopReason: "cancelled" });
    expect(await turnOf(t.clientKey, sessionId)).toBe("cancelling");
    agent.peer.respond(first.id, { stopReason: "cancelled" });
    expect((await alice.next(isResponseTo(1))).result).toEqual({ stopReason: "cancelled" });
    expect(await turnOf(t.clientKey, sessionId)).toBe("idle");
    expect(agent.peer.raw.filter((text) => (JSON.parse(text) as Json).method === "session/cancel")).toHaveLength(1);
    // The next prompt starts a turn of its own.
    alice.send({ jsonrpc: "2.0", id: 4, method: "session/prompt", params: prompt(sessionId, "four") });
    expect((await agent.peer.next(isMethod("session/prompt"))).params).toEqual(prompt(sessionId, "four"));
  });

  it("at most five prompts in flight: the sixth is refused prompt_queue_full naming the bound, and never reaches the agent", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "queues", QUEUES);
    const { client, sessionId } = await clientWithSession(t, agent);
    for (let id = 1; id <= 5; id++) {
      client.send({ jsonrpc: "2.0", id, method: "session/prompt", params: prompt(sessionId, `p${id}`) });
      await agent.peer.next((m) => m.method === "session/prompt" && m.params.prompt[0].text === `p${id}`);
    }
    const sixth = await client.request("session/prompt", prompt(sessionId, "p6"), 6);
    expect(sixth.error).toEqual({
      code: -32600,
      message: `Session ${sessionId} has 5 prompts in flight, the most the gateway lets one session have (5); wait for one to be answered, or send session/cancel.`,
      data: { reason: "prompt_queue_full", limit: 5, inFlight: 5 },
    });
    await barrier(client, agent, sessionId);
    expect(agent.peer.raw.some((text) => text.includes('"p6"'))).toBe(false);
  });

  it("under four eyes, whoever prompted into the turn may not approve its held operation; an approver who did not prompt may", async () => {
    const t = await seedTenant({ fourEyes: { operations: [{ program: "rm" }] } });
    const [ada, bea, cal] = await Promise.all(
      ["ada", "bea", "cal"].map((user) => addKey(t.tenantId, "client", user, null, { role: "approver", user })),
    );
    const agent = await dialInAgent(t, "queues", QUEUES);
    const { client: first, sessionId } = await clientWithSession(t, agent, ada);
    const joiner = await attachClient(t, agent, sessionId, bea);
    const other = await attachClient(t, agent, sessionId, cal);
    first.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt(sessionId, "clean up") });
    await agent.peer.next(isMethod("session/prompt"));
    joiner.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt(sessionId, "the build dir too") });
    await agent.peer.next(isMethod("session/prompt"));
    const asked = agent.askPermission(sessionId, { ...call, rawInput: { command: "rm -rf build" } });
    const theirs = await joiner.next(isMethod("session/request_permission"));
    expect(theirs.params._meta.acpGateway.answerable).toEqual({
      optionIds: ["reject"],
      reason: expect.stringMatching(/you prompted this turn/),
    });
    joiner.respond(theirs.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await joiner.next((m) => m.id === null && m.error !== undefined)).error.code).toBe(-32003);
    await barrier(joiner, agent, sessionId);
    expect(answered(agent, asked)).toBe(false);
    const cals = await other.next(isMethod("session/request_permission"));
    other.respond(cals.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(asked))).result).toEqual({ outcome: { outcome: "selected", optionId: "allow" } });
  });

  it("after the agent that advertised it leaves, the session refuses a prompt while a turn runs, whatever the next connection says", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "queues", QUEUES);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt(sessionId, "one") });
    await agent.peer.next(isMethod("session/prompt"));
    agent.peer.close();
    expect((await client.next(isResponseTo(1))).error.data).toMatchObject({ reason: "agent_disconnected" });
    // The next connection does not advertise it: the session no longer relays a prompt while a turn runs.
    const next = await dialInAgent(t, "queues");
    client.send({ jsonrpc: "2.0", id: 2, method: "session/prompt", params: prompt(sessionId, "two") });
    const running = await next.peer.next(isMethod("session/prompt"));
    const refused = await client.request("session/prompt", prompt(sessionId, "three"), 3);
    expect(refused.error).toMatchObject({ code: -32600, data: { reason: "turn_in_progress" } });
    expect(refused.error.message).toMatch(/Prompts are not queued/);
    next.peer.respond(running.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo(2))).result).toEqual({ stopReason: "end_turn" });
  });
});

describe("prompt queueing, for an agent that does not advertise it", () => {
  // Closed world: only `true` where claude-agent-acp puts it counts; anything else is "no".
  it.each([
    ["no advertisement", {}],
    ["a value that is not true", { _meta: { claudeCode: { promptQueueing: "true" } } }],
    ["another place", { _meta: { promptQueueing: true, other: { promptQueueing: true } } }],
  ])("%s: a prompt while the turn runs is refused turn_in_progress, as before, and the capability is not served", async (_, caps) => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "plain", caps);
    const { client, sessionId } = await clientWithSession(t, agent);
    const other = await connect("/acp?agent=plain", t.clientKey2);
    const init = await other.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(JSON.stringify(init.result.agentCapabilities)).not.toContain("promptQueueing");
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: prompt(sessionId, "one") });
    const first = await agent.peer.next(isMethod("session/prompt"));
    const second = await client.request("session/prompt", prompt(sessionId, "two"), 2);
    expect(second.error).toEqual({
      code: -32600,
      message: `A turn is already running in session ${sessionId} (started by alice); wait for it to end or send session/cancel. Prompts are not queued.`,
      data: { reason: "turn_in_progress" },
    });
    await barrier(client, agent, sessionId);
    expect(agent.peer.raw.some((text) => text.includes('"two"'))).toBe(false);
    agent.peer.respond(first.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo(1))).result).toEqual({ stopReason: "end_turn" });
  });
});
