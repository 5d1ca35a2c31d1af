// Streamable HTTP on /acp against the real Worker, ConnectionObject and SessionObject.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { attachClient, clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { SseReader, getStream, httpConnect, post, withoutCursor } from "./http-helpers";

describe("Streamable HTTP: a turn", { timeout: 20_000 }, () => {
  it("initialize is 200 with Acp-Connection-Id; session/new is 202 and answered on the connection stream; the turn on the session stream", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const http = await httpConnect(t.clientKey, agent.name);
    expect(http.initialize.result.protocolVersion).toBe(1);
    expect(http.connectionId).toMatch(/^[0-9a-f-]{36}$/);

    const created = await http.request("session/new", { cwd: "/w", mcpServers: [] });
    expect(created.response.status).toBe(202);
    const sessionId = await agent.acceptNewSession();
    expect((await http.stream.next(isResponseTo(created.id))).result.sessionId).toBe(sessionId);

    const session = await http.openSession(sessionId);
    const prompt = await http.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] }, sessionId);
    expect(prompt.response.status).toBe(202);
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hello" } });
    const permissionId = agent.askPermission(sessionId, { toolCallId: "c1", title: "Edit", kind: "edit", status: "pending" });
    expect((await session.next(isMethod("session/update"))).params.update.content.text).toBe("hello");
    const ask = await session.next(isMethod("session/request_permission"));
    const answer = await http.send({ id: ask.id, result: { outcome: { outcome: "selected", optionId: "allow" } } }, sessionId);
    expect(answer.status).toBe(202);
    const relayed = await agent.peer.next((m) => m.id === permissionId && !("method" in m));
    expect(relayed.result.outcome.optionId).toBe("allow");
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    expect((await session.next(isResponseTo(prompt.id))).result.stopReason).toBe("end_turn");
    expect(http.stream.unclaimed()).toEqual([]);
    expect((await http.del()).status).toBe(202);
  });
});

describe("Streamable HTTP: status codes", { timeout: 20_000 }, () => {
  const initialize = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } };

  it("401 without a key or with a bad one, on POST, GET and DELETE", async () => {
    expect((await post(undefined, initialize, {}, "?agent=x")).status).toBe(401);
    expect((await post("acp_client_nope", initialize, {}, "?agent=x")).status).toBe(401);
    expect((await getStream("acp_client_nope", crypto.randomUUID())).status).toBe(401);
    const del = await fetchDelete(undefined, crypto.randomUUID());
    expect(del.status).toBe(401);
  });

  it("400 for a body that is not JSON (-32700) or a batch (-32600), 415 for another content type, 413 (-32600) past the size limit", async () => {
    const t = await seedTenant();
    const bad = await post(t.clientKey, "{nope", {}, "?agent=x");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe(-32700);
    const batch = await post(t.clientKey, [initialize], {}, "?agent=x");
    expect(batch.status).toBe(400);
    expect(((await batch.json()) as any).error).toMatchObject({ code: -32600, message: expect.stringMatching(/batch/) });
    expect((await post(t.clientKey, initialize, { "Content-Type": "text/plain" }, "?agent=x")).status).toBe(415);
    const huge = await post(t.clientKey, { ...initialize, id: 7, params: { pad: "x".repeat(4 * 1024 * 1024 + 10) } }, {}, "?agent=x");
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as any).error).toMatchObject({ code: -32600, message: expect.stringMatching(/too large/) });
  });

  it("400 for a message without Acp-Connection-Id that is not initialize, initialize on an open connection, or a session method without Acp-Session-Id", async () => {
    const t = await seedTenant();
    expect((await post(t.clientKey, { jsonrpc: "2.0", id: 1, method: "session/list", params: {} })).status).toBe(400);
    const http = await httpConnect(t.clientKey, "x");
    expect((await http.send({ id: 1, method: "initialize", params: { protocolVersion: 1 } })).status).toBe(400);
    const noHeader = await http.send({ id: 2, method: "session/prompt", params: { sessionId: "s", prompt: [] } });
    expect(noHeader.status).toBe(400);
    expect(await noHeader.text()).toMatch(/Acp-Session-Id/);
    const mismatch = await http.send({ id: 3, method: "session/prompt", params: { sessionId: "s", prompt: [] } }, "other");
    expect(mismatch.status).toBe(400);
  });

  it("404 for an unknown connection, an ended one, and one opened by another key of the same tenant", async () => {
    const t = await seedTenant();
    const unknown = crypto.randomUUID();
    const headers = { "Acp-Connection-Id": unknown };
    expect((await post(t.clientKey, { jsonrpc: "2.0", id: 1, method: "session/list", params: {} }, headers)).status).toBe(404);
    expect((await getStream(t.clientKey, unknown)).status).toBe(404);
    expect((await fetchDelete(t.clientKey, unknown)).status).toBe(404);
    expect((await getStream(t.clientKey, "not-a-uuid")).status).toBe(404);

    const http = await httpConnect(t.clientKey, "x");
    const mine = { "Acp-Connection-Id": http.connectionId };
    expect((await post(t.clientKey2, { jsonrpc: "2.0", id: 1, method: "session/list", params: {} }, mine)).status).toBe(404);
    expect((await getStream(t.clientKey2, http.connectionId)).status).toBe(404);
    expect((await fetchDelete(t.clientKey2, http.connectionId)).status).toBe(404);

    expect((await http.del()).status).toBe(202);
    await http.stream.ended;
    expect((await post(t.clientKey, { jsonrpc: "2.0", id: 1, method: "session/list", params: {} }, mine)).status).toBe(404);
    expect((await getStream(t.clientKey, http.connectionId)).status).toBe(404);
    expect((await http.del()).status).toBe(404);
  });

  it("409 for a second reader of a stream, and for a session the connection has not attached", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const http = await httpConnect(t.clientKey, agent.name);
    expect((await getStream(t.clientKey, http.connectionId)).status).toBe(409);
    const prompt = await http.request("session/prompt", { sessionId, prompt: [] }, sessionId);
    expect(prompt.response.status).toBe(409);
    expect(await prompt.response.text()).toMatch(/session\/load/);
    // session/load attaches it; then a second reader of its stream is refused.
    const session = await http.openSession(sessionId);
    const load = await http.request("session/load", { sessionId, cwd: "/w", mcpServers: [] }, sessionId);
    expect(load.response.status).toBe(202);
    expect((await session.next(isResponseTo(load.id))).result).toBeDefined();
    expect((await getStream(t.clientKey, http.connectionId, sessionId)).status).toBe(409);
    const second = await http.request("session/prompt", { sessionId, prompt: [] }, sessionId);
    expect(second.response.status).toBe(202);
    await agent.peer.next(isMethod("session/prompt"));
    client.close();
  });

  it("sends keepalive comments on an idle stream", async () => {
    const t = await seedTenant();
    const http = await httpConnect(t.clientKey, "x");
    await waitUntil(() => http.stream.comments >= 3);
    expect(http.stream.unclaimed()).toEqual([]);
  });
});

