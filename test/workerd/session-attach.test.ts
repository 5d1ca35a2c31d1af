// Multi-client attach as the draft RFD (agent-client-protocol PR #533) says, beside session/load
// (decision 0054), in the real Worker, SessionObject and D1, with raw peers: the capability, the
// three history policies, first writer wins with the PR's permission_resolved, detach and
// client_disconnected, and the hostile cases (another tenant's session, a role asked above the key's,
// an observer answering, detach then answer, attach twice, unknown params).

import { describe, expect, it } from "vitest";
import {
  type Peer,
  type ScriptedAgent,
  type SeededTenant,
  addKey,
  barrier,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
} from "./helpers";

type Json = Record<string, any>;

async function initialized(agent: ScriptedAgent, key: string): Promise<{ peer: Peer; init: Json }> {
  const peer = await connect(`/acp?agent=${agent.name}`, key);
  const init = await peer.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  return { peer, init };
}

async function attached(agent: ScriptedAgent, key: string, params: Json): Promise<{ peer: Peer; answer: Json }> {
  const { peer } = await initialized(agent, key);
  const answer = await peer.request("session/attach", params, "attach");
  return { peer, answer };
}

const isUpdate = (kind: string) => (m: Json) => m.method === "session/update" && m.params?.update?.sessionUpdate === kind;

/** A session with a running turn and one permission request waiting on people (toolCallId "t1"). */
async function sessionWaiting(t: SeededTenant, agent: ScriptedAgent) {
  const { client: alice, sessionId } = await clientWithSession(t, agent);
  await startTurn(alice, agent, sessionId);
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "before" } });
  const agentReq = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute", rawInput: { command: "make" } });
  const aliceCopy = await alice.next(isMethod("session/request_permission"));
  return { alice, sessionId, agentReq, aliceCopy };
}

describe("session/attach: the capability", () => {
  it("advertises attach under sessionCapabilities._meta['acp/attach'] with only the roles the key allows", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const observerKey = await addKey(t.tenantId, "client", "olga", null, { role: "observer", user: "olga" });
    const member = await initialized(agent, t.clientKey);
    const observer = await initialized(agent, observerKey);
    expect(member.init.result.agentCapabilities.sessionCapabilities._meta["acp/attach"]).toEqual({
      roles: ["controller", "observer"],
      historyPolicies: ["full", "pending_only", "none", "after_message"],
    });
    expect(observer.init.result.agentCapabilities.sessionCapabilities._meta["acp/attach"].roles).toEqual(["observer"]);
    expect(member.init.result.agentCapabilities.sessionCapabilities.delete).toEqual({});
  });
});

