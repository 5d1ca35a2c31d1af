// A tenant that refuses agents deciding approvals themselves (issue 36, decision 0056), in the real
// SessionObject, D1 and Worker, with a scripted agent speaking the wire format: the first tool call the
// agent reports finished that nobody was asked about cancels the turn (session/cancel to the agent
// first, as a client's cancel), every client is told what ran and why, and the session refuses
// prompts until a person who may lift oversight resumes it. `tell` keeps decision 0046's behaviour.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { objects } from "../../durable-objects/objects";
import { restartObject } from "./fuzz-faults";
import {
  addKey,
  api,
  attachClient,
  barrier,
  clientWithSession,
  dialInAgent,
  isMethod,
  isResponseTo,
  type Peer,
  type ScriptedAgent,
  type SeededTenant,
  seedTenant,
  startTurn,
} from "./helpers";

const CWD = "/projects/demo";
const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const editedUnasked = (toolCallId: string) => ({
  sessionUpdate: "tool_call",
  toolCallId,
  title: "Edit",
  kind: "edit",
  status: "completed",
  rawInput: { file_path: `${CWD}/src/main.c`, old_string: "a", new_string: "b" },
  locations: [{ path: `${CWD}/src/main.c` }],
  content: [{ type: "diff", path: `${CWD}/src/main.c`, oldText: "a", newText: "b" }],
});
const run = (toolCallId: string, command: string) => ({ toolCallId, title: "Run", kind: "execute", rawInput: { command } });

async function prompt(client: Peer, sessionId: string, id: string) {
  client.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go on" }] } });
  return client.next(isResponseTo(id));
}

async function resume(sessionId: string, key: string): Promise<Response> {
  return api(`/v1/sessions/${sessionId}/hold`, key, { method: "DELETE" });
}

/** A session in a turn whose agent has a permission request waiting with the client. */
async function turnWithWaitingRequest(t: SeededTenant) {
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  const turn = await startTurn(client, agent, sessionId);
  const waiting = agent.askPermission(sessionId, run("m1", "make deploy"), OPTIONS);
  await client.next(isMethod("session/request_permission"));
  return { agent, client, sessionId, turn, waiting };
}

/** The agent's next frames of this session, in order, until `count` have arrived. */
async function agentFrames(agent: ScriptedAgent, count: number) {
  const frames = [];
  for (let i = 0; i < count; i++)
    frames.push(await agent.peer.next((m) => m.method === "session/cancel" || ("result" in m && !("method" in m))));
  return frames;
}

describe("an agent that runs a tool call unasked, under the default (stop)", () => {
  it("cancels the turn: the agent reads session/cancel before the waiting request's cancelled answer, and every client is told what ran and why", async () => {
    const t = await seedTenant();
    const { agent, client, sessionId, turn, waiting } = await turnWithWaitingRequest(t);
    const other = await attachClient(t, agent, sessionId);
    agent.update(sessionId, editedUnasked("u1"));

    const [cancel, answer] = await agentFrames(agent, 2);
    expect(cancel).toMatchObject({ method: "session/cancel", params: { sessionId } });
    expect(answer).toMatchObject({ id: waiting, result: { outcome: { outcome: "cancelled" } } });
    for (const peer of [client, other]) {
      expect((await peer.next(isMethod("_acp_gateway/ran_unasked"))).params).toMatchObject({ toolCallId: "u1", kind: "edit" });
      const ended = await peer.next(isMethod("_acp_gateway/turn_ended"));
      expect(ended.params).toMatchObject({ sessionId, reason: "ran_unasked" });
      expect(ended.params.message).toMatch(/ran a tool call \(edit: \/projects\/demo\/src\/main\.c\) without asking anyone/);
      const held = await peer.next(isMethod("_acp_gateway/session_held"));
      expect(held.params.hold).toMatchObject({ reason: "ran_unasked", toolCallId: "u1", kind: "edit", changes: [`${CWD}/src/main.c`] });
      expect(held.params.message).toMatch(/DELETE \/v1\/sessions\/.+\/hold/);
    }
    agent.peer.respond(turn.id, { stopReason: "cancelled" });
    expect((await client.next(isResponseTo("turn"))).result.stopReason).toBe("cancelled");
  });

  it("refuses every prompt with session_held, which never reaches the agent, until an approver resumes; a member may not", async () => {
    const t = await seedTenant();
    const member = await addKey(t.tenantId, "client", "mo", null, { role: "member", user: "mo" });
    const { agent, client, sessionId, turn } = await turnWithWaitingRequest(t);
    agent.update(sessionId, editedUnasked("u1"));
    await client.next(isMethod("_acp_gateway/session_held"));
    agent.peer.respond(turn.id, { stopReason: "cancelled" });
    await client.next(isResponseTo("turn"));

    const refused = await prompt(client, sessionId, "p2");
    expect(refused.error).toMatchObject({ code: -32600, data: { reason: "session_held", hold: { toolCallId: "u1" } } });
    expect(refused.error.message).toMatch(/is stopped: the agent ran a tool call \(edit: .*\) without asking anyone/);
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/prompt")).toEqual([]);

    const snapshot = await (await api(`/v1/sessions/${sessionId}`, t.clientKey)).json<Record<string, any>>();
    expect(snapshot.held).toMatchObject({ reason: "ran_unasked", toolCallId: "u1" });
    expect((await resume(sessionId, member)).status).toBe(403);
    expect((await prompt(client, sessionId, "p3")).error?.data?.reason).toBe("session_held");

    const resumed = await resume(sessionId, t.clientKey2);
    expect(resumed.status).toBe(200);
    expect(await resumed.json()).toEqual({ resumed: true });
    const told = await client.next(isMethod("_acp_gateway/session_resumed"));
    expect(told.params).toMatchObject({ sessionId, by: { user: "bob" } });
    expect(await (await resume(sessionId, t.clientKey2)).json()).toEqual({ resumed: false });
    expect((await api(`/v1/sessions/${sessionId}`, t.clientKey).then((r) => r.json<Record<string, any>>())).held).toBeUndefined();

    client.send({ jsonrpc: "2.0", id: "p4", method: "session/prompt", params: { sessionId, prompt: [] } });
    const reached = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(reached.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("p4"))).result.stopReason).toBe("end_turn");
  });

  it("holds a session whose agent reports an unasked run outside any turn, without ending a turn", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    agent.update(sessionId, editedUnasked("u1"));
    await client.next(isMethod("_acp_gateway/session_held"));
    expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/turn_ended")).toEqual([]);
    expect((await prompt(client, sessionId, "p1")).error?.data?.reason).toBe("session_held");
  });

  it("keeps the hold across a restart of the session, and a client attaching later is told it in the history", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    agent.update(sessionId, editedUnasked("u1"));
    await client.next(isMethod("_acp_gateway/session_held"));
    await restartObject(objects.session(env, t.tenantId, sessionId));
    const late = await attachClient(t, agent, sessionId);
    expect((await late.next(isMethod("_acp_gateway/session_held"))).params.hold.toolCallId).toBe("u1");
    expect((await prompt(late, sessionId, "p1")).error?.data?.reason).toBe("session_held");
  });

  it("a read the agent ran unasked stops nothing: the hold names the edit that came after it", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const read = { sessionUpdate: "tool_call", toolCallId: "r1", title: "Read", kind: "read", locations: [{ path: `${CWD}/a` }] };
    agent.update(sessionId, { ...read, status: "completed" });
    agent.update(sessionId, editedUnasked("u1"));
    expect((await client.next(isMethod("_acp_gateway/session_held"))).params.hold.toolCallId).toBe("u1");
  });
});

