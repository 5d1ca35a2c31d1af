// The gateway as `npm start` runs it, driven by real SDK peers over WebSocket on loopback.
import { describe, expect, inject, it } from "vitest";
import { type TestClient, connectClient, dialInAgent, rawClient, waitForAgent, withoutCursor } from "./peers";
import { tenantOfItsOwn } from "./tenants";

const url = inject("gatewayUrl");
const keys = inject("keys");

describe("end to end with SDK peers", () => {
  it("relays a prompt turn: streamed text and a tool call pending → in_progress → completed with content and locations", async () => {
    const name = `e2e-turn-${Date.now()}`;
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        await turn.say("Hello ");
        await turn.say("world");
        await turn.update({
          sessionUpdate: "tool_call",
          toolCallId: "t1",
          title: "Read a.ts",
          kind: "read",
          status: "pending",
          locations: [{ path: "/w/a.ts", line: 3 }],
        });
        await turn.update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" });
        await turn.update({
          sessionUpdate: "tool_call_update",
          toolCallId: "t1",
          status: "completed",
          content: [{ type: "content", content: { type: "text", text: "contents" } }],
        });
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const client = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const result = await client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "read a.ts" }] });
    expect(result).toEqual({ stopReason: "end_turn" });
    const kinds = client.updates.items.map((u) => u.update.sessionUpdate);
    expect(kinds).toEqual(["agent_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update", "tool_call_update"]);
    expect(client.updates.items.map((u) => u.update.status).filter(Boolean)).toEqual(["pending", "in_progress", "completed"]);
    expect(client.updates.items[2]?.update.locations).toEqual([{ path: "/w/a.ts", line: 3 }]);
    expect(client.updates.items[4]?.update.content).toEqual([{ type: "content", content: { type: "text", text: "contents" } }]);
    const snapshot = (await (
      await fetch(`${url}/v1/sessions/${sessionId}`, { headers: { Authorization: `Bearer ${keys.client}` } })
    ).json()) as Record<string, any>;
    expect(snapshot.toolCalls).toEqual([
      {
        toolCallId: "t1",
        title: "Read a.ts",
        kind: "read",
        status: "completed",
        locations: [{ path: "/w/a.ts", line: 3 }],
        content: [{ type: "content", content: { type: "text", text: "contents" } }],
      },
    ]);
    client.close();
    agent.close();
  });

  it("sends a permission request to both clients; one answers, the other's copy is withdrawn", async () => {
    const name = `e2e-perm-${Date.now()}`;
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        const answer = await turn.askPermission({
          toolCallId: "e1",
          title: "Edit",
          kind: "edit",
          status: "pending",
          locations: [{ path: "/w/b.ts" }],
        });
        await turn.say(`answer: ${answer.outcome.optionId}`);
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const alice = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await alice.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const bob = await connectClient({ url, key: keys.client, agent: name });
    await bob.request("session/load", { sessionId, cwd: "/w", mcpServers: [] });
    const prompt = alice.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit" }] });
    const [a, b] = await Promise.all([alice.permissions.waitFor(() => true), bob.permissions.waitFor(() => true)]);
    expect(withoutCursor(a.params)).toEqual(withoutCursor(b.params));
    b.answer({ outcome: { outcome: "selected", optionId: "reject-once" } });
    // Withdrawn with $/cancel_request (the SDK aborts with -32800), not by the connection closing.
    await expect(a.answered).rejects.toMatchObject({ code: -32800 });
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    await alice.updates.waitFor((u) => u.update.content?.text === "answer: reject-once");
    // Bob saw alice's prompt too, as a user message.
    await bob.updates.waitFor((u) => u.update.sessionUpdate === "user_message_chunk" && u.update.content.text === "edit");
    alice.close();
    bob.close();
    agent.close();
  });

  it("cancels during a pending permission: the agent gets cancelled and ends the turn cancelled", async () => {
    const name = `e2e-cancel-${Date.now()}`;
    let outcome: unknown;
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        const answer = await turn.askPermission({ toolCallId: "x1", title: "Run", kind: "execute", rawInput: { command: "make" } });
        outcome = answer.outcome;
        return turn.signal.aborted || answer.outcome.outcome === "cancelled" ? "cancelled" : "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const client = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
    const copy = await client.permissions.waitFor(() => true);
    await client.notify("session/cancel", { sessionId });
    expect(await prompt).toEqual({ stopReason: "cancelled" });
    expect(outcome).toEqual({ outcome: "cancelled" });
    await expect(copy.answered).rejects.toMatchObject({ code: -32800 });
    client.close();
    agent.close();
  });

  it("a second client attaching mid-turn gets the history, then the pending request, and can answer it", async () => {
    const name = `e2e-attach-${Date.now()}`;
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        await turn.say("before the question");
        const answer = await turn.askPermission({ toolCallId: "m1", title: "Delete", kind: "delete", locations: [{ path: "/w/old" }] });
        await turn.say(`after: ${answer.outcome.optionId}`);
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const alice = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await alice.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = alice.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "clean up" }] });
    await alice.permissions.waitFor(() => true);
    const late = await connectClient({ url, key: keys.client, agent: name });
    await late.request("session/load", { sessionId, cwd: "/w", mcpServers: [] });
    expect(late.updates.items.map((u) => u.update.sessionUpdate)).toEqual(["user_message_chunk", "agent_message_chunk"]);
    const copy = await late.permissions.waitFor(() => true);
    expect(copy.params.toolCall.toolCallId).toBe("m1");
    copy.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    await late.updates.waitFor((u) => u.update.content?.text === "after: allow-once");
    alice.close();
    late.close();
    agent.close();
  });

  it("relays unknown update kinds, _meta and extension fields deep-equal to what the agent sent", async () => {
    const name = `e2e-raw-${Date.now()}`;
    const sent = { sessionUpdate: "brand_new_kind", payload: { nested: [1, "two", { three: null }] }, _meta: { vendor: { trace: "t-1" } } };
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        await turn.update(sent);
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const client = await rawClient({ url, key: keys.client, agent: name });
    await client.request("initialize", { protocolVersion: 1 });
    const { sessionId } = await client.request("session/new", { cwd: "/w", mcpServers: [] });
    await client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "x" }] });
    const got = await client.received.waitFor((m) => m.params?.update?.sessionUpdate === "brand_new_kind");
    expect({ ...got, params: withoutCursor(got.params) }).toEqual({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId, update: sent },
    });
    client.close();
    agent.close();
  });
});