describe("session/attach: history policies", () => {
  it("full: replays history, answers with its clientId and the clients attached, then re-issues the waiting request, then live", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await sessionWaiting(t, agent);
    const { peer: bob, answer } = await attached(agent, t.clientKey2, {
      sessionId,
      historyPolicy: "full",
      clientId: "bob-phone",
      clientInfo: { name: "dashboard", version: "1.0.0" },
    });
    expect(answer.result).toMatchObject({
      sessionId,
      clientId: "bob-phone",
      role: "controller",
      historyPolicy: "full",
      history: [{ type: "permission_request", toolCallId: "t1", status: "pending" }],
      connectedClients: [{ name: "alice", user: "alice" }],
      _meta: { "acp/turnState": { state: "requires_action", promptRequestId: null } },
    });
    const before = bob.unclaimed();
    const answerAt = bob.raw.findIndex((r) => JSON.parse(r).id === "attach");
    const chunkAt = bob.raw.findIndex((r) => JSON.parse(r).params?.update?.sessionUpdate === "agent_message_chunk");
    expect(chunkAt).toBeGreaterThanOrEqual(0);
    expect(chunkAt).toBeLessThan(answerAt);
    const copy = await bob.next(isMethod("session/request_permission"));
    expect(bob.raw.findIndex((r) => JSON.parse(r).id === copy.id && JSON.parse(r).method)).toBeGreaterThan(answerAt);
    expect(before.some((m) => m.method === "session/update")).toBe(true);
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "live" } });
    const live = await bob.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "live");
    expect(live.params.sessionId).toBe(sessionId);
  });

  it("full lists each prompt the replay carried as the PR's prompt item, then the waiting request; after_message those after it; pending_only neither prompt", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const sentFrom = Date.now();
    const turn = async (id: string, prompt: Json[], messageId: string) => {
      alice.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt } });
      const reached = await agent.peer.next(isMethod("session/prompt"));
      agent.update(sessionId, { sessionUpdate: "agent_message_chunk", messageId, content: { type: "text", text: "ok" } });
      agent.peer.respond(reached.id, { stopReason: "end_turn" });
      await alice.next(isResponseTo(id));
    };
    await turn("p1", [{ type: "text", text: "Add authentication to the API" }], "m1");
    await turn(
      "p2",
      [
        { type: "text", text: "and tests" },
        { type: "resource_link", uri: "file:///projects/demo/api.ts", name: "api.ts" },
      ],
      "m2",
    );
    await startTurn(alice, agent, sessionId, "p3");
    agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute", rawInput: { command: "make" } });
    await alice.next(isMethod("session/request_permission"));
    const sentTo = Date.now();
    const full = (await attached(agent, t.clientKey2, { sessionId, historyPolicy: "full" })).answer.result;
    expect(full.history).toEqual([
      { type: "prompt", content: "Add authentication to the API", timestamp: expect.any(String) },
      { type: "prompt", content: "and tests\n[resource_link: file:///projects/demo/api.ts]", timestamp: expect.any(String) },
      { type: "permission_request", toolCallId: "t1", status: "pending" },
    ]);
    for (const item of full.history.slice(0, 2)) {
      expect(Date.parse(item.timestamp)).toBeGreaterThanOrEqual(sentFrom);
      expect(Date.parse(item.timestamp)).toBeLessThanOrEqual(sentTo);
    }
    const after = (await attached(agent, t.clientKey2, { sessionId, historyPolicy: "after_message", afterMessageId: "m1" })).answer.result;
    expect(after.historyPolicy).toBe("after_message");
    expect(after.history.map((h: Json) => h.content ?? h.toolCallId)).toEqual([
      "and tests\n[resource_link: file:///projects/demo/api.ts]",
      "t1",
    ]);
    const pending = (await attached(agent, t.clientKey2, { sessionId, historyPolicy: "pending_only" })).answer.result;
    expect(pending.history).toEqual([{ type: "permission_request", toolCallId: "t1", status: "pending" }]);
  });

  it("pending_only: no history replayed; the waiting request is re-issued after an answer that lists it, with the turn's state", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await sessionWaiting(t, agent);
    const { peer: bob, answer } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "pending_only" });
    expect(answer.result.history).toEqual([{ type: "permission_request", toolCallId: "t1", status: "pending" }]);
    expect(answer.result._meta["acp/turnState"].state).toBe("requires_action");
    expect(typeof answer.result.clientId).toBe("string");
    const copy = await bob.next(isMethod("session/request_permission"));
    expect(copy.params.toolCall.toolCallId).toBe("t1");
    expect(bob.unclaimed().filter((m) => m.method === "session/update")).toEqual([]);
  });

  it("none: live only — nothing replayed, no request re-issued, the next update arrives", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { alice, sessionId } = await sessionWaiting(t, agent);
    const { peer: bob, answer } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "none" });
    expect(answer.result).not.toHaveProperty("history");
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "live" } });
    await bob.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "live");
    await barrier(alice, agent, sessionId);
    expect(bob.unclaimed().filter((m) => m.method === "session/request_permission" || m.method === "session/update")).toEqual([]);
  });
});

describe("session/attach: first writer wins", () => {
  it("the other attached client gets permission_resolved in the PR's shape naming who answered, beside the gateway's own; its late answer never reaches the agent", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { alice, sessionId, agentReq } = await sessionWaiting(t, agent);
    const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
    const first = await attached(agent, t.clientKey2, {
      sessionId,
      historyPolicy: "pending_only",
      clientId: "c-1",
      clientInfo: { name: "phone", version: "2" },
    });
    const second = await attached(agent, ada, { sessionId, historyPolicy: "pending_only", clientInfo: { name: "desk" } });
    const firstCopy = await first.peer.next(isMethod("session/request_permission"));
    const secondCopy = await second.peer.next(isMethod("session/request_permission"));
    first.peer.respond(firstCopy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    const toAgent = await agent.peer.next(isResponseTo(agentReq));
    expect(toAgent.result.outcome).toEqual({ outcome: "selected", optionId: "allow" });

    const pr = await second.peer.next(isUpdate("permission_resolved"));
    expect(pr.params.update).toMatchObject({
      sessionUpdate: "permission_resolved",
      type: "permission_resolved",
      toolCallId: "t1",
      chosenOptionId: "allow",
      resolvedBy: { clientId: "c-1", name: "phone", version: "2" },
    });
    await second.peer.next(isMethod("_acp_gateway/permission_resolved"));
    // A client that came by session/load gets the gateway's notice only, never the PR's update.
    await alice.next(isMethod("_acp_gateway/permission_resolved"));
    expect(alice.unclaimed().some(isUpdate("permission_resolved"))).toBe(false);

    second.peer.respond(secondCopy.id, { outcome: { outcome: "selected", optionId: "reject" } });
    await barrier(second.peer, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReq)).toEqual([]);
  });
});

