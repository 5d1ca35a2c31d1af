// A session belongs to the agent that created it: an agent's session/new answer naming a session id
// the tenant already holds is refused, and the existing session (agent, cwd, meta, history, index row)
// is unchanged; its next prompt still goes to its own agent.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  type ScriptedAgent,
  type SeededTenant,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
} from "./helpers";
import { objects } from "../../durable-objects/objects";

const snapshotOf = (t: SeededTenant, sessionId: string) => objects.session(env, t.tenantId, sessionId).snapshot();

const indexRow = (t: SeededTenant, sessionId: string) =>
  env.DB.prepare("SELECT agent, cwd, created_by FROM sessions WHERE tenant_id = ? AND session_id = ?").bind(t.tenantId, sessionId).first();

/** A client of `agent` asks for a new session in /tmp/evil; the agent answers with `sessionId`. */
async function newSessionAnsweredWith(t: SeededTenant, agent: ScriptedAgent, sessionId: string) {
  const mallory = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
  await mallory.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const created = mallory.request("session/new", { cwd: "/tmp/evil", mcpServers: [] });
  await agent.acceptNewSession(sessionId);
  return { mallory, answer: await created };
}

async function sessionWithHistory() {
  const t = await seedTenant();
  const owner = await dialInAgent(t, "owner");
  const { client: alice, sessionId } = await clientWithSession(t, owner);
  owner.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "secret history" } });
  await alice.next(isMethod("session/update"));
  return { t, owner, alice, sessionId, before: await snapshotOf(t, sessionId), indexed: await indexRow(t, sessionId) };
}

describe("a session belongs to the agent that created it", () => {
  it("an agent that answers session/new with another agent's session id is refused and takes nothing over", async () => {
    const { t, owner, alice, sessionId, before, indexed } = await sessionWithHistory();
    const intruder = await dialInAgent(t, "intruder");
    const { answer } = await newSessionAnsweredWith(t, intruder, sessionId);
    expect(answer.error).toMatchObject({ code: -32603, data: { reason: "session_id_taken", sessionId } });
    expect(answer.error.message).toMatch(/belongs to agent "owner"/);
    expect(await snapshotOf(t, sessionId)).toEqual(before);
    expect(await indexRow(t, sessionId)).toEqual(indexed);
    // The intruder cannot write into it either.
    intruder.peer.send({ jsonrpc: "2.0", id: "w", method: "session/request_permission", params: { sessionId, toolCall: {}, options: [] } });
    expect((await intruder.peer.next(isResponseTo("w"))).error.code).toBe(-32002);
    // The next prompt, and its secrets, go to the owner.
    alice.send({
      jsonrpc: "2.0",
      id: "p",
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "the key is 42" }] },
    });
    const prompt = await owner.peer.next(isMethod("session/prompt"));
    expect(prompt.params.prompt[0].text).toBe("the key is 42");
    owner.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await alice.next(isResponseTo("p"))).result.stopReason).toBe("end_turn");
    expect(intruder.peer.unclaimed().filter((m) => m.method === "session/prompt")).toEqual([]);
  });

  it("the same agent answering session/new with an id it already created cannot re-initialise that session", async () => {
    const { t, owner, sessionId, before, indexed } = await sessionWithHistory();
    const { answer } = await newSessionAnsweredWith(t, owner, sessionId);
    expect(answer.error).toMatchObject({ data: { reason: "session_id_taken" } });
    expect(answer.error.message).toMatch(/session\/new must create a new session id|already exists/);
    expect(await snapshotOf(t, sessionId)).toEqual(before);
    expect((await snapshotOf(t, sessionId))?.cwd).toBe("/projects/demo");
    expect(await indexRow(t, sessionId)).toEqual(indexed);
  });

  it("the session object refuses the takeover by itself, even when the index has lost the session's row", async () => {
    const { t, sessionId, before } = await sessionWithHistory();
    await env.DB.prepare("DELETE FROM sessions WHERE tenant_id = ? AND session_id = ?").bind(t.tenantId, sessionId).run();
    const intruder = await dialInAgent(t, "intruder");
    const { answer } = await newSessionAnsweredWith(t, intruder, sessionId);
    expect(answer.error.message).toMatch(/belongs to agent "owner"/);
    expect(await snapshotOf(t, sessionId)).toEqual(before);
    expect(await indexRow(t, sessionId)).toBeNull();
  });
});
