// Streamable HTTP on /acp against the gateway as `npm start` runs it, with the SDK's own
// createHttpStream client (unmodified) beside its createWebSocketStream client, and an SDK agent.
import { describe, expect, inject, it } from "vitest";
import { type TestClient, connectClient, dialInAgent, rawClient, waitForAgent, withoutCursor } from "./peers";

const url = inject("gatewayUrl");
const keys = inject("keys");

type Json = Record<string, any>;

const editCall = (id: string) => ({
  toolCallId: id,
  title: `Edit ${id}`,
  kind: "edit",
  status: "pending",
  locations: [{ path: "/w/a.ts" }],
});

/** An agent whose every turn streams text, reports a tool call, asks permission for it and says the answer. */
async function editingAgent(name: string) {
  let turn = 0;
  const agent = await dialInAgent({
    url,
    key: keys.agent,
    name,
    script: async (t) => {
      const id = `call-${++turn}`;
      await t.say("Editing ");
      await t.say("a.ts");
      await t.update({ sessionUpdate: "tool_call", ...editCall(id) });
      const answer = await t.askPermission(editCall(id));
      await t.update({
        sessionUpdate: "tool_call_update",
        toolCallId: id,
        status: answer.outcome.optionId === "allow-once" ? "completed" : "failed",
      });
      await t.say(`answer: ${answer.outcome.optionId}`);
      return "end_turn";
    },
  });
  await waitForAgent(url, keys.client, name);
  return agent;
}

const said = (client: TestClient, text: string) =>
  client.updates.waitFor((u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content.text === text, 10_000, `"${text}"`);

describe("Streamable HTTP with the SDK's clients", () => {
  for (const transport of ["http", "ws"] as const) {
    it(`the SDK's ${transport === "http" ? "createHttpStream" : "createWebSocketStream"} client runs a whole turn: streamed text, a tool call, a permission answered`, async () => {
      const name = `e2e-${transport}-turn-${Date.now()}`;
      const agent = await editingAgent(name);
      const client = await connectClient({ url, key: keys.client, agent: name, transport });
      const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
      const prompt = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit a.ts" }] });
      const ask = await client.permissions.waitFor(() => true);
      expect(ask.params.toolCall.toolCallId).toBe("call-1");
      ask.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
      expect(await prompt).toEqual({ stopReason: "end_turn" });
      await said(client, "answer: allow-once");
      const kinds = client.updates.items.map((u) => u.update.sessionUpdate);
      expect(kinds).toEqual(["agent_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]);
      expect(client.updates.items[3]?.update.status).toBe("completed");
      client.close();
      agent.close();
    });
  }

  it("an HTTP client and a WebSocket client share a session: each answers the other's permission request first, the other copy is withdrawn", async () => {
    const name = `e2e-mixed-${Date.now()}`;
    const agent = await editingAgent(name);
    const http = await connectClient({ url, key: keys.client, agent: name, transport: "http" });
    const ws = await connectClient({ url, key: keys.client, agent: name, transport: "ws" });
    const { sessionId } = await http.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    await ws.request("session/load", { sessionId, cwd: "/w", mcpServers: [] });

    // Turn 1, prompted over HTTP: the WebSocket client answers first.
    const first = http.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "one" }] });
    const [h1, w1] = await Promise.all([http.permissions.waitFor(() => true), ws.permissions.waitFor(() => true)]);
    expect(withoutCursor(h1.params)).toEqual(withoutCursor(w1.params));
    w1.answer({ outcome: { outcome: "selected", optionId: "reject-once" } });
    await expect(h1.answered).rejects.toBeDefined();
    expect(await first).toEqual({ stopReason: "end_turn" });
    await said(http, "answer: reject-once");
    await said(ws, "answer: reject-once");
    await ws.updates.waitFor((u) => u.update.sessionUpdate === "user_message_chunk" && u.update.content.text === "one");

    // Turn 2, prompted over WebSocket: the HTTP client answers first.
    const second = ws.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "two" }] });
    const isCall2 = (p: { params: Json }) => p.params.toolCall.toolCallId === "call-2";
    const [h2, w2] = await Promise.all([http.permissions.waitFor(isCall2), ws.permissions.waitFor(isCall2)]);
    h2.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
    await expect(w2.answered).rejects.toBeDefined();
    expect(await second).toEqual({ stopReason: "end_turn" });
    await said(ws, "answer: allow-once");
    await http.updates.waitFor((u) => u.update.sessionUpdate === "user_message_chunk" && u.update.content.text === "two");
    http.close();
    ws.close();
    agent.close();
  });

  it("an HTTP client attaching with session/load gets the history first", async () => {
    const name = `e2e-http-load-${Date.now()}`;
    const agent = await editingAgent(name);
    const ws = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await ws.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = ws.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "first" }] });
    (await ws.permissions.waitFor(() => true)).answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
    await prompt;
    const http = await connectClient({ url, key: keys.client, agent: name, transport: "http" });
    await http.request("session/load", { sessionId, cwd: "/w", mcpServers: [] });
    // Replay may join consecutive text chunks; the order of kinds and the text are what matter.
    const kinds = http.updates.items.map((u) => u.update.sessionUpdate).filter((k, i, all) => k !== all[i - 1]);
    expect(kinds).toEqual(["user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk"]);
    const text = http.updates.items.filter((u) => u.update.sessionUpdate === "agent_message_chunk").map((u) => u.update.content.text);
    expect(text.join("")).toBe("Editing a.tsanswer: allow-once");
    http.close();
    ws.close();
    agent.close();
  });
});