describe("session/attach: roles, never raised by asking", () => {
  it("an observer key asking for controller gets -32002 and is not attached; attached as observer, its answer is refused -32003", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { alice, sessionId, agentReq } = await sessionWaiting(t, agent);
    const observerKey = await addKey(t.tenantId, "client", "olga", null, { role: "observer", user: "olga" });
    const { peer, answer } = await attached(agent, observerKey, { sessionId, role: "controller", historyPolicy: "none" });
    expect(answer.error).toMatchObject({ code: -32002, data: { role: "controller", yourRole: "observer" } });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "live" } });
    const watcher = await attached(agent, observerKey, { sessionId, historyPolicy: "none" });
    expect(watcher.answer.result.role).toBe("observer");
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "second" } });
    await watcher.peer.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "second");
    expect(peer.unclaimed().filter((m) => m.method === "session/update")).toEqual([]);
    const asking = await attached(agent, observerKey, { sessionId, historyPolicy: "pending_only" });
    const copy = await asking.peer.next(isMethod("session/request_permission"));
    asking.peer.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await asking.peer.next((m) => m.error !== undefined)).error.code).toBe(-32003);
    // The refusal is the session's judgement of the answer: after it, alice's barrier finds nothing sent on.
    await barrier(alice, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReq)).toEqual([]);
  });

  it("a key that drives may attach as observer: its answer is refused -32003 and the request stays pending; its prompt is refused", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { alice, sessionId, agentReq, aliceCopy } = await sessionWaiting(t, agent);
    const { peer: bob, answer } = await attached(agent, t.clientKey2, { sessionId, role: "observer", historyPolicy: "pending_only" });
    expect(answer.result.role).toBe("observer");
    const copy = await bob.next(isMethod("session/request_permission"));
    bob.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    const refused = await bob.next((m) => m.error !== undefined && m.error.code === -32003);
    expect(refused.error.message).toMatch(/observer/);
    const prompt = await bob.request("session/prompt", { sessionId, prompt: [] }, "p");
    expect(prompt.error.code).toBe(-32003);
    alice.respond(aliceCopy.id, { outcome: { outcome: "selected", optionId: "reject" } });
    expect((await agent.peer.next(isResponseTo(agentReq))).result.outcome.optionId).toBe("reject");
  });
});

describe("session/attach: hostile and malformed", () => {
  it("another tenant's session is not found (-32001), and nothing of it arrives", async () => {
    const mine = await seedTenant();
    const theirs = await seedTenant();
    const theirAgent = await dialInAgent(theirs);
    const { sessionId } = await sessionWaiting(theirs, theirAgent);
    const myAgent = await dialInAgent(mine);
    const { peer, answer } = await attached(myAgent, mine.clientKey, { sessionId, historyPolicy: "full" });
    expect(answer.error).toMatchObject({ code: -32001, message: "Session not found", data: { sessionId } });
    const detach = await peer.request("session/detach", { sessionId });
    expect(detach.error.code).toBe(-32001);
    expect(peer.unclaimed()).toEqual([]);
  });

  it("refuses an unknown historyPolicy, role or an over-long clientInfo with -32602, attaching nothing", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await sessionWaiting(t, agent);
    const { peer } = await initialized(agent, t.clientKey2);
    const policy = await peer.request("session/attach", { sessionId, historyPolicy: "everything" });
    expect(policy.error).toMatchObject({ code: -32602, data: { historyPolicy: "everything" } });
    const role = await peer.request("session/attach", { sessionId, role: "owner" });
    expect(role.error.code).toBe(-32602);
    const long = await peer.request("session/attach", { sessionId, clientInfo: { name: "x".repeat(65) } });
    expect(long.error.code).toBe(-32602);
    const noSession = await peer.request("session/attach", { historyPolicy: "none" });
    expect(noSession.error.code).toBe(-32602);
    expect(peer.unclaimed()).toEqual([]);
  });

  it("attaching twice on one connection replaces the first: each live update arrives once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { alice, sessionId } = await sessionWaiting(t, agent);
    const { peer: bob } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "none" });
    const again = await bob.request("session/attach", { sessionId, historyPolicy: "none" }, "again");
    expect(again.result.connectedClients.map((c: Json) => c.name)).toEqual(["alice"]);
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "once" } });
    await bob.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "once");
    await barrier(bob, agent, sessionId);
    await barrier(alice, agent, sessionId);
    expect(bob.unclaimed().filter(isUpdate("agent_message_chunk"))).toEqual([]);
  });
});