describe("the stream at the edge, end to end", () => {
  // A dial-in agent's updates go from the edge straight to the session once it is granted, and
  // everything else through the AgentObject (docs/decisions/0001-the-message-path.md, "The stream at the edge"). Real SDK
  // peers on both transports: whatever path each frame took, every client sees the agent's updates
  // once, in the agent's order, and the prompt's answer only after the last of them. (Checked to fail
  // when the edge drops what it delivers itself: only each turn's first update arrives. The races
  // between the two paths are driven on purpose in test/workerd/agent-edge.test.ts and
  // test/unit/edge-routing.test.ts.)
  it("streams three turns of 300 updates (bursts and paced), a permission request in each, to a WebSocket and a Streamable HTTP client: each once, in order, the answer last", async () => {
    const name = `e2e-edge-${Date.now()}`;
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        for (let i = 0; i < 300; i++) {
          // Bursts (not awaited) and paced updates (awaited), so frames go both ways.
          const sent = turn.update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: `${turn.sessionId}:${i}|` } });
          if (i % 50 < 25) await sent;
          else void sent;
          if (i === 150) {
            const answer = await turn.askPermission({ toolCallId: `p${i}`, title: "Run", kind: "execute", status: "pending" });
            await turn.update({ sessionUpdate: "tool_call_update", toolCallId: `p${i}`, status: "completed", rawOutput: answer });
          }
        }
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const ws = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await ws.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const http = await connectClient({ url, key: keys.client, agent: name, transport: "http" });
    await http.request("session/load", { sessionId, cwd: "/w", mcpServers: [] });
    const expected: string[] = [];
    for (let round = 0; round < 3; round++) {
      const before = { ws: ws.updates.items.length, http: http.updates.items.length };
      const prompt = ws.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `round ${round}` }] });
      const copy = await ws.permissions.waitFor(
        (p) => p.params.toolCall.toolCallId === "p150" && !ws.permissions.items.slice(0, round).includes(p),
      );
      copy.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
      expect(await prompt).toEqual({ stopReason: "end_turn" });
      // The answer came after every update of the turn: the clients already hold all of them.
      const thoughts = (from: number, c: TestClient) =>
        c.updates.items
          .slice(from)
          .filter((u) => u.update.sessionUpdate === "agent_thought_chunk")
          .map((u) => u.update.content.text as string);
      const turnThoughts = Array.from({ length: 300 }, (_, i) => `${sessionId}:${i}|`);
      expected.push(...turnThoughts);
      expect(thoughts(before.ws, ws)).toEqual(turnThoughts);
      const done = ws.updates.items.slice(before.ws).find((u) => u.update.sessionUpdate === "tool_call_update");
      expect(done?.update.rawOutput).toEqual({ outcome: { outcome: "selected", optionId: "allow-once" } });
      // The other client, on the other transport, sees the same stream (it may still be arriving).
      await http.updates.waitFor((u) => u.update.content?.text === `${sessionId}:299|` && http.updates.items.indexOf(u) >= before.http);
      expect(thoughts(before.http, http)).toEqual(turnThoughts);
    }
    // A third client attaching now replays the three turns: every thought once, in order (merged into
    // longer chunks in the log, so compared as one text).
    const late = await connectClient({ url, key: keys.client, agent: name });
    await late.request("session/load", { sessionId, cwd: "/w", mcpServers: [] });
    const replayed = late.updates.items
      .filter((u) => u.update.sessionUpdate === "agent_thought_chunk")
      .map((u) => u.update.content.text as string)
      .join("");
    expect(replayed).toEqual(expected.join(""));
    for (const c of [ws, http, late]) c.close();
    agent.close();
  }, 60_000);
});