describe("Streamable HTTP: reconnecting within the window, and past it", { timeout: 20_000 }, () => {
  it("a session stream cut mid-turn and reopened within the window loses nothing, in order", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const http = await httpConnect(t.clientKey, agent.name);
    const created = await http.request("session/new", { cwd: "/w", mcpServers: [] });
    const sessionId = await agent.acceptNewSession();
    await http.stream.next(isResponseTo(created.id));
    const first = await http.openSession(sessionId);
    const prompt = await http.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] }, sessionId);
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    const say = (text: string) => agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
    say("one");
    expect((await first.next(isMethod("session/update"))).params.update.content.text).toBe("one");
    const seen = first.lastEventId;
    // The connection drops; the agent goes on before the object may even have noticed.
    await first.cancel();
    say("two");
    say("three");
    const permissionId = agent.askPermission(sessionId, { toolCallId: "c1", title: "Edit", kind: "edit", status: "pending" });
    // Reconnect within the window, with the id of the last event seen (409 until the old reader is gone).
    let reopened = await getStream(t.clientKey, http.connectionId, sessionId, seen);
    while (reopened.status === 409) reopened = await getStream(t.clientKey, http.connectionId, sessionId, seen);
    expect(reopened.status).toBe(200);
    const second = new SseReader(reopened);
    const texts = [
      (await second.next(isMethod("session/update"))).params.update.content.text,
      (await second.next(isMethod("session/update"))).params.update.content.text,
    ];
    expect(texts).toEqual(["two", "three"]);
    const ask = await second.next(isMethod("session/request_permission"));
    expect(ask.params.toolCall.toolCallId).toBe("c1");
    await http.send({ id: ask.id, result: { outcome: { outcome: "selected", optionId: "allow" } } }, sessionId);
    await agent.peer.next((m) => m.id === permissionId && !("method" in m));
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    expect((await second.next(isResponseTo(prompt.id))).result.stopReason).toBe("end_turn");
  });

  it("past the window the session is detached: its stream and POSTs answer 409 until session/load, which replays", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const http = await httpConnect(t.clientKey, agent.name);
    const created = await http.request("session/new", { cwd: "/w", mcpServers: [] });
    const sessionId = await agent.acceptNewSession();
    await http.stream.next(isResponseTo(created.id));
    // Nobody opens the session's stream: what the agent says is held, then given up after 1.5 s.
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "held" } });
    await waitUntilAsync(
      async () => (await http.request("session/set_mode", { sessionId, modeId: "code" }, sessionId)).response.status === 409,
      5000,
    );
    expect((await getStream(t.clientKey, http.connectionId, sessionId)).status).toBe(409);
    const session = await http.openSession(sessionId);
    const load = await http.request("session/load", { sessionId, cwd: "/w", mcpServers: [] }, sessionId);
    expect(load.response.status).toBe(202);
    expect((await session.next(isMethod("session/update"))).params.update.content.text).toBe("held");
    expect((await session.next(isResponseTo(load.id))).error).toBeUndefined();
  });

  it("a connection whose stream nobody reads for the window ends: 404 afterwards", async () => {
    const t = await seedTenant();
    const http = await httpConnect(t.clientKey, "x");
    await http.stream.cancel();
    await waitUntilAsync(async () => (await http.send({ id: 1, method: "session/list", params: {} })).status === 404, 5000);
  });
});