describe("session/detach", () => {
  it("the others get client_disconnected; the detached client gets nothing more, its late answer is dropped, and a prompt is refused until it attaches again", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { alice, sessionId, agentReq, aliceCopy } = await sessionWaiting(t, agent);
    const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
    const watcher = await attached(agent, ada, { sessionId, historyPolicy: "none", clientInfo: { name: "watcher" } });
    const { peer: bob } = await attached(agent, t.clientKey2, {
      sessionId,
      historyPolicy: "pending_only",
      clientId: "bob-1",
      clientInfo: { name: "bob-cli" },
    });
    const copy = await bob.next(isMethod("session/request_permission"));

    const detach = await bob.request("session/detach", { sessionId }, "detach");
    expect(detach.result).toEqual({ sessionId, status: "detached" });
    const detachedAt = bob.raw.length;
    const gone = await watcher.peer.next(isUpdate("client_disconnected"));
    expect(gone.params.update).toMatchObject({ type: "client_disconnected", client: { clientId: "bob-1", name: "bob-cli" } });
    expect(typeof gone.params.update.timestamp).toBe("string");

    // Bob's late answer is dropped at the edge: the list's round trip proves the edge has read it.
    bob.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await bob.request("session/list", {});
    const prompt = await bob.request("session/prompt", { sessionId, prompt: [] }, "after-detach");
    expect(prompt.error).toMatchObject({ code: -32002, data: { sessionId, detached: true } });
    alice.respond(aliceCopy.id, { outcome: { outcome: "selected", optionId: "reject" } });
    expect((await agent.peer.next(isResponseTo(agentReq))).result.outcome.optionId).toBe("reject");

    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "after" } });
    await watcher.peer.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "after");
    await barrier(alice, agent, sessionId);
    expect(
      bob.raw
        .slice(detachedAt)
        .map((r) => JSON.parse(r) as Json)
        .filter((m) => m.method !== undefined),
    ).toEqual([]);

    const back = await bob.request("session/attach", { sessionId, historyPolicy: "none" }, "back");
    expect(back.result.sessionId).toBe(sessionId);
  });
});

describe("session/attach and stream/resume", () => {
  const cursorOf = (m: Json): string => m.params?._meta?.["acp/cursor"] ?? m._meta?.["acp/cursor"];
  const connectionIdOf = (peer: Peer): string => peer.response.headers.get("Acp-Connection-Id") ?? "";
  async function resumeOn(key: string, agent: ScriptedAgent, connectionId: string, streams: Record<string, string>) {
    const peer = await connect(`/acp?agent=${agent.name}`, key);
    const answer = await peer.request("stream/resume", { connectionId, streams }, "resume");
    return { peer, answer };
  }

  it("a client that attached as observer is still one after its dropped socket resumes: its answer is refused -32003", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await sessionWaiting(t, agent);
    const { peer: bob } = await attached(agent, t.clientKey2, {
      sessionId,
      role: "observer",
      historyPolicy: "none",
      clientInfo: { name: "bob" },
    });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "seen" } });
    const seen = await bob.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "seen");
    bob.close(); // the network drops
    const { peer, answer } = await resumeOn(t.clientKey2, agent, connectionIdOf(bob), { [sessionId]: cursorOf(seen) });
    expect(answer.result.resumed).toEqual([sessionId]);
    const copy = await peer.next(isMethod("session/request_permission"));
    peer.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    const refused = await peer.next((m) => m.error !== undefined);
    expect(refused.error.code).toBe(-32003);
  });

  it("a stream let go by session/detach is not kept: a resume of it is refused, never a live stream", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await sessionWaiting(t, agent);
    const { peer: bob } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "none" });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "seen" } });
    const seen = await bob.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "seen");
    await bob.request("session/detach", { sessionId }, "detach");
    bob.close();
    const { peer, answer } = await resumeOn(t.clientKey2, agent, connectionIdOf(bob), { [sessionId]: cursorOf(seen) });
    expect(answer.result.resumed).toEqual([]);
    expect(answer.result.refused).toEqual([{ sessionId, reason: expect.any(String) }]);
    await peer.next(isMethod("stream/resume_failed"));
  });
});
