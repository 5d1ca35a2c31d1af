// Limits that span connections (issue 11, "Bounded, with clear errors"): the tenant's message rate
// shared by all its client and agent connections, an agent connection's own rate, concurrent
// connections per key (WebSocket and Streamable HTTP), and the HTTP path's message rate (issue 13).
// Each is a per-tenant setting; each refusal says which limit and what to do.

import { describe, expect, it } from "vitest";
import { type Peer, connect, dialInAgent, isResponseTo, seedTenant, upgrade } from "./helpers";
import { httpConnect, post } from "./http-helpers";

type Json = Record<string, any>;

const LIMITED = -32029;

describe("limits: the tenant's message rate, across its connections", () => {
  it("two client connections together are held to the tenant's rate: refusals name messagesPerSecondPerTenant", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerTenant: 10 } });
    const a = await initialized(t.clientKey);
    const b = await initialized(t.clientKey2);
    const started = Date.now();
    const answers = await Promise.all([pings(a, "a", 30), pings(b, "b", 30)]).then((both) => both.flat());
    const elapsed = (Date.now() - started) / 1000;
    const refused = answers.filter((m) => m.error?.code === LIMITED);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]?.error).toMatchObject({ data: { reason: "tenant_rate_limited", limit: "messagesPerSecondPerTenant", value: 10 } });
    expect(refused[0]?.error.message).toMatch(/across all clients and agents.*_test\/ping was refused/);
    // Within the bucket (twice the rate) plus the refill, plus at most one lease batch (8) per connection on credit.
    const admitted = answers.length - refused.length + 2; // + the two initialize
    expect(admitted).toBeLessThanOrEqual(20 + Math.ceil(10 * elapsed) + 2 * 8);
    // Each connection alone (60 messages, 100/s each) is well within its own rate: no refusal names it.
    expect(answers.filter((m) => m.error?.data?.limit === "messagesPerSecondPerConnection")).toEqual([]);
  });

  it("an agent's burst is held for the tenant's rate, not refused, and uses it up for its people's clients too", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerTenant: 10 } });
    const agent = await dialInAgent(t);
    for (let i = 0; i < 40; i++) agent.peer.send({ jsonrpc: "2.0", id: `flood-${i}`, method: "_test/no_session" });
    const agentAnswers = await Promise.all(Array.from({ length: 40 }, (_, i) => agent.peer.next(isResponseTo(`flood-${i}`), 30_000)));
    // Every one reached the gateway (answered for what it is), none refused for the rate (decision 0023).
    expect(agentAnswers.filter((m) => m.error?.code === LIMITED)).toEqual([]);
    expect(agentAnswers.every((m) => m.error?.message.includes("params.sessionId"))).toBe(true);
    const client = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    client.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
    await client.next(isResponseTo("init"));
    // A client's frames wait out the tenant's refusal for up to two seconds (decision 0070): thirty at
    // once against a bucket the agent emptied, refilling at 10 a second, outlast that, and the rest are refused.
    const answers = await pings(client, "c", 30);
    expect(answers.some((m) => m.error?.data?.limit === "messagesPerSecondPerTenant")).toBe(true);
  });
});

describe("limits: an agent connection's message rate", () => {
  it("holds the agent's messages over its rate and passes them at it, in order: none refused, none lost, the connection open", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerAgentConnection: 5 } });
    const agent = await dialInAgent(t);
    const started = Date.now();
    for (let i = 0; i < 15; i++) agent.peer.send({ jsonrpc: "2.0", id: i, method: "_test/no_session" });
    const answers = await Promise.all(Array.from({ length: 15 }, (_, i) => agent.peer.next(isResponseTo(i), 30_000)));
    const elapsed = Date.now() - started;
    expect(answers.filter((m) => m.error?.code === LIMITED)).toEqual([]);
    // The burst of 10 at once, the 5 more at 5 a second: never faster than the rate.
    expect(elapsed).toBeGreaterThanOrEqual(900);
    // A notification over the rate is held too: no error with id null.
    agent.peer.send({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: {} } });
    agent.peer.send({ jsonrpc: "2.0", id: "last", method: "_test/no_session" });
    await agent.peer.next(isResponseTo("last"), 30_000);
    expect(agent.peer.unclaimed().filter((m) => m.id === null)).toEqual([]);
  });

  it("holds an agent to the agent rate, not the client's: 60 messages at once pass where a client's rate is 5", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerConnection: 5 } });
    const agent = await dialInAgent(t);
    for (let i = 0; i < 60; i++) agent.peer.send({ jsonrpc: "2.0", id: i, method: "_test/no_session" });
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => agent.peer.next(isResponseTo(i))));
    expect(answers.filter((m) => m.error?.code === LIMITED)).toEqual([]);
  });
});

