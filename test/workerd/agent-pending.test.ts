// What the AgentObject awaits from the agent in memory (agent-object.ts `waiters`, `initWaiters`,
// both durable-objects/pending.ts): a session/new answered by its own id whatever the order, one
// left unanswered when the agent goes answered at once naming why, and a client's initialize that
// waits for a freshly connected agent's own initialize.

import { describe, expect, it } from "vitest";
import { connect, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";

const NEW_SESSION = { cwd: "/projects/demo", mcpServers: [] };

async function initializedClient(tenant: { clientKey: string }, agent: string) {
  const client = await connect(`/acp?agent=${agent}`, tenant.clientKey);
  const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  expect(init.error).toBeUndefined();
  return { client, init };
}

describe("the AgentObject's pending requests to the agent", () => {
  it("two session/new in flight, answered in the reverse order: each client gets the session its own request created", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: first } = await initializedClient(t, agent.name);
    const { client: second } = await initializedClient(t, agent.name);
    const firstCreated = first.request("session/new", NEW_SESSION, "first");
    const firstAsked = await agent.peer.next(isMethod("session/new"));
    const secondCreated = second.request("session/new", NEW_SESSION, "second");
    const secondAsked = await agent.peer.next(isMethod("session/new"));
    expect(secondAsked.id).not.toBe(firstAsked.id);
    agent.peer.respond(secondAsked.id, { sessionId: "sess-second" });
    expect((await secondCreated).result?.sessionId).toBe("sess-second");
    agent.peer.respond(firstAsked.id, { sessionId: "sess-first" });
    expect((await firstCreated).result?.sessionId).toBe("sess-first");
    agent.peer.close();
  });

  it("the agent goes with session/new unanswered: the client is answered with an error naming the disconnect, and the next agent serves the next session/new", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client } = await initializedClient(t, agent.name);
    const created = client.request("session/new", NEW_SESSION, "orphan");
    await agent.peer.next(isMethod("session/new")); // the request is with the agent
    agent.peer.close();
    const failed = await created;
    expect(failed.error?.code).toBe(-32603);
    expect(failed.error?.message).toMatch(/The agent disconnected \(.+\) before answering/);
    // Nothing is left waiting: a new connection of the agent answers a new session/new.
    const next = await dialInAgent(t, agent.name);
    const again = client.request("session/new", NEW_SESSION, "again");
    const sessionId = await next.acceptNewSession();
    expect((await again).result?.sessionId).toBe(sessionId);
    next.peer.close();
  });

  it("a client's initialize sent before a freshly connected agent has answered its own initialize carries the agent's info (it waits for that answer)", async () => {
    const t = await seedTenant();
    const peer = await connect("/agents/late/connect", t.agentKey);
    const agentInit = await peer.next(isMethod("initialize")); // asked, not answered yet
    const client = await connect("/acp?agent=late", t.clientKey);
    client.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
    peer.respond(agentInit.id, { protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "late-agent", version: "2.0.0" } });
    const init = await client.next(isResponseTo("init"));
    expect(init.result?.agentInfo).toEqual({ name: "late-agent", version: "2.0.0" });
    peer.close();
  });
});
