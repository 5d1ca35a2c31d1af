// What PR #533 tells attached clients of each other (decision 0060), in the real Worker, SessionObject
// and D1 with raw peers: `prompt_received` and `turn_complete` to the clients that came by attach (not
// the prompter, not a session/load client), `after_message` from the agent's message ids in the log,
// the session's bound on attached clients, `client_disconnected` only for a client that is gone, and
// a client asking ACP v2 answered v1 with a note.

import { SELF, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  type Peer,
  type ScriptedAgent,
  attachClient,
  barrier,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
} from "./helpers";
import { restartObject, sessionStub } from "./fuzz-faults";
import { httpConnect } from "./http-helpers";
import { HARD_LIMITS } from "../../protocol/tenant-limits";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";

type Json = Record<string, any>;

async function attached(agent: ScriptedAgent, key: string, params: Json): Promise<{ peer: Peer; answer: Json }> {
  const peer = await connect(`/acp?agent=${agent.name}`, key);
  await peer.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const answer = await peer.request("session/attach", params, "attach");
  return { peer, answer };
}

const isUpdate = (kind: string) => (m: Json) => m.method === "session/update" && m.params?.update?.sessionUpdate === kind;
const kindsOf = (peer: Peer): string[] =>
  peer.raw.map((r) => JSON.parse(r) as Json).flatMap((m) => (m.method === "session/update" ? [m.params.update.sessionUpdate] : []));
const text = (t: string) => ({ type: "text", text: t });

describe("prompt_received and turn_complete", () => {
  it("the other attached clients see who prompted what before the agent streams, and the turn's stopReason with its last messageId; the prompter and a session/load client get neither", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const loader = await attachClient(t, agent, sessionId);
    const { peer: dash } = await attached(agent, t.clientKey2, {
      sessionId,
      historyPolicy: "none",
      clientId: "dash-1",
      clientInfo: { name: "dashboard", version: "1.0.0" },
    });
    const { peer: alicesView } = await attached(agent, t.clientKey, {
      sessionId,
      historyPolicy: "none",
      clientInfo: { name: "alice-ide" },
    });

    alicesView.send({
      jsonrpc: "2.0",
      id: "p1",
      method: "session/prompt",
      params: { sessionId, prompt: [text("Add authentication to the API")] },
    });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    const received = await dash.next(isUpdate("prompt_received"));
    expect(received.params).toMatchObject({ sessionId, update: { type: "prompt_received", sessionUpdate: "prompt_received" } });
    expect(received.params.update.prompt).toEqual([text("Add authentication to the API")]);
    expect(received.params.update.sentBy).toMatchObject({ name: "alice-ide", user: "alice" });
    expect(typeof received.params.update.sentBy.clientId).toBe("string");

    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", messageId: "m-1", content: text("Working") });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", messageId: "m-2", content: text("Done") });
    await dash.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.messageId === "m-2");
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await alicesView.next(isResponseTo("p1"))).result).toEqual({ stopReason: "end_turn" });
    const complete = await dash.next(isUpdate("turn_complete"));
    expect(complete.params.update).toEqual({
      sessionUpdate: "turn_complete",
      type: "turn_complete",
      stopReason: "end_turn",
      messageId: "m-2",
    });
    // The prompt's echo to every client stays, and comes before prompt_received.
    expect(kindsOf(dash).indexOf("user_message_chunk")).toBeLessThan(kindsOf(dash).indexOf("prompt_received"));
    expect(kindsOf(dash).indexOf("prompt_received")).toBeLessThan(kindsOf(dash).indexOf("agent_message_chunk"));

    // Whatever was sent the prompter and the load client in those steps came before this update on their sockets.
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: text("marker") });
    for (const peer of [alicesView, loader, alice])
      await peer.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "marker");
    expect(kindsOf(alicesView)).not.toContain("prompt_received");
    expect(kindsOf(alicesView)).not.toContain("turn_complete");
    for (const peer of [loader, alice]) {
      expect(kindsOf(peer)).not.toContain("prompt_received");
      expect(kindsOf(peer)).not.toContain("turn_complete");
    }
  });

  it("an attached client whose socket dropped gets them in its kept stream: its resume replays turn_complete", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const { peer: dash } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "none" });
    const prompt = await startTurn(alice, agent, sessionId);
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", messageId: "m-9", content: text("seen") });
    const seen = await dash.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "seen");
    const dashConn = dash.response.headers.get("Acp-Connection-Id") ?? "";
    dash.close();
    const stub = sessionStub(t.tenantId, sessionId);
    await expect
      .poll(() => runInDurableObject(stub, (instance: SessionObject) => sessionTesting(instance).attached()), { timeout: 20_000 })
      .not.toContain(dashConn);
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    await alice.next(isResponseTo("turn"));
    const back = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    const cursor = seen.params._meta["acp/cursor"];
    expect((await back.request("stream/resume", { connectionId: dashConn, streams: { [sessionId]: cursor } }, "r")).result.resumed).toEqual(
      [sessionId],
    );
    expect((await back.next(isUpdate("turn_complete"))).params.update).toMatchObject({ stopReason: "end_turn", messageId: "m-9" });
  });

  it("a turn the gateway ends (the agent gone) completes with stopReason null and the reason", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const { peer: dash } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "none" });
    await startTurn(alice, agent, sessionId);
    agent.peer.close();
    expect((await alice.next(isResponseTo("turn"), 20_000)).error.data.reason).toBe("agent_disconnected");
    const complete = await dash.next(isUpdate("turn_complete"), 20_000);
    expect(complete.params.update).toMatchObject({ stopReason: null, reason: "agent_disconnected" });
  });

  it("neither is history: an attach with full replays the prompt's echo and the agent's messages, not the PR's updates", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    await attached(agent, t.clientKey2, { sessionId, historyPolicy: "none" });
    alice.send({ jsonrpc: "2.0", id: "p1", method: "session/prompt", params: { sessionId, prompt: [text("hi")] } });
    agent.peer.respond((await agent.peer.next(isMethod("session/prompt"))).id, { stopReason: "end_turn" });
    await alice.next(isResponseTo("p1"));
    const { peer: late, answer } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "full" });
    expect(answer.result.historyPolicy).toBe("full");
    expect(kindsOf(late)).toEqual(["user_message_chunk"]);
  });
});