describe("limits: concurrent connections per key", () => {
  it("refuses a key's connection beyond connectionsPerKey with 429 and what to do, on WebSocket and on Streamable HTTP; other keys are not counted", async () => {
    const t = await seedTenant({ limits: { connectionsPerKey: 2 } });
    const first = await initialized(t.clientKey);
    await httpConnect(t.clientKey, "none");
    const refusedWs = await upgrade("/acp?agent=none", t.clientKey);
    expect(refusedWs.status).toBe(429);
    const body = (await refusedWs.json()) as Json;
    expect(body.error).toMatchObject({ code: "too_many_connections" });
    expect(body.error.message).toMatch(/already has 2 connections open.*Close one.*connectionsPerKey/);
    const refusedHttp = await post(t.clientKey, initializeMessage, {}, "?agent=none");
    expect(refusedHttp.status).toBe(429);
    expect(((await refusedHttp.json()) as Json).error.code).toBe("too_many_connections");
    // Another person's key has its own slots.
    expect((await upgrade("/acp?agent=none", t.clientKey2)).status).toBe(101);
    // A connection that ends frees its slot.
    first.close();
    await first.closed;
    expect(await eventuallyOpens(t.clientKey)).toBe(101);
  });

  it("an HTTP connection ended with DELETE frees its slot: the next connection opens right after", async () => {
    const t = await seedTenant({ limits: { connectionsPerKey: 1 } });
    const http = await httpConnect(t.clientKey, "none");
    expect((await upgrade("/acp?agent=none", t.clientKey)).status).toBe(429);
    expect((await http.del()).status).toBe(202);
    expect((await upgrade("/acp?agent=none", t.clientKey)).status).toBe(101);
  });
});

describe("limits: the Streamable HTTP path's message rate", () => {
  it("answers a POST over the rate 429 with Retry-After and the JSON-RPC error, and never ends the connection for it", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerConnection: 5 } });
    const http = await httpConnect(t.clientKey, "none");
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => http.send({ id: 100 + i, method: "_test/ping" })));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 202 || s === 429)).toBe(true);
    const limited = responses.find((r) => r.status === 429);
    expect(Number(limited?.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    const body = (await limited?.json()) as Json;
    expect(body).toMatchObject({
      jsonrpc: "2.0",
      error: { code: LIMITED, data: { reason: "rate_limited", limit: "messagesPerSecondPerConnection", value: 5 } },
    });
    expect(body.error.message).toMatch(/_test\/ping was refused/);
    // Answers to the gateway's requests are not messages the client chose to send: never refused.
    expect((await http.send({ id: 9_999, result: {} })).status).toBe(202);
  });

  it("holds HTTP and WebSocket clients to one tenant rate together", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerTenant: 10 } });
    const ws = await initialized(t.clientKey);
    await pings(ws, "ws", 30);
    const http = await httpConnect(t.clientKey2, "none");
    // Beyond what the tenant's bucket refilled meanwhile and one lease batch (8) on credit.
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => http.send({ id: 200 + i, method: "_test/ping" })));
    const limited = responses.find((r) => r.status === 429);
    expect(limited).toBeDefined();
    expect(((await limited?.json()) as Json).error.data.limit).toBe("messagesPerSecondPerTenant");
  });
});

const initializeMessage = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } };

/** A client connection past its first frame, which must be initialize (the RFD's rule). */
async function initialized(key: string): Promise<Peer> {
  const client = await connect("/acp?agent=none", key);
  client.send({ ...initializeMessage, id: "init" });
  await client.next(isResponseTo("init"));
  return client;
}

/** Sends `count` requests the gateway answers itself and returns the answers. */
function pings(client: Peer, prefix: string, count: number): Promise<Json[]> {
  for (let i = 0; i < count; i++) client.send({ jsonrpc: "2.0", id: `${prefix}-${i}`, method: "_test/ping" });
  return Promise.all(Array.from({ length: count }, (_, i) => client.next(isResponseTo(`${prefix}-${i}`))));
}

/**
 * A WebSocket's slot is freed by a call the edge makes after the socket's close, which the closing
 * side cannot observe: the upgrade is retried until that call has landed (bounded; DELETE on HTTP,
 * by contrast, answers only once its slot is free).
 */
async function eventuallyOpens(key: string): Promise<number> {
  let status = 0;
  for (let attempt = 0; attempt < 50 && status !== 101; attempt++) {
    const response = await upgrade("/acp?agent=none", key);
    status = response.status;
    response.webSocket?.accept();
    response.webSocket?.close(1000, "done");
    if (status !== 101) await scheduler.wait(20);
  }
  return status;
}
