import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant, upgrade } from "./helpers";

describe("the edge: credentials", () => {
  it("refuses /acp without a key, or with a bad one, with 401 before the upgrade", async () => {
    for (const key of [undefined, "wrong-key"]) {
      const response = await upgrade("/acp?agent=x", key);
      expect(response.status).toBe(401);
      expect(response.webSocket).toBeNull();
      expect(await response.json()).toMatchObject({ error: { code: "unauthorized" } });
    }
  });

  it("refuses an agent key on /acp and a client key on /agents/NAME/connect with 403", async () => {
    const t = await seedTenant();
    expect((await upgrade("/acp?agent=x", t.agentKey)).status).toBe(403);
    expect((await upgrade("/agents/x/connect", t.clientKey)).status).toBe(403);
  });

  it("refuses the key as the legacy acp.bearer subprotocol unless the tenant turned it on", async () => {
    const t = await seedTenant();
    const refused = await upgrade("/acp?agent=x", undefined, { "Sec-WebSocket-Protocol": `acp.v1, acp.bearer.${t.clientKey}` });
    expect(refused.status).toBe(401);
    expect(refused.webSocket).toBeNull();
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /acp\.bearer.*off for this tenant.*POST \/v1\/tickets/,
    );
    const legacy = await seedTenant({ legacyBearerSubprotocol: true });
    const response = await upgrade("/acp?agent=x", undefined, { "Sec-WebSocket-Protocol": `acp.v1, acp.bearer.${legacy.clientKey}` });
    expect(response.status).toBe(101);
    expect(response.headers.get("Sec-WebSocket-Protocol")).toBe("acp.v1");
  });

  it("answers 406 to a GET of /acp that is neither a WebSocket upgrade nor an SSE stream, and 404 JSON for unknown routes", async () => {
    const t = await seedTenant();
    const plain = await SELF.fetch("http://gateway.test/acp?agent=x", { headers: { Authorization: `Bearer ${t.clientKey}` } });
    expect(plain.status).toBe(406);
    const missing = await SELF.fetch("http://gateway.test/nope");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "not_found" } });
  });
});

describe("the edge: bad input gets a clear JSON-RPC error and harms nothing", () => {
  it("answers malformed JSON, batches, unknown methods, wrong sessionIds and oversized frames, and the session goes on", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);

    client.send("{this is not json");
    expect((await client.next((m) => m.error?.code === -32700)).id).toBeNull();

    client.send('[{"jsonrpc":"2.0","id":1,"method":"session/list"}]');
    expect((await client.next((m) => m.error?.code === -32600)).error.message).toMatch(/batch/);

    const unknown = await client.request("frobnicate", {});
    expect(unknown.error.code).toBe(-32601);

    const foreign = await client.request("session/prompt", { sessionId: "not-a-session", prompt: [] });
    expect(foreign.error).toMatchObject({ code: -32002 });

    const badType = await client.request("session/prompt", { sessionId: 12, prompt: [] });
    expect(badType.error.code).toBe(-32602);

    const huge = await client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "x".repeat(4 * 1024 * 1024 + 10) }] });
    expect(huge.error.code).toBe(-32600);
    expect(huge.error.message).toMatch(/too large/);

    // The session and the agent are unharmed.
    client.send({ jsonrpc: "2.0", id: "ok", method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("ok"))).result.stopReason).toBe("end_turn");
  });

  it("refuses a second prompt while a turn runs, with an explained error; the turn goes on", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    const second = await client.request("session/prompt", { sessionId, prompt: [] }, 2);
    expect(second.error.code).toBe(-32600);
    expect(second.error.message).toMatch(/turn is already running/);
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo(1))).result.stopReason).toBe("end_turn");
  });

  it("answers an agent's malformed frame and its request for an unknown session without harm", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    agent.peer.send("not json");
    expect((await agent.peer.next((m) => m.error?.code === -32700)).id).toBeNull();
    agent.peer.send({
      jsonrpc: "2.0",
      id: 99,
      method: "session/request_permission",
      params: { sessionId: "other", toolCall: { toolCallId: "x" }, options: [] },
    });
    expect((await agent.peer.next(isResponseTo(99))).error.code).toBe(-32002);
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "still here" } });
    expect((await client.next(isMethod("session/update"))).params.update.content.text).toBe("still here");
  });
});

describe("agents", () => {
  it("an agent that reconnects under the same name takes over; the old socket closes", async () => {
    const t = await seedTenant();
    const first = await dialInAgent(t, "same");
    const second = await dialInAgent(t, "same");
    const closed = await first.peer.closed;
    expect(closed.code).toBe(4000);
    const client = await connect("/acp?agent=same", t.clientKey);
    await client.request("initialize", { protocolVersion: 1 });
    client.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/", mcpServers: [] } });
    const id = await second.acceptNewSession();
    expect((await client.next(isResponseTo(1))).result.sessionId).toBe(id);
  });

  it("tells the client clearly when the agent is not connected", async () => {
    const t = await seedTenant();
    const client = await connect("/acp?agent=absent", t.clientKey);
    const init = await client.request("initialize", { protocolVersion: 1 });
    expect(init.result._meta.acpGateway.agentConnected).toBe(false);
    const created = await client.request("session/new", { cwd: "/", mcpServers: [] });
    expect(created.error.message).toMatch(/not connected/);
  });
});