describe("after_message", () => {
  async function sessionWithMessages() {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    await startTurn(alice, agent, sessionId);
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", messageId: "m-1", content: text("one ") });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", messageId: "m-1", content: text("more") });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", messageId: "m-2", content: text("two") });
    agent.update(sessionId, { sessionUpdate: "plan", entries: [] });
    await barrier(alice, agent, sessionId);
    return { t, agent, sessionId };
  }

  it("replays only what came after the named message (all its chunks), and says after_message", async () => {
    const { t, agent, sessionId } = await sessionWithMessages();
    const { peer, answer } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "after_message", afterMessageId: "m-1" });
    expect(answer.result.historyPolicy).toBe("after_message");
    const replayed = peer.raw.map((r) => JSON.parse(r) as Json).filter((m) => m.method === "session/update");
    expect(replayed.map((m) => [m.params.update.sessionUpdate, m.params.update.messageId])).toEqual([
      ["agent_message_chunk", "m-2"],
      ["plan", undefined],
    ]);
  });

  it("a message the log does not have falls back to full, and the answer says full", async () => {
    const { t, agent, sessionId } = await sessionWithMessages();
    const { peer, answer } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "after_message", afterMessageId: "nope" });
    expect(answer.result.historyPolicy).toBe("full");
    expect(kindsOf(peer)).toEqual(["agent_message_chunk", "agent_message_chunk", "plan"]);
  });

  it("after_message without afterMessageId (or an over-long one) is refused -32602, attaching nothing", async () => {
    const { t, agent, sessionId } = await sessionWithMessages();
    for (const bad of [{}, { afterMessageId: "x".repeat(257) }, { afterMessageId: 7 }]) {
      const { peer, answer } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "after_message", ...bad });
      expect(answer.error.code).toBe(-32602);
      expect(kindsOf(peer)).toEqual([]);
    }
  });
});

describe("the session's bound on attached clients", () => {
  it("one client past the tenant's attachedClientsPerSession is refused -32029 and sent nothing; a connection attaching again keeps its place", async () => {
    const t = await seedTenant({ limits: { attachedClientsPerSession: 2 } });
    const agent = await dialInAgent(t);
    const { sessionId } = await clientWithSession(t, agent);
    const second = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "full" });
    expect(second.answer.result.sessionId).toBe(sessionId);
    const third = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "full" });
    expect(third.answer.error).toMatchObject({
      code: -32029,
      data: { reason: "attached_clients_limit", limit: "attachedClientsPerSession", value: 2 },
    });
    expect(third.answer.error.message).toMatch(/session\/detach/);
    expect(third.peer.raw.map((r) => JSON.parse(r) as Json).filter((m) => m.method !== undefined)).toEqual([]);
    const loaded = await third.peer.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
    expect(loaded.error.code).toBe(-32029);
    const again = await second.peer.request("session/attach", { sessionId, historyPolicy: "none" }, "again");
    expect(again.result.sessionId).toBe(sessionId);
  });

  it("the operator may set it up to its hard maximum, and no further (400)", async () => {
    const t = await seedTenant();
    const patch = (limits: Json) =>
      SELF.fetch(`http://gateway.test/v1/tenants/${t.tenantId}`, {
        method: "PATCH",
        headers: { Authorization: "Bearer test-operator-token", "Content-Type": "application/json" },
        body: JSON.stringify({ settings: { limits } }),
      });
    expect((await patch({ attachedClientsPerSession: HARD_LIMITS.attachedClientsPerSession })).status).toBe(200);
    expect((await patch({ attachedClientsPerSession: HARD_LIMITS.attachedClientsPerSession + 1 })).status).toBe(400);
  });
});