describe("a tenant that chose tell", () => {
  it("tells every client and lets the turn go on: the next request is asked of people, the next prompt reaches the agent", async () => {
    const t = await seedTenant({ unaskedRuns: "tell" });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const turn = await startTurn(client, agent, sessionId);
    agent.update(sessionId, editedUnasked("u1"));
    await client.next(isMethod("_acp_gateway/ran_unasked"));
    agent.askPermission(sessionId, run("m1", "make deploy"), OPTIONS);
    await client.next(isMethod("session/request_permission"));
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/cancel")).toEqual([]);
    agent.peer.respond(turn.id, { stopReason: "end_turn" });
    await client.next(isResponseTo("turn"));
    client.send({ jsonrpc: "2.0", id: "p2", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/session_held")).toEqual([]);
  });
});

describe("the agent that decides for itself", () => {
  it("is shown so by GET /v1/agents under either setting: its latest unasked run, the session and the kind", async () => {
    for (const unaskedRuns of ["tell", "stop"]) {
      const t = await seedTenant({ unaskedRuns });
      const agent = await dialInAgent(t);
      const { client, sessionId } = await clientWithSession(t, agent);
      const before = await api("/v1/agents", t.clientKey).then((r) => r.json<{ items: Record<string, any>[] }>());
      expect(before.items.find((a) => a.name === agent.name)?.decidesItself).toBeNull();
      agent.update(sessionId, editedUnasked("u1"));
      await client.next(isMethod("_acp_gateway/ran_unasked"));
      await expect
        .poll(async () => (await api("/v1/agents", t.clientKey).then((r) => r.json<{ items: Record<string, any>[] }>())).items)
        .toContainEqual(
          expect.objectContaining({
            name: agent.name,
            decidesItself: expect.objectContaining({ sessionId, toolCallId: "u1", kind: "edit" }),
          }),
        );
    }
  });
});

describe("the setting", () => {
  it("is the tenant admin's to change, to stop or tell only", async () => {
    const t = await seedTenant();
    const set = (value: unknown, key = t.adminKey) => api("/v1/tenant/settings", key, { method: "PATCH", body: { unaskedRuns: value } });
    expect((await (await set("tell")).json<Record<string, any>>()).settings.unaskedRuns).toBe("tell");
    const bad = await set("ask");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/unaskedRuns/);
    expect((await set("stop", t.clientKey)).status).toBe(403);
    const read = await (await api("/v1/tenant/settings", t.adminKey)).json<Record<string, any>>();
    expect(read.settings.unaskedRuns).toBe("tell");
  });
});