describe("Streamable HTTP at the byte level, against the gateway as npm start runs it", () => {
  const acp = `${url}/acp`;
  const auth = { Authorization: `Bearer ${keys.client}` };
  const postJson = (body: unknown, headers: Record<string, string> = {}, query = "") =>
    fetch(`${acp}${query}`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  it("200, 202, 401, 404, 409 and 413 (-32600)", async () => {
    const name = `e2e-codes-${Date.now()}`;
    const agent = await editingAgent(name);
    const initialize = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } };
    expect(
      (
        await fetch(`${acp}?agent=${name}`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(initialize),
        })
      ).status,
    ).toBe(401);
    const init = await postJson(initialize, {}, `?agent=${name}`);
    expect(init.status).toBe(200);
    const connectionId = init.headers.get("Acp-Connection-Id") ?? "";
    expect(((await init.json()) as Json).result.protocolVersion).toBe(1);
    const conn = { "Acp-Connection-Id": connectionId };
    const stream = await fetch(acp, { headers: { ...auth, ...conn, Accept: "text/event-stream" } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("Content-Type")).toMatch(/text\/event-stream/);
    expect((await fetch(acp, { headers: { ...auth, ...conn, Accept: "text/event-stream" } })).status).toBe(409);
    expect((await postJson({ jsonrpc: "2.0", id: 1, method: "session/list", params: {} }, conn)).status).toBe(202);
    const other = { "Acp-Connection-Id": crypto.randomUUID() };
    expect((await postJson({ jsonrpc: "2.0", id: 2, method: "session/list", params: {} }, other)).status).toBe(404);
    const notAttached = await postJson(
      { jsonrpc: "2.0", id: 3, method: "session/prompt", params: { sessionId: "s-x", prompt: [] } },
      { ...conn, "Acp-Session-Id": "s-x" },
    );
    expect(notAttached.status).toBe(409);
    const huge = await postJson({ jsonrpc: "2.0", id: 4, method: "session/list", params: { pad: "x".repeat(4 * 1024 * 1024 + 10) } }, conn);
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as Json).error.code).toBe(-32600);
    expect((await fetch(acp, { method: "DELETE", headers: { ...auth, ...conn } })).status).toBe(202);
    expect((await postJson({ jsonrpc: "2.0", id: 5, method: "session/list", params: {} }, conn)).status).toBe(404);
    await stream.body?.cancel();
    agent.close();
  });
});

