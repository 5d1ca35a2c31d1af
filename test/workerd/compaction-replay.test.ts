// Log compaction in the real SessionObject: live clients get the agent's frames raw; a client that
// attaches later gets the compacted history (merged chunks, folded tool calls), is told so, and
// then receives live frames with no gap and no duplicate.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { maybeFold } from "../../durable-objects/session/compaction";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { attachClient, barrier, clientWithSession, connect, dialInAgent, isMethod, seedTenant, withoutCursor } from "./helpers";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { objects } from "../../durable-objects/objects";

type Json = Record<string, any>;

describe("compact replay", () => {
  it("relays chunks raw, replays them merged and marked, tells the attaching client, then goes live without a gap", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "compact");
    const { client, sessionId } = await clientWithSession(t, agent);
    const words = ["The ", "answer ", "is ", "42."];
    for (const w of words) agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: w } });
    agent.update(sessionId, { sessionUpdate: "tool_call", toolCallId: "tc1", title: "Read file", kind: "read", status: "pending" });
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "tc1", status: "in_progress" });
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "tc1", status: "completed", content: [] });
    agent.update(sessionId, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "done" } });

    // The live client got every frame as the agent sent it.
    const live: Json[] = [];
    for (let i = 0; i < 8; i++) live.push(await client.next(isMethod("session/update")));
    expect(live.map((m) => m.params.update.content?.text ?? m.params.update.status)).toEqual([
      ...words,
      "pending",
      "in_progress",
      "completed",
      "done",
    ]);
    expect(live.every((m) => withoutCursor(m.params)._meta === undefined)).toBe(true);

    const late = await attachClient(t, agent, sessionId);
    const history = late.unclaimed().filter((m) => m.method === "session/update");
    // One merged message, then the chunks' order kept around the tool call.
    expect(history[0]?.params.update).toEqual({
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "The answer is 42." },
    });
    expect(withoutCursor(history[0]?.params ?? {})._meta).toEqual({ acpGateway: { compacted: { chunks: 4 } } });
    expect(history.map((m) => m.params.update.sessionUpdate)).toEqual([
      "agent_message_chunk",
      "tool_call",
      "tool_call_update",
      "tool_call_update",
      "agent_thought_chunk",
    ]);
    const notice = late.unclaimed().find((m) => m.method === GATEWAY_NOTIFICATIONS.historyCompacted);
    expect(notice?.params).toMatchObject({ sessionId, chunksMerged: 4, toolCallUpdatesFolded: 0 });

    // Live after history: the next chunk continues the logged message but reaches the client raw, once.
    agent.update(sessionId, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: " really" } });
    const next = await late.next((m) => m.params?.update?.content?.text === " really");
    expect(withoutCursor(next.params)._meta).toBeUndefined();
    await barrier(late, agent, sessionId);
    expect(late.unclaimed().filter((m) => m.params?.update?.content?.text === " really")).toHaveLength(0);
  });

  it("folds a long session's tool-call updates into each call's current state", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "fold");
    const { client, sessionId } = await clientWithSession(t, agent);
    // More entries than the default fold threshold (1000): 34 calls of 30 updates and a chunk each.
    const calls = 34;
    for (let c = 0; c < calls; c++) {
      agent.update(sessionId, { sessionUpdate: "tool_call", toolCallId: `tc${c}`, title: `step ${c}`, kind: "execute" });
      for (let u = 0; u < 29; u++)
        agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: `tc${c}`, status: "in_progress", rawOutput: { u } });
      agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `call ${c} done` } });
    }
    await client.next((m) => m.params?.update?.content?.text === `call ${calls - 1} done`, 90_000);

    const late = await attachClient(t, agent, sessionId);
    const history = late.unclaimed().filter((m) => m.method === "session/update");
    const folded = history.filter((m) => m.params._meta?.acpGateway?.compacted?.toolCallUpdates === 30);
    expect(folded.length).toBeGreaterThan(0);
    for (const m of folded) {
      expect(m.params.update).toMatchObject({ sessionUpdate: "tool_call", kind: "execute", status: "in_progress", rawOutput: { u: 28 } });
    }
    expect(history.length).toBeLessThan(calls * 31);
    // Every call is there once its updates were folded, in the order the calls first appeared.
    const firstSeen = history.filter((m) => m.params.update.sessionUpdate === "tool_call").map((m) => m.params.update.toolCallId);
    expect(firstSeen).toEqual(Array.from({ length: calls }, (_, c) => `tc${c}`));
    expect(late.unclaimed().find((m) => m.method === GATEWAY_NOTIFICATIONS.historyCompacted)?.params.toolCallUpdatesFolded).toBeGreaterThan(
      0,
    );
  }, 120_000);

  // The bench's replay scenario at a size streaming cannot reach in its time (100,000 events take
  // the gateway minutes to log): the log is written in the object by the same functions the session
  // runs on every update (store.appendUpdate, maybeFold), then a client attaches with session/load.
  // REPLAY_EVENTS sets the size (10,000 in `npm test`; the full bench runs 100,000 and quotes the
  // REPLAY line this prints).
  it("replays a long compacted log in full, in order, and says how long the attach took", async () => {
    const events = Number(env.REPLAY_EVENTS) > 0 ? Number(env.REPLAY_EVENTS) : 10_000;
    const t = await seedTenant();
    const agent = await dialInAgent(t, "long");
    const { sessionId } = await clientWithSession(t, agent);
    const text = (i: number) => `${"x".repeat(60)}#${i}`;
    const seedStarted = performance.now();
    await runInDurableObject(objects.session(env, t.tenantId, sessionId), (instance: SessionObject) => {
      const { store } = sessionTesting(instance);
      for (let i = 0; i < events; i++) {
        const update =
          i % 100 === 99
            ? { sessionUpdate: "tool_call", toolCallId: `r${i}`, title: `read #${i}`, kind: "read", status: "completed" }
            : { sessionUpdate: "agent_message_chunk", content: { type: "text", text: text(i) } };
        maybeFold(store, store.appendUpdate(JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId, update } })));
      }
    });
    const seedMs = performance.now() - seedStarted;

    const late = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    await late.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const started = performance.now();
    const loaded = await late.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] }, "load");
    const ms = performance.now() - started;
    expect(loaded.error).toBeUndefined();
    const history = late.unclaimed().filter((m) => m.method === "session/update");
    // Every 100 events: one merged message and one tool call.
    expect(history.length).toBe(Math.ceil(events / 100) * 2 - (events % 100 === 0 ? 0 : 1));
    const joined = history
      .filter((m) => m.params.update.sessionUpdate === "agent_message_chunk")
      .map((m) => m.params.update.content.text)
      .join("");
    expect(joined.endsWith(text(events % 100 === 0 ? events - 2 : events - 1))).toBe(true);
    expect(joined.length).toBe(Array.from({ length: events }, (_, i) => (i % 100 === 99 ? 0 : text(i).length)).reduce((a, b) => a + b, 0));
    console.log(`REPLAY ${JSON.stringify({ events, frames: history.length, ms: Math.round(ms * 10) / 10, seedMs: Math.round(seedMs) })}`);
    late.close();
  }, 300_000);
});