describe("client_disconnected only for a client that is gone", () => {
  const cursorOf = (m: Json): string => m.params?._meta?.["acp/cursor"];
  const connectionIdOf = (peer: Peer): string => peer.response.headers.get("Acp-Connection-Id") ?? "";

  /** A dashboard watching, and bob attached by connection `bobConn`, whose socket has just dropped (the session saw it). */
  async function bobDropped() {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const { peer: dash } = await attached(agent, t.clientKey, { sessionId, historyPolicy: "none", clientInfo: { name: "dash" } });
    const { peer: bob } = await attached(agent, t.clientKey2, { sessionId, historyPolicy: "none", clientId: "bob-1" });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: text("seen") });
    const seen = await bob.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === "seen");
    const bobConn = connectionIdOf(bob);
    bob.close();
    const stub = sessionStub(t.tenantId, sessionId);
    const attachedNow = () => runInDurableObject(stub, (instance: SessionObject) => sessionTesting(instance).attached());
    await expect.poll(attachedNow, { timeout: 20_000 }).not.toContain(bobConn);
    return { t, agent, alice, sessionId, dash, bobConn, cursor: cursorOf(seen), stub };
  }

  /** Moves the session's retention clock past the window and runs its alarm. */
  async function lapse(stub: ReturnType<typeof sessionStub>): Promise<void> {
    await runInDurableObject(stub, (instance: SessionObject) => {
      sessionTesting(instance).now = () => Date.now() + 60_000;
    });
    await runDurableObjectAlarm(stub);
  }

  /** Everything the session sent the dashboard until now has arrived (a marker update after it). */
  async function drained(dash: Peer, agent: ScriptedAgent, sessionId: string): Promise<void> {
    const marker = crypto.randomUUID();
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: text(marker) });
    await dash.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === marker);
  }

  it("a dropped socket is not announced at once; once its stream lapses unresumed it is, once, and its resume is refused", async () => {
    const { t, agent, sessionId, dash, bobConn, cursor, stub } = await bobDropped();
    await drained(dash, agent, sessionId);
    expect(kindsOf(dash)).not.toContain("client_disconnected");
    await lapse(stub);
    const gone = await dash.next(isUpdate("client_disconnected"));
    expect(gone.params.update.client).toMatchObject({ clientId: "bob-1" });
    await runDurableObjectAlarm(stub);
    await drained(dash, agent, sessionId);
    expect(kindsOf(dash).filter((k) => k === "client_disconnected")).toHaveLength(1);
    const peer = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    const answer = await peer.request("stream/resume", { connectionId: bobConn, streams: { [sessionId]: cursor } }, "resume");
    expect(answer.result.resumed).toEqual([]);
  });

  it("a client that resumes within the window is never announced, even after the window", async () => {
    const { t, agent, sessionId, dash, bobConn, cursor, stub } = await bobDropped();
    const peer = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    const answer = await peer.request("stream/resume", { connectionId: bobConn, streams: { [sessionId]: cursor } }, "resume");
    expect(answer.result.resumed).toEqual([sessionId]);
    await lapse(stub);
    await drained(dash, agent, sessionId);
    expect(kindsOf(dash)).not.toContain("client_disconnected");
  });

  it("a client attaching after another dropped lists it as connected, and is told of the drop when its window lapses", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await clientWithSession(t, agent);
    // Bob came by session/load, and nobody had come by attach when his socket dropped.
    const bob = await attachClient(t, agent, sessionId, t.clientKey2);
    const bobConn = connectionIdOf(bob);
    bob.close();
    const stub = sessionStub(t.tenantId, sessionId);
    const attachedNow = () => runInDurableObject(stub, (instance: SessionObject) => sessionTesting(instance).attached());
    await expect.poll(attachedNow, { timeout: 20_000 }).not.toContain(bobConn);
    const { peer: dash, answer } = await attached(agent, t.clientKey, { sessionId, historyPolicy: "none", clientInfo: { name: "dash" } });
    // Within his window bob may still resume: he is connected yet.
    expect(answer.result.connectedClients).toEqual(expect.arrayContaining([{ name: "bob", user: "bob" }]));
    await drained(dash, agent, sessionId);
    expect(kindsOf(dash)).not.toContain("client_disconnected");
    await lapse(stub);
    const gone = await dash.next(isUpdate("client_disconnected"));
    expect(gone.params.update.client).toEqual({ name: "bob", user: "bob" });
  });

  it("past 32 departures owed, the oldest is announced at once and its stream let go; the other 32 when their window lapses", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const { peer: dash } = await attached(agent, t.clientKey, { sessionId, historyPolicy: "none", clientInfo: { name: "dash" } });
    const stub = sessionStub(t.tenantId, sessionId);
    const attachedNow = () => runInDurableObject(stub, (instance: SessionObject) => sessionTesting(instance).attached());
    /** Clients c-<from>… attach (alice, dash and 30 are the session's bound of 32), are each sent an update, and drop; the session sees them gone. */
    const attachAndDrop = async (from: number, count: number) => {
      const peers = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          attached(agent, t.clientKey2, { sessionId, historyPolicy: "none", clientId: `c-${from + i}` }),
        ),
      );
      const marker = crypto.randomUUID();
      agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: text(marker) });
      const cursors = await Promise.all(
        peers.map(async ({ peer }) =>
          cursorOf(await peer.next((m) => isUpdate("agent_message_chunk")(m) && m.params.update.content.text === marker)),
        ),
      );
      const conns = peers.map(({ peer }) => connectionIdOf(peer));
      for (const { peer } of peers) peer.close();
      await expect.poll(async () => (await attachedNow()).filter((c) => conns.includes(c)), { timeout: 30_000 }).toEqual([]);
      return { conns, cursors };
    };
    // c-0 drops first, alone: it is the oldest owed.
    const first = await attachAndDrop(0, 1);
    await attachAndDrop(1, 29);
    await drained(dash, agent, sessionId);
    expect(kindsOf(dash)).not.toContain("client_disconnected");
    await attachAndDrop(30, 3);
    await drained(dash, agent, sessionId);
    const announced = () =>
      dash.raw
        .map((r) => JSON.parse(r) as Json)
        .filter(isUpdate("client_disconnected"))
        .map((m) => m.params.update.client.clientId as string);
    // 33 owed, 32 kept: c-0 went at once (no window lapsed yet), and its stream with it.
    expect(announced()).toEqual(["c-0"]);
    const peer = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    const resume = await peer.request(
      "stream/resume",
      { connectionId: first.conns[0], streams: { [sessionId]: first.cursors[0] } },
      "resume",
    );
    expect(resume.result.resumed).toEqual([]);
    await lapse(stub);
    await drained(dash, agent, sessionId);
    const all = announced();
    expect(all).toHaveLength(33);
    expect(new Set(all)).toEqual(new Set(Array.from({ length: 33 }, (_, i) => `c-${i}`)));
    alice.close();
  });

  it("an evicted session still announces it: the departure is kept in storage and the alarm finds it", async () => {
    const { agent, sessionId, dash, stub } = await bobDropped();
    // A new instance has none of the old one's memory (the kept stream is gone), only its storage.
    await restartObject(stub);
    await lapse(stub);
    await dash.next(isUpdate("client_disconnected"));
    await drained(dash, agent, sessionId);
  });
});