describe("remembered decisions end to end", () => {
  it("after a person's always-allow, the second identical request never reaches a client", async () => {
    // A tenant of its own: an edit another test's rule answered in the dev tenant, which no person has
    // seen, would have `npm test` asked of a person here (decision 0064), whatever the new rule says.
    const keys = await tenantOfItsOwn(url, "always");
    const name = `e2e-always-${Date.now()}`;
    const answers: unknown[] = [];
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        for (const id of ["first", "second"]) {
          const answer = await turn.askPermission({
            toolCallId: id,
            title: "Run the tests",
            kind: "execute",
            rawInput: { command: "npm test" },
          });
          answers.push(answer.outcome);
        }
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const client = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/projects/e2e", mcpServers: [] });
    const prompt = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "test twice" }] });
    const first = await client.permissions.waitFor(() => true);
    first.answer({ outcome: { outcome: "selected", optionId: "allow-always" } });
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    expect(client.permissions.items).toHaveLength(1);
    expect(answers).toEqual([
      { outcome: "selected", optionId: "allow-once" },
      { outcome: "selected", optionId: "allow-once" },
    ]);
    const rules = (await (await fetch(`${url}/v1/rules?q=npm`, { headers: { Authorization: `Bearer ${keys.client}` } })).json()) as {
      items: { description: string; hits: number }[];
    };
    expect(rules.items[0]?.description).toMatch(/npm test/);
    client.close();
    agent.close();
  });
});