describe("WebSocket: the RFD's rules", { timeout: 20_000 }, () => {
  it("closes with 1002 when the first message is not initialize", async () => {
    const t = await seedTenant();
    const client = await connect("/acp?agent=x", t.clientKey);
    client.send({ jsonrpc: "2.0", id: 1, method: "session/list", params: {} });
    expect((await client.closed).code).toBe(1002);
  });

  it("answers a batch with -32600 and stays open, also before initialize", async () => {
    const t = await seedTenant();
    const client = await connect("/acp?agent=x", t.clientKey);
    client.send('[{"jsonrpc":"2.0","id":1,"method":"initialize"}]');
    expect((await client.next((m) => m.error?.code === -32600)).error.message).toMatch(/batch/);
    expect((await client.request("initialize", { protocolVersion: 1 })).result.protocolVersion).toBe(1);
  });
});

describe("HTTP and WebSocket clients share one session", { timeout: 20_000 }, () => {
  it("fan-out to both; the WebSocket client answers first and the HTTP client's copy is withdrawn", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: ws, sessionId } = await clientWithSession(t, agent);
    const http = await httpConnect(t.clientKey2, agent.name);
    const session = await http.openSession(sessionId);
    const load = await http.request("session/load", { sessionId, cwd: "/w", mcpServers: [] }, sessionId);
    await session.next(isResponseTo(load.id));
    ws.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "edit" }] } });
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    expect((await session.next((m) => m.params?.update?.sessionUpdate === "user_message_chunk")).params.update.content.text).toBe("edit");
    const permissionId = agent.askPermission(sessionId, { toolCallId: "c1", title: "Edit", kind: "edit", status: "pending" });
    const [viaWs, viaHttp] = await Promise.all([
      ws.next(isMethod("session/request_permission")),
      session.next(isMethod("session/request_permission")),
    ]);
    expect(withoutCursor(viaHttp.params)).toEqual(withoutCursor(viaWs.params));
    ws.respond(viaWs.id, { outcome: { outcome: "selected", optionId: "allow" } });
    const withdrawn = await session.next((m) => m.method === "$/cancel_request");
    expect(withdrawn.params.requestId).toBe(viaHttp.id);
    // The HTTP client's late answer changes nothing.
    await http.send({ id: viaHttp.id, result: { outcome: { outcome: "selected", optionId: "reject" } } }, sessionId);
    expect((await agent.peer.next((m) => m.id === permissionId && !("method" in m))).result.outcome.optionId).toBe("allow");
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    expect((await ws.next(isResponseTo("p"))).result.stopReason).toBe("end_turn");
  });

  it("the HTTP client answers first and the WebSocket client's copy is withdrawn", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const http = await httpConnect(t.clientKey, agent.name);
    const created = await http.request("session/new", { cwd: "/w", mcpServers: [] });
    const sessionId = await agent.acceptNewSession();
    await http.stream.next(isResponseTo(created.id));
    const session = await http.openSession(sessionId);
    const ws = await attachClient(t, agent, sessionId);
    const prompt = await http.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit" }] }, sessionId);
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    const permissionId = agent.askPermission(sessionId, { toolCallId: "c1", title: "Edit", kind: "edit", status: "pending" });
    const [viaWs, viaHttp] = await Promise.all([
      ws.next(isMethod("session/request_permission")),
      session.next(isMethod("session/request_permission")),
    ]);
    await http.send({ id: viaHttp.id, result: { outcome: { outcome: "selected", optionId: "reject" } } }, sessionId);
    expect((await ws.next((m) => m.method === "$/cancel_request")).params.requestId).toBe(viaWs.id);
    expect((await agent.peer.next((m) => m.id === permissionId && !("method" in m))).result.outcome.optionId).toBe("reject");
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    expect((await session.next(isResponseTo(prompt.id))).result.stopReason).toBe("end_turn");
  });
});

function fetchDelete(key: string | undefined, connectionId: string): Promise<Response> {
  return SELF.fetch("http://gateway.test/acp", {
    method: "DELETE",
    headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), "Acp-Connection-Id": connectionId },
  });
}

/** Polls a condition the test cannot be told about (a timer inside the object), with a deadline. */
async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  return waitUntilAsync(async () => condition(), timeoutMs);
}

async function waitUntilAsync(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