describe("a client asking ACP v2 (decision 0060)", () => {
  it("is answered v1, as ACP's negotiation says, with a note saying what works; its v1 session goes on", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const peer = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    const init = await peer.request("initialize", { protocolVersion: 2, capabilities: {}, info: { name: "v2", version: "0" } });
    expect(init.result.protocolVersion).toBe(1);
    expect(init.result._meta.acpGateway.protocolVersion).toMatchObject({ requested: 2, served: 1, message: expect.stringMatching(/v1/) });
    const created = peer.request("session/new", { cwd: "/w", mcpServers: [] });
    const sessionId = await agent.acceptNewSession();
    expect((await created).result.sessionId).toBe(sessionId);
    const v1 = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    expect((await v1.request("initialize", { protocolVersion: 1, clientCapabilities: {} })).result._meta.acpGateway).not.toHaveProperty(
      "protocolVersion",
    );
  });
});

describe("client_disconnected for an HTTP connection that ends", () => {
  it("is sent at once: an HTTP connection resumes in its own object, never at the session, so nothing is kept for it", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await clientWithSession(t, agent);
    const { peer: dash } = await attached(agent, t.clientKey, { sessionId, historyPolicy: "none" });
    const http = await httpConnect(t.clientKey2, agent.name);
    const session = await http.openSession(sessionId);
    const attach = await http.request("session/attach", { sessionId, historyPolicy: "none", clientId: "http-1" }, sessionId);
    expect((await session.next(isResponseTo(attach.id))).result.clientId).toBe("http-1");
    expect((await http.del()).status).toBeLessThan(300);
    const gone = await dash.next(isUpdate("client_disconnected"));
    expect(gone.params.update.client).toMatchObject({ clientId: "http-1" });
  });
});
