// An agent that answers the gateway's initialize with an error (a v2-only agent: -32022 Unsupported
// protocol version) is failing, not connected: the API lists it failing with its message, and every
// client whose initialize or session/new names it gets an error carrying that message, not empty
// capabilities (decision 0042).

import { describe, expect, it } from "vitest";
import { type SeededTenant, api, connect, isMethod, seedTenant } from "./helpers";

/** An agent that dials in and refuses the gateway's initialize as a v2-only agent does; the protocolVersion it was offered. */
async function refusingAgent(t: SeededTenant, name: string) {
  const peer = await connect(`/agents/${name}/connect`, t.agentKey);
  const init = await peer.next(isMethod("initialize"));
  peer.send({ jsonrpc: "2.0", id: init.id, error: { code: -32022, message: "Unsupported protocol version" } });
  return { peer, offered: init.params.protocolVersion as unknown };
}

const MESSAGE = `The agent "v2only" refused the gateway's initialize: Unsupported protocol version (-32022)`;

describe("an agent whose initialize fails", () => {
  it("is offered protocolVersion 1, and GET /v1/agents lists it failing with its message, not connected", async () => {
    const t = await seedTenant();
    const { offered } = await refusingAgent(t, "v2only");
    expect(offered).toBe(1);
    const page = (await (await api("/v1/agents?status=1", t.clientKey)).json()) as { items: Record<string, unknown>[] };
    expect(page.items.find((a) => a.name === "v2only")).toMatchObject({ connected: false, failing: MESSAGE });
  });

  it("a client's initialize naming it fails with the agent's message; so does session/new, and nothing reaches the agent", async () => {
    const t = await seedTenant();
    const { peer } = await refusingAgent(t, "v2only");
    const client = await connect("/acp?agent=v2only", t.clientKey);
    const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(init.result).toBeUndefined();
    expect(init.error).toMatchObject({ message: MESSAGE, data: { reason: "agent_failing", agent: "v2only" } });
    const created = await client.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
    expect(created.error).toMatchObject({ message: MESSAGE, data: { reason: "agent_failing" } });
    expect(peer.unclaimed().filter((m) => m.method === "session/new")).toEqual([]);
  });

  it("a new connection of the agent that answers initialize is connected again", async () => {
    const t = await seedTenant();
    const first = await refusingAgent(t, "v2only");
    first.peer.close();
    await first.peer.closed;
    const again = await connect("/agents/v2only/connect", t.agentKey);
    const init = await again.next(isMethod("initialize"));
    again.respond(init.id, { protocolVersion: 1, agentCapabilities: { loadSession: false }, authMethods: [] });
    const client = await connect("/acp?agent=v2only", t.clientKey);
    const answer = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(answer.error).toBeUndefined();
    expect(answer.result._meta.acpGateway.agentConnected).toBe(true);
  });

  it("an agent that answers initialize with another protocolVersion (2) is failing too, saying so, and gets no session (decision 0060)", async () => {
    const t = await seedTenant();
    const peer = await connect("/agents/v2agent/connect", t.agentKey);
    const init = await peer.next(isMethod("initialize"));
    peer.respond(init.id, { protocolVersion: 2, capabilities: {}, info: { name: "v2", version: "1" }, authMethods: [] });
    const client = await connect("/acp?agent=v2agent", t.clientKey);
    const answer = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(answer.error).toMatchObject({ data: { reason: "agent_failing", agent: "v2agent" } });
    expect(answer.error.message).toMatch(/answered protocolVersion 2; the gateway speaks ACP v1 only/);
    const created = await client.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
    expect(created.error).toMatchObject({ data: { reason: "agent_failing" } });
    expect(peer.unclaimed().filter((m) => m.method === "session/new")).toEqual([]);
  });
});
