// What the AgentObject accepted for a session and could not hand on (its call to the session
// failed) survives a restart of the object: nothing is lost, nothing arrives twice, and the prompt's
// answer still ends the turn. The failed call is the one stand-in: the object's lookup of the
// session's stub is replaced, on that instance only, by one whose calls fail; an eviction restores it.

import { env, evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type AgentObject, agentTesting } from "../../durable-objects/agent/agent-object";
import type { FromAgent } from "../../durable-objects/session/contract";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn, type Peer, type ScriptedAgent } from "./helpers";
import { type SessionStub, objects } from "../../durable-objects/objects";

const sessionStub = (tenantId: string, sessionId: string) => objects.session(env, tenantId, sessionId);
const agentStub = (tenantId: string, name: string) => objects.agent(env, tenantId, name);

/** Every call from this AgentObject instance to a session fails from now on, as a lost RPC does. */
function failSessionCalls(instance: AgentObject): void {
  // SAFETY: the AgentObject uses nothing of the stub here but fromAgentBatch (an eviction restores the real one).
  const failing = { fromAgentBatch: () => Promise.reject(new Error("injected: the call to the session failed")) } as unknown as SessionStub;
  agentTesting(instance).session = () => failing;
}

/** Once the agent has the AgentObject's own error answer to this frame, every frame it sent before was accepted. */
async function acceptedSoFar(agent: ScriptedAgent): Promise<void> {
  const id = `barrier-${crypto.randomUUID()}`;
  agent.peer.send({ jsonrpc: "2.0", id, method: "_test/no_session" });
  await agent.peer.next(isResponseTo(id));
}

function chunk(sessionId: string, text: string) {
  return { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } };
}

async function chunksSeen(client: Peer, n: number): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < n; i++) {
    const m = await client.next((m) => m.params?.update?.sessionUpdate === "agent_message_chunk");
    seen.push(m.params.update.content.text);
  }
  return seen;
}

describe("reliability: the AgentObject's queue to a session", () => {
  it("survives a restart after a failed call: frames and the prompt's answer arrive once, in order, and the turn ends", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));

    // The session does not take what the agent sends now: it waits in the AgentObject (in SQLite).
    await runInDurableObject(agentStub(t.tenantId, agent.name), failSessionCalls);
    for (const text of ["one", "two", "three"]) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    await acceptedSoFar(agent);

    // The object restarts before any retry succeeded: its memory (the queue, the broken lookup) is gone.
    await evictDurableObject(agentStub(t.tenantId, agent.name));
    expect(await runDurableObjectAlarm(agentStub(t.tenantId, agent.name))).toBe(true);

    expect(await chunksSeen(client, 3)).toEqual(["one", "two", "three"]);
    expect((await client.next(isResponseTo("turn"))).result.stopReason).toBe("end_turn");
    const snapshot = await sessionStub(t.tenantId, sessionId).snapshot();
    expect(snapshot?.turn).toEqual({ state: "idle" });

    // The turn is really over: a new prompt is accepted and reaches the agent.
    client.send({ jsonrpc: "2.0", id: "again", method: "session/prompt", params: { sessionId, prompt: [] } });
    const second = await agent.peer.next(isMethod("session/prompt"));
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "four" } });
    agent.peer.respond(second.id, { stopReason: "end_turn" });
    expect(await chunksSeen(client, 1)).toEqual(["four"]);
    expect((await client.next(isResponseTo("again"))).result.stopReason).toBe("end_turn");
    expect(client.unclaimed().filter((m) => m.params?.update?.content?.text)).toEqual([]);
  });

  it("a batch delivered again after a restart (taken, but the restart came before the object saw it taken) is applied once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const before = (await sessionStub(t.tenantId, sessionId).snapshot())?.lastSeq ?? 0;
    // Two messages (distinct messageIds), so log compaction keeps two entries and lastSeq counts them.
    const message = (text: string) => ({ sessionId, update: { ...chunk(sessionId, text).update, messageId: `m-${text}` } });
    const batch: FromAgent[] = [
      {
        kind: "frame",
        epoch: 1,
        text: JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: message("a") }),
        seq: 1_000_001,
      },
      {
        kind: "frame",
        epoch: 1,
        text: JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: message("b") }),
        seq: 1_000_002,
      },
    ];
    await sessionStub(t.tenantId, sessionId).fromAgentBatch(batch);
    await evictDurableObject(sessionStub(t.tenantId, sessionId));
    await sessionStub(t.tenantId, sessionId).fromAgentBatch(batch);
    await sessionStub(t.tenantId, sessionId).fromAgentBatch([batch[1] as FromAgent]);
    expect(await chunksSeen(client, 2)).toEqual(["a", "b"]);
    expect((await sessionStub(t.tenantId, sessionId).snapshot())?.lastSeq).toBe(before + 2);
  });

  it("the agent's departure is queued behind what it said before it went, and survives a restart too", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    await runInDurableObject(agentStub(t.tenantId, agent.name), failSessionCalls);
    agent.peer.notify("session/update", chunk(sessionId, "last words"));
    await acceptedSoFar(agent);
    agent.peer.close();
    await agent.peer.closed;
    // The close reached the object once a new connection of the same agent has been accepted.
    const next = await dialInAgent(t, agent.name);
    await evictDurableObject(agentStub(t.tenantId, agent.name));
    expect(await runDurableObjectAlarm(agentStub(t.tenantId, agent.name))).toBe(true);
    expect(await chunksSeen(client, 1)).toEqual(["last words"]);
    const failed = await client.next(isResponseTo("turn"));
    expect(failed.error.message).toMatch(/disconnected/);
    next.peer.close();
  });
});
