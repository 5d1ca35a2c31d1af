// Messages per second on a client connection: over the rate a request gets a clear JSON-RPC error,
// a sustained flood closes the connection with 4429 and a reason; within the rate nothing changes.

import { describe, expect, it } from "vitest";
import { type ScriptedAgent, clientWithSession, connect, dialInAgent, isResponseTo, seedTenant } from "./helpers";

describe("reliability: message rate per client connection", () => {
  it("answers a request over the tenant's rate with -32029 naming the limit, then closes a connection that keeps flooding", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerConnection: 5 } });
    const client = await initialized(t.clientKey);
    for (let i = 0; i < 15; i++) client.send({ jsonrpc: "2.0", id: i, method: "_test/ping" });
    const answers = await Promise.all(Array.from({ length: 15 }, (_, i) => client.next((m) => m.id === i)));
    const refused = answers.filter((a) => a.error?.code === -32029);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused[0]?.error).toMatchObject({ data: { reason: "rate_limited", limit: "messagesPerSecondPerConnection", value: 5 } });
    expect(refused[0]?.error.message).toMatch(/limit is 5 a second.*_test\/ping was refused/);
    for (let i = 0; i < 100; i++) client.send({ jsonrpc: "2.0", id: `flood-${i}`, method: "_test/ping" });
    const closed = await client.closed;
    expect(closed.code).toBe(4429);
    expect(closed.reason).toMatch(/over 5 messages a second/);
  });

  it("leaves a connection within its rate alone", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerConnection: 5 } });
    const client = await initialized(t.clientKey);
    // initialize was one message: nine more stay within the burst of ten (twice the rate).
    for (let i = 0; i < 9; i++) client.send({ jsonrpc: "2.0", id: i, method: "_test/ping" });
    const answers = await Promise.all(Array.from({ length: 9 }, (_, i) => client.next((m) => m.id === i)));
    expect(answers.filter((a) => a.error?.code === -32029)).toEqual([]);
  });
});

describe("reliability: live sessions per tenant", () => {
  it("refuses session/new beyond the tenant's live sessions with a clear error, before the agent is asked", async () => {
    const t = await seedTenant({ limits: { liveSessionsPerTenant: 1 } });
    const agent = await dialInAgent(t);
    const { client } = await clientWithSession(t, agent);
    const refused = await client.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
    expect(refused.error).toMatchObject({ code: -32029, data: { reason: "live_session_limit", limit: "liveSessionsPerTenant", value: 1 } });
    expect(refused.error.message).toMatch(/already has 1 live sessions/);
    await barrierAgent(agent);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/new")).toEqual([]);
  });
});

/** A client connection past its first frame, which must be initialize (the RFD's rule). */
async function initialized(key: string) {
  const client = await connect("/acp?agent=none", key);
  client.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  await client.next((m) => m.id === "init");
  return client;
}

/** Once the agent has the AgentObject's own answer to this frame, anything sent to it before has arrived. */
async function barrierAgent(agent: ScriptedAgent): Promise<void> {
  const id = `barrier-${crypto.randomUUID()}`;
  agent.peer.send({ jsonrpc: "2.0", id, method: "_test/no_session" });
  await agent.peer.next(isResponseTo(id));
}
