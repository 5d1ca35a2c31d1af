import { describe, expect, it } from "vitest";
import { attachClient, clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant, withoutCursor } from "./helpers";

describe("attaching to a live session with session/load", () => {
  it("replays history, answers the load, re-sends the pending request, then streams live — no gap, no duplicate", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    alice.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "hello" }] } });
    await agent.peer.next(isMethod("session/prompt"));
    for (let i = 0; i < 5; i++) agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `c${i}` } });
    agent.update(sessionId, { sessionUpdate: "tool_call", toolCallId: "t1", title: "Read", kind: "read", status: "pending" });
    agent.askPermission(sessionId, { toolCallId: "t1", status: "pending" });
    await alice.next(isMethod("session/request_permission"));

    const bob = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    await bob.request("initialize", { protocolVersion: 1 });
    bob.send({ jsonrpc: "2.0", id: "load", method: "session/load", params: { sessionId, cwd: "/projects/demo", mcpServers: [] } });
    const loaded = await bob.next(isResponseTo("load"));
    expect(loaded.result.modes.currentModeId).toBe("code");
    // Everything before the load answer is the replay: the user's prompt, the chunks (merged into one
    // message by log compaction, and the client told so) and the tool call.
    const replay = bob.unclaimed().filter((m) => m.method === "session/update");
    expect(replay.map((m) => m.params.update.sessionUpdate)).toEqual(["user_message_chunk", "agent_message_chunk", "tool_call"]);
    expect(replay[0]?.params.update.content).toEqual({ type: "text", text: "hello" });
    expect(replay[1]?.params.update.content).toEqual({ type: "text", text: "c0c1c2c3c4" });
    await bob.next(isMethod("_acp_gateway/history_compacted"));
    const pending = await bob.next(isMethod("session/request_permission"));
    expect(pending.params.toolCall.toolCallId).toBe("t1");
    for (const m of replay) await bob.next((x) => x === m || x.method === "session/update");
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "live" } });
    const live = await bob.next(isMethod("session/update"));
    expect(live.params.update.content.text).toBe("live");
    expect(bob.unclaimed()).toEqual([]);
  });

  it("relays unknown update kinds, _meta and extension fields deep-equal to what the agent sent", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const sent = {
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId,
        update: { sessionUpdate: "future_kind_v9", payload: { nested: [1, { deep: true }] }, _meta: { vendor: { x: 1 } } },
        _meta: { trace: "abc" },
        extra: "kept",
      },
    };
    agent.peer.send(sent);
    expect(withoutCursor(await client.next(isMethod("session/update")))).toEqual(sent);
    const late = await attachClient(t, agent, sessionId, t.clientKey);
    expect(withoutCursor(late.raw.map((r) => JSON.parse(r)).find((m) => m.method === "session/update"))).toEqual(sent);
    const ext = { jsonrpc: "2.0", method: "_vendor/notice", params: { sessionId, anything: [true] } };
    agent.peer.send(ext);
    expect(withoutCursor(await client.next(isMethod("_vendor/notice")))).toEqual(ext);
  });

  it("answers session/list from the tenant's sessions index", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const list = await client.request("session/list", {});
    expect(list.result.sessions.map((s: { sessionId: string }) => s.sessionId)).toEqual([sessionId]);
    expect(list.result.sessions[0].cwd).toBe("/projects/demo");
  });

  it("refuses session/load of an unknown session with -32002 when the agent cannot load", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const client = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    await client.request("initialize", { protocolVersion: 1 });
    const answer = await client.request("session/load", { sessionId: "nope", cwd: "/", mcpServers: [] });
    expect(answer.error.code).toBe(-32002);
  });

  it("forwards session/load of a session it does not hold to an agent that can load, and keeps the replayed history", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "loader", { loadSession: true });
    const client = await connect(`/acp?agent=loader`, t.clientKey);
    const init = await client.request("initialize", { protocolVersion: 1 });
    expect(init.result.agentCapabilities.loadSession).toBe(true);
    client.send({ jsonrpc: "2.0", id: "L", method: "session/load", params: { sessionId: "old-1", cwd: "/w", mcpServers: [] } });
    const load = await agent.peer.next(isMethod("session/load"));
    agent.update("old-1", { sessionUpdate: "user_message_chunk", content: { type: "text", text: "from before" } });
    agent.peer.respond(load.id, { modes: null });
    const answer = await client.next(isResponseTo("L"));
    expect(answer.result).toEqual({ modes: null });
    const history = client.unclaimed().filter((m) => m.method === "session/update");
    expect(history.map((m) => m.params.update.content.text)).toEqual(["from before"]);
  });

  it("answers initialize itself with the agent's capabilities and loadSession true", async () => {
    const t = await seedTenant();
    await dialInAgent(t, "caps", { promptCapabilities: { image: true, audio: false } });
    const client = await connect(`/acp?agent=caps`, t.clientKey);
    const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(init.result.protocolVersion).toBe(1);
    expect(init.result.agentCapabilities).toMatchObject({ loadSession: true, promptCapabilities: { image: true, audio: false } });
    expect(init.result.agentInfo).toEqual({ name: "scripted-agent", version: "1.0.0" });
  });
});

