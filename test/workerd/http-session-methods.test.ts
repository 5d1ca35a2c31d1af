// Stable ACP v1 methods when several clients share a session, on either transport.
import { describe, expect, it } from "vitest";
import { attachClient, barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { httpConnect } from "./http-helpers";

describe("session/close with several clients", { timeout: 20_000 }, () => {
  it("detaches only the closing client: the others go on, the agent is not told, updates stop reaching the closer", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    const closed = await alice.request("session/close", { sessionId });
    expect(closed.result).toEqual({});
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "after" } });
    expect((await bob.next(isMethod("session/update"))).params.update.content.text).toBe("after");
    await barrier(bob, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/close")).toEqual([]);
    expect(alice.unclaimed().filter((m) => m.method === "session/update")).toEqual([]);
  });

  it("over HTTP: answered on the session's stream, then the session is 409 until session/load", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const http = await httpConnect(t.clientKey, agent.name);
    const created = await http.request("session/new", { cwd: "/w", mcpServers: [] });
    const sessionId = await agent.acceptNewSession();
    await http.stream.next(isResponseTo(created.id));
    const session = await http.openSession(sessionId);
    const close = await http.request("session/close", { sessionId }, sessionId);
    expect((await session.next(isResponseTo(close.id))).result).toEqual({});
    expect((await http.request("session/prompt", { sessionId, prompt: [] }, sessionId)).response.status).toBe(409);
    const load = await http.request("session/load", { sessionId, cwd: "/w", mcpServers: [] }, sessionId);
    expect(load.response.status).toBe(202);
    expect((await session.next(isResponseTo(load.id))).error).toBeUndefined();
  });
});