describe("Streamable HTTP: a session stream cut mid-turn", () => {
  it("resumed with Last-Event-ID within the window: everything sent meanwhile, in order, once, each with its cursor; stream/resumed gives the turn's state; a forged or foreign cursor is 409", async () => {
    const name = `e2e-cut-${Date.now()}`;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (t) => {
        await t.say("before");
        await gate;
        await t.say("during-1");
        await t.say("during-2");
        await t.update({ sessionUpdate: "tool_call", ...editCall("c1") });
        const answer = await t.askPermission(editCall("c1"));
        await t.say(`answer: ${answer.outcome.optionId}`);
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const acp = `${url}/acp`;
    const auth = { Authorization: `Bearer ${keys.client}` };
    const init = await fetch(`${acp}?agent=${name}`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } }),
    });
    const conn = { "Acp-Connection-Id": init.headers.get("Acp-Connection-Id") ?? "" };
    const open = (headers: Record<string, string>, signal?: AbortSignal) =>
      fetch(acp, { headers: { ...auth, ...conn, Accept: "text/event-stream", ...headers }, signal });
    const send = (message: Json, sessionId?: string) =>
      fetch(acp, {
        method: "POST",
        headers: { ...auth, ...conn, "Content-Type": "application/json", ...(sessionId ? { "Acp-Session-Id": sessionId } : {}) },
        body: JSON.stringify({ jsonrpc: "2.0", ...message }),
      });
    const connection = sse(await open({}));
    await send({ id: 1, method: "session/new", params: { cwd: "/w", mcpServers: [] } });
    const sessionId = (await connection.next((m) => m.id === 1)).result.sessionId as string;
    const session = { "Acp-Session-Id": sessionId };

    const cut = new AbortController();
    const first = sse(await open(session, cut.signal));
    await send({ id: 2, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } }, sessionId);
    expect((await first.next((m) => m.params?.update?.content?.text === "before")).method).toBe("session/update");
    const seen = first.lastEventId;
    cut.abort(); // the network drops
    release(); // and the agent goes on meanwhile

    // A resume with the cursor takes the stream over from the reader the gateway may not yet know is gone.
    const second = sse(await open({ ...session, "Last-Event-ID": seen ?? "" }));
    // The resume acknowledgement: the turn still runs (or already waits on the permission), the prompt's id is ours.
    const resumed = await second.next((m) => m.method === "stream/resumed");
    expect(["running", "requires_action"]).toContain(resumed.params._meta["acp/turnState"].state);
    expect(resumed.params._meta["acp/turnState"].promptRequestId).toBe(2);
    const ask = await second.next((m) => m.method === "session/request_permission");
    await send({ id: ask.id, result: { outcome: { outcome: "selected", optionId: "allow-once" } } }, sessionId);
    expect((await second.next((m) => m.id === 2 && !("method" in m))).result).toEqual({ stopReason: "end_turn" });
    const texts = second.received
      .filter((m) => m.params?.update?.sessionUpdate === "agent_message_chunk")
      .map((m) => m.params.update.content.text);
    expect(texts).toEqual(["during-1", "during-2", "answer: allow-once"]);
    expect(second.received.filter((m) => m.params?.update?.sessionUpdate === "tool_call")).toHaveLength(1);
    // Every message but the acknowledgement carries its cursor, the same in the SSE id and in _meta.
    for (const m of second.received.filter((m) => m.method !== "stream/resumed")) {
      const meta = "method" in m ? m.params._meta : m._meta;
      expect(meta["acp/cursor"]).toBe(second.idOf(m));
    }
    // A cursor the gateway did not issue for this stream is refused: 409, and no stream opens.
    const forged = await open({ ...session, "Last-Event-ID": `${seen ?? ""}0` });
    expect(forged.status).toBe(409);
    expect(((await forged.json()) as Json).error.code).toBe("unknown_cursor");
    const foreign = await open({ "Last-Event-ID": seen ?? "" });
    expect(foreign.status).toBe(409);
    connection.cancel();
    second.cancel();
    agent.close();
  });
});