describe("one connection, several sessions", () => {
  it("routes each session's traffic and rewrites colliding request ids from two sessions on one connection", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId: first } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "second", method: "session/new", params: { cwd: "/projects/other", mcpServers: [] } });
    const second = await agent.acceptNewSession();
    expect((await client.next(isResponseTo("second"))).result.sessionId).toBe(second);
    for (const sessionId of [first, second]) {
      client.send({ jsonrpc: "2.0", id: `turn-${sessionId}`, method: "session/prompt", params: { sessionId, prompt: [] } });
      await agent.peer.next(isMethod("session/prompt"));
    }

    const askFirst = agent.askPermission(first, { toolCallId: "a", kind: "read" });
    const askSecond = agent.askPermission(second, { toolCallId: "b", kind: "read" });
    const copies = [await client.next(isMethod("session/request_permission")), await client.next(isMethod("session/request_permission"))];
    expect(copies[0]?.id).not.toBe(copies[1]?.id);
    const bySession = Object.fromEntries(copies.map((c) => [c.params.sessionId, c]));
    client.respond(bySession[second]?.id, { outcome: { outcome: "selected", optionId: "reject" } });
    client.respond(bySession[first]?.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(askSecond))).result.outcome.optionId).toBe("reject");
    expect((await agent.peer.next(isResponseTo(askFirst))).result.outcome.optionId).toBe("allow");
  });

  it("answers session/load with the current mode after a mode change", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    agent.update(sessionId, { sessionUpdate: "current_mode_update", currentModeId: "plan" });
    await client.next(isMethod("session/update")); // the session applied it before fanning it out
    const late = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    await late.request("initialize", { protocolVersion: 1 });
    const loaded = await late.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
    expect(loaded.result.modes.currentModeId).toBe("plan");
  });

  it("answers session/load with the configuration options another client set, and those the agent reported since", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const model = (value: string) => [{ id: "model", name: "Model", type: "select", currentValue: value, options: [] }];
    const set = client.request("session/set_config_option", { sessionId, configId: "model", value: "large" });
    const asked = await agent.peer.next(isMethod("session/set_config_option"));
    agent.peer.send({ jsonrpc: "2.0", id: asked.id, result: { configOptions: model("large") } });
    await set;
    const late = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    await late.request("initialize", { protocolVersion: 1 });
    const loaded = await late.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
    expect(loaded.result.configOptions).toEqual(model("large"));
    agent.update(sessionId, { sessionUpdate: "config_option_update", configOptions: model("small") });
    await late.next((m) => m.params?.update?.sessionUpdate === "config_option_update");
    const third = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    await third.request("initialize", { protocolVersion: 1 });
    const again = await third.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
    expect(again.result.configOptions).toEqual(model("small"));
  });
});
