// Issue 25, "Legitimate bursts lose updates" (docs/decisions/0023-agent-bursts-held.md): an agent's
// rate slows it down and never cuts its output. A burst far over the connection's rate is held at the
// edge (protocol/agent-hold.ts) and drained at the rate, in order; nothing is refused with -32029 and
// the connection stays open. BURST_UPDATES sets the burst: `npm run test:slow` sends 20,000 at the
// default 1,000 a second (they drain for about 18 s) and replays a 2,000-update history; `npm test`
// keeps every property at a fifth of the sizes, against a tenant whose agents have a fifth of the rate.

import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { METRIC } from "../../core/metrics";
import { attachClient, clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn, type Peer } from "./helpers";

type Json = Record<string, any>;

const SLOW = Number(env.BURST_UPDATES) > 0;
const BURST = SLOW ? Number(env.BURST_UPDATES) : 1000;
/** The agent connection's rate the first test runs at: the default in test:slow, a fifth of it in `npm test`. */
const AGENT_RATE = SLOW ? 1000 : 300;
/** The history the agent replays for session/load (the 2,000 in test:slow), at a rate it is 2.5 times the burst of. */
const HISTORY = SLOW ? 2000 : 600;

/** An update whose text ends with "|": a replay merges consecutive chunks, and the texts stay apart. */
function chunk(sessionId: string, text: string) {
  return { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `${text}|` } } };
}
const isChunk = (m: Json) => m.method === "session/update" && m.params?.update?.sessionUpdate === "agent_message_chunk";
const textsOf = (messages: Json[]) =>
  messages
    .filter(isChunk)
    .map((m) => m.params.update.content.text as string)
    .join("")
    .split("|")
    .slice(0, -1);

/**
 * Waits (a bound for a failure, not a measure) until the client has the update whose text is `last`;
 * the chunks it got, in order, that one last.
 */
async function chunksUntil(client: Peer, last: string, timeoutMs: number): Promise<Json[]> {
  const final = await client.next((m) => isChunk(m) && m.params.update.content.text === `${last}|`, timeoutMs);
  return [...client.unclaimed().filter(isChunk), final];
}

/** Nothing the gateway said to the agent is a refusal (-32029) or any other error. */
function noRefusals(messages: Json[]): void {
  expect(messages.filter((m) => "error" in m)).toEqual([]);
}

afterEach(() => vi.restoreAllMocks());

describe("agent bursts: held and drained at the rate, never refused", () => {
  it(`${BURST.toLocaleString("en")} session/updates sent at once reach every attached client and a late one exactly once, in order, and the turn ends normally`, async () => {
    const t = await seedTenant(SLOW ? {} : { limits: { messagesPerSecondPerAgentConnection: AGENT_RATE } });
    const agent = await dialInAgent(t);
    const { client: first, sessionId } = await clientWithSession(t, agent);
    const second = await attachClient(t, agent, sessionId);
    const prompt = await startTurn(first, agent, sessionId);
    const texts = Array.from({ length: BURST }, (_, i) => `u${i}`);
    // The precondition: far over what the connection's bucket admits at once (twice its rate).
    expect(BURST).toBeGreaterThan(2 * AGENT_RATE);
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });

    const bound = 30_000 + BURST * 20; // generous: a loaded machine is never mistaken for a loss
    expect((await first.next(isResponseTo("turn"), bound)).result).toEqual({ stopReason: "end_turn" });
    const seenBySecond = await chunksUntil(second, texts.at(-1) ?? "", bound);
    for (const seen of [first.unclaimed().filter(isChunk), seenBySecond]) {
      expect(seen.length).toBe(BURST);
      expect(textsOf(seen)).toEqual(texts);
    }
    // The turn ended as the agent ended it, not by the gateway.
    for (const client of [first, second]) expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/turn_ended")).toEqual([]);
    noRefusals(agent.peer.unclaimed());

    // A client that attaches afterwards gets the whole history in its session/load replay.
    const late = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    await late.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    late.send({ jsonrpc: "2.0", id: "load", method: "session/load", params: { sessionId, cwd: "/projects/demo", mcpServers: [] } });
    expect((await late.next(isResponseTo("load"), bound)).result).toBeDefined();
    expect(textsOf(late.unclaimed())).toEqual(texts);
    // The agent is still connected and still heard: a new turn reaches it.
    await startTurn(first, agent, sessionId, "turn-2");
  }, 600_000);

  it(`a ${HISTORY.toLocaleString("en")}-update history the agent replays for session/load (over its burst) reaches the client whole, before the load's answer`, async () => {
    // A tenant that holds its agents to a fifth of the history a second: the history at once is 2.5 times the burst.
    const t = await seedTenant({ limits: { messagesPerSecondPerAgentConnection: HISTORY / 5 } });
    const agent = await dialInAgent(t, "loader", { loadSession: true });
    const client = await connect(`/acp?agent=loader`, t.clientKey);
    await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    client.send({ jsonrpc: "2.0", id: "L", method: "session/load", params: { sessionId: "old-1", cwd: "/w", mcpServers: [] } });
    const load = await agent.peer.next(isMethod("session/load"));
    const texts = Array.from({ length: HISTORY }, (_, i) => `h${i}`);
    for (const text of texts) agent.peer.notify("session/update", chunk("old-1", text));
    agent.peer.respond(load.id, { modes: null });
    expect((await client.next(isResponseTo("L"), 60_000)).result).toEqual({ modes: null });
    expect(textsOf(client.unclaimed())).toEqual(texts);
    noRefusals(agent.peer.unclaimed());
    // Loaded again by another client: the gateway's own replay of the same history, whole.
    const again = await attachClient(t, agent, "old-1");
    expect(textsOf(again.unclaimed())).toEqual(texts);
  }, 120_000);

  it("the wait of held frames is the delivery_lag metric: counted, the longest kept, written when the agent leaves", async () => {
    const written = vi.spyOn(env.METRICS, "writeDataPoint");
    const t = await seedTenant({ limits: { messagesPerSecondPerAgentConnection: 200 } });
    const agent = await dialInAgent(t, "lagging");
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const texts = Array.from({ length: 600 }, (_, i) => `l${i}`);
    expect(texts.length).toBeGreaterThan(2 * 200); // the precondition: over the connection's burst, so frames are held
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    expect(textsOf(await chunksUntil(client, texts.at(-1) ?? "", 60_000))).toEqual(texts);
    agent.peer.close();
    const lagOf = () =>
      written.mock.calls.map(([point]) => point).filter((p) => p?.indexes?.[0] === t.tenantId && p.blobs?.[0] === METRIC.deliveryLag);
    await expect.poll(() => lagOf().length, { timeout: 10_000 }).toBeGreaterThan(0);
    const points = lagOf();
    expect(points.every((p) => p?.blobs?.[1] === "agent" && p.blobs?.[2] === "lagging")).toBe(true);
    // 600 at 200 a second with a burst of twice that: 200 frames waited, the last about a second.
    const delayed = points.reduce((sum, p) => sum + (p?.doubles?.[0] ?? 0), 0);
    expect(delayed).toBeGreaterThan(100);
    expect(Math.max(...points.map((p) => p?.doubles?.[1] ?? 0))).toBeGreaterThan(100);
  }, 120_000);
});