describe("WebSocket: a socket dropped mid-turn", () => {
  it("a new socket's stream/resume replays what was missed with its cursors, gives the turn's state, then live; a forged cursor gets stream/resume_failed", async () => {
    const name = `e2e-ws-cut-${Date.now()}`;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (t) => {
        await t.say("before");
        await gate;
        await t.say("during-1");
        await t.say("during-2");
        await t.update({ sessionUpdate: "tool_call", ...editCall("c1") });
        const answer = await t.askPermission(editCall("c1"));
        await t.say(`answer: ${answer.outcome.optionId}`);
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const first = await rawClient({ url, key: keys.client, agent: name });
    const init = await first.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(init._meta["acp/transport"]).toEqual({ resumable: { retentionMessages: 500, retentionSeconds: 30 } });
    const connectionId = init._meta.acpGateway.connectionId as string;
    const { sessionId } = (await first.request("session/new", { cwd: "/w", mcpServers: [] })) as { sessionId: string };
    first.socket.send(
      JSON.stringify({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } }),
    );
    const before = await first.received.waitFor((m) => m.params?.update?.content?.text === "before");
    first.close(); // the network drops
    release(); // and the agent goes on meanwhile

    const second = await rawClient({ url, key: keys.client, agent: name });
    const resumed = await second.request("stream/resume", { connectionId, streams: { [sessionId]: before.params._meta["acp/cursor"] } });
    expect(resumed).toEqual({ connectionId, resumed: [sessionId], refused: [] });
    const ask = await second.received.waitFor((m) => m.method === "session/request_permission");
    second.socket.send(
      JSON.stringify({ jsonrpc: "2.0", id: ask.id, result: { outcome: { outcome: "selected", optionId: "allow-once" } } }),
    );
    expect((await second.received.waitFor((m) => m.id === "p" && !("method" in m))).result).toEqual({ stopReason: "end_turn" });
    const items = second.received.items;
    const texts = items.filter((m) => m.params?.update?.sessionUpdate === "agent_message_chunk").map((m) => m.params.update.content.text);
    expect(texts).toEqual(["during-1", "during-2", "answer: allow-once"]);
    expect(items.filter((m) => m.params?.update?.sessionUpdate === "tool_call")).toHaveLength(1);
    expect(items.filter((m) => m.method === "session/request_permission")).toHaveLength(1);
    const ack = items.find((m) => m.method === "stream/resumed");
    expect(["running", "requires_action"]).toContain(ack?.params._meta["acp/turnState"].state);
    expect(ack?.params._meta["acp/turnState"].promptRequestId).toBe("p");

    const third = await rawClient({ url, key: keys.client, agent: name });
    const refused = await third.request("stream/resume", { connectionId, streams: { [sessionId]: "forged.1" } });
    expect(refused).toEqual({ connectionId: expect.any(String), resumed: [], refused: [{ sessionId, reason: "unknown_cursor" }] });
    expect((await third.received.waitFor((m) => m.method === "stream/resume_failed")).params).toEqual({
      sessionId,
      reason: "unknown_cursor",
    });
    second.close();
    third.close();
    agent.close();
  });
});

/** A minimal SSE reader over fetch: every event kept in order, with the last event id. */
function sse(response: Response) {
  if (response.status !== 200 || !response.body) throw new Error(`SSE open failed: ${response.status}`);
  const received: Json[] = [];
  const waiters: { match: (m: Json) => boolean; resolve: (m: Json) => void }[] = [];
  const state = { lastEventId: undefined as string | undefined };
  const ids = new Map<Json, string>();
  const reader = response.body.getReader();
  void (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const lines = buffer.slice(0, cut).split("\n");
        buffer = buffer.slice(cut + 2);
        const id = lines.find((l) => l.startsWith("id: "));
        const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
        if (data.length === 0) continue;
        const message = JSON.parse(data.join("\n")) as Json;
        if (id) {
          state.lastEventId = id.slice(4);
          ids.set(message, id.slice(4));
        }
        received.push(message);
        for (const w of [...waiters]) if (w.match(message)) waiters.splice(waiters.indexOf(w), 1)[0]?.resolve(message);
      }
    }
  })().catch(() => undefined);
  return {
    received,
    get lastEventId() {
      return state.lastEventId;
    },
    /** The SSE id the message came with. */
    idOf: (message: Json) => ids.get(message),
    next(match: (m: Json) => boolean, timeoutMs = 10_000): Promise<Json> {
      const found = received.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching SSE event; received ${JSON.stringify(received).slice(0, 2000)}`)),
          timeoutMs,
        );
        waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
      });
    },
    cancel: () => void reader.cancel().catch(() => undefined),
  };
}