describe("agent bursts: the hold's byte bound", () => {
  /** An update of about 2 KiB. */
  const big = (sessionId: string, i: number) => chunk(sessionId, `${i}:${"x".repeat(2000)}`);
  const LIMITS = { messagesPerSecondPerAgentConnection: 1, heldBytesPerAgentConnection: 64 * 1024 };

  it("over the bound a request is refused -32029 (agent_hold_full) while notifications are still held; the agent is closed 4429 only once it stayed over for 5 s", async () => {
    const t = await seedTenant({ limits: LIMITS });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const started = Date.now();
    // 40 of 2 KiB at a rate of one a second: 2 pass on the burst, some 76 KiB held (over 64, under the 128 ceiling).
    for (let i = 0; i < 40; i++) agent.peer.notify("session/update", big(sessionId, i));
    agent.peer.send({ jsonrpc: "2.0", id: "over", method: "_test/no_session" });
    const refused = await agent.peer.next(isResponseTo("over"), 10_000);
    expect(refused.error).toMatchObject({
      code: -32029,
      data: { reason: "agent_hold_full", limit: "heldBytesPerAgentConnection", value: 65536 },
    });
    expect(refused.error.message).toMatch(/holds 65536 bytes of this agent's messages.*_test\/no_session was refused/);
    const closed = await agent.peer.closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
    expect(closed).toEqual({
      code: 4429,
      reason: expect.stringMatching(/^kept sending faster than 1 messages a second \(over 0\.\d MiB waiting for 5 s\)$/),
    });
    // What passed before the close reached the client in order; the turn ended naming the flood.
    const ended = await client.next(isMethod("_acp_gateway/turn_ended"), 30_000);
    expect(JSON.stringify(ended.params)).toMatch(/kept sending over its message rate/);
    const seen = textsOf(client.unclaimed()).map((text) => Number(text.split(":")[0]));
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen).toEqual(seen.map((_, i) => i));
  }, 60_000);

  it("a flood that reaches twice the bound is closed 4429 at once", async () => {
    const t = await seedTenant({ limits: LIMITS });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const started = Date.now();
    for (let i = 0; i < 100; i++) agent.peer.notify("session/update", big(sessionId, i));
    expect(await agent.peer.closed).toEqual({
      code: 4429,
      reason: expect.stringMatching(/^kept sending faster than 1 messages a second \(0\.1 MiB waiting\)$/),
    });
    expect(Date.now() - started).toBeLessThan(5000);
    await client.next(isMethod("_acp_gateway/turn_ended"), 30_000);
  }, 60_000);
});
