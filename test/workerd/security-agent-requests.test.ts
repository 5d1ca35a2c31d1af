// Agents are untrusted input: requests that act on a person's machine (fs/*, terminal/*), ask a person
// something (elicitation/*) or are the agent's own extensions go only to the client whose prompt is
// running, and only if it advertised the capability. Everyone else gets nothing; the agent gets an error.

import { describe, expect, it } from "vitest";
import { type Peer, type ScriptedAgent, type SeededTenant, connect, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";

const ALL_CAPS = {
  fs: { readTextFile: true, writeTextFile: true },
  terminal: true,
  elicitation: { form: {}, url: {} },
};

async function clientWith(t: SeededTenant, agent: ScriptedAgent, caps: object, key: string): Promise<Peer> {
  const client = await connect(`/acp?agent=${agent.name}`, key);
  const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: caps });
  if (init.error) throw new Error(JSON.stringify(init.error));
  return client;
}

/** Alice creates the session with `aliceCaps`, Bob attaches (to watch) with every capability. */
async function prompterAndWatcher(aliceCaps: object) {
  const t = await seedTenant();
  const agent = await dialInAgent(t);
  const alice = await clientWith(t, agent, aliceCaps, t.clientKey);
  const created = alice.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
  const sessionId = await agent.acceptNewSession();
  await created;
  const bob = await clientWith(t, agent, ALL_CAPS, t.clientKey2);
  const loaded = await bob.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
  if (loaded.error) throw new Error(JSON.stringify(loaded.error));
  return { t, agent, alice, bob, sessionId };
}

async function startTurn(alice: Peer, agent: ScriptedAgent, sessionId: string) {
  alice.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
  return agent.peer.next(isMethod("session/prompt"));
}

/** Everything the session sent a client before this marker update has reached it once the marker has. */
async function drained(agent: ScriptedAgent, sessionId: string, ...clients: Peer[]): Promise<void> {
  const marker = crypto.randomUUID();
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: marker } });
  for (const c of clients) await c.next((m) => m.params?.update?.content?.text === marker);
}

const agentRequest = (agent: ScriptedAgent, id: string, method: string, params: object) =>
  agent.peer.send({ jsonrpc: "2.0", id, method, params });

const ROUTED = ["fs/read_text_file", "fs/write_text_file", "terminal/create", "elicitation/create", "_vendor/ask"];

describe("agent requests go only to the prompting client", () => {
  it("an agent's terminal/create and fs/write_text_file never reach a client that only attached to watch", async () => {
    const { agent, alice, bob, sessionId } = await prompterAndWatcher({});
    await startTurn(alice, agent, sessionId);
    agentRequest(agent, "term", "terminal/create", { sessionId, command: "touch", args: ["/tmp/x"] });
    agentRequest(agent, "write", "fs/write_text_file", { sessionId, path: "/etc/passwd", content: "x" });
    const term = await agent.peer.next(isResponseTo("term"));
    const write = await agent.peer.next(isResponseTo("write"));
    expect(term.error).toMatchObject({ code: -32601, data: { reason: "capability_missing" } });
    expect(term.error.message).toMatch(/did not advertise clientCapabilities\.terminal/);
    expect(write.error.message).toMatch(/clientCapabilities\.fs\.writeTextFile/);
    await drained(agent, sessionId, alice, bob);
    const routed = (p: Peer) => p.unclaimed().filter((m) => m.method === "terminal/create" || m.method === "fs/write_text_file");
    expect(routed(bob)).toEqual([]);
    expect(routed(alice)).toEqual([]);
  });

  it("every routed method reaches the prompting client that advertised it, and never the watcher", async () => {
    const { agent, alice, bob, sessionId } = await prompterAndWatcher(ALL_CAPS);
    await startTurn(alice, agent, sessionId);
    for (const method of ROUTED) {
      const params = method === "elicitation/create" ? { sessionId, mode: "form", message: "?", requestedSchema: {} } : { sessionId };
      agentRequest(agent, `r-${method}`, method, params);
      const got = await alice.next(isMethod(method));
      alice.respond(got.id, { ok: method });
      expect((await agent.peer.next(isResponseTo(`r-${method}`))).result).toEqual({ ok: method });
    }
    await drained(agent, sessionId, bob);
    expect(bob.unclaimed().filter((m) => ROUTED.includes(m.method))).toEqual([]);
  });

  it("with no turn running, the agent's fs/terminal/elicitation/extension requests are refused at once, even with capable clients attached", async () => {
    const { agent, alice, bob, sessionId } = await prompterAndWatcher(ALL_CAPS);
    for (const method of ROUTED) {
      agentRequest(agent, `idle-${method}`, method, { sessionId, mode: "form" });
      const answer = await agent.peer.next(isResponseTo(`idle-${method}`));
      expect(answer.error).toMatchObject({ code: -32601, data: { reason: "no_turn", method } });
      expect(answer.error.message).toMatch(/no turn is running/);
    }
    await drained(agent, sessionId, alice, bob);
    for (const p of [alice, bob]) expect(p.unclaimed().filter((m) => ROUTED.includes(m.method))).toEqual([]);
  });

  it("an elicitation in a mode the prompting client did not advertise (or an unknown mode) is refused", async () => {
    const { agent, alice, sessionId } = await prompterAndWatcher({ elicitation: { form: {} } });
    await startTurn(alice, agent, sessionId);
    agentRequest(agent, "url", "elicitation/create", { sessionId, mode: "url", message: "open", url: "https://x.test" });
    expect((await agent.peer.next(isResponseTo("url"))).error.message).toMatch(/clientCapabilities\.elicitation\.url/);
    agentRequest(agent, "odd", "elicitation/create", { sessionId, mode: "telepathy", message: "?" });
    expect((await agent.peer.next(isResponseTo("odd"))).error.data.reason).toBe("capability_missing");
    agentRequest(agent, "form", "elicitation/create", { sessionId, mode: "form", message: "?", requestedSchema: {} });
    expect((await alice.next(isMethod("elicitation/create"))).params.mode).toBe("form");
  });

  it("when the prompting client leaves, its routed request is answered with an error and nothing goes to the watcher", async () => {
    const { agent, alice, bob, sessionId } = await prompterAndWatcher(ALL_CAPS);
    await startTurn(alice, agent, sessionId);
    agentRequest(agent, "read", "fs/read_text_file", { sessionId, path: "/projects/demo/a.ts" });
    await alice.next(isMethod("fs/read_text_file"));
    alice.close();
    const answer = await agent.peer.next(isResponseTo("read"));
    expect(answer.error.message).toMatch(/disconnected/);
    agentRequest(agent, "again", "fs/read_text_file", { sessionId, path: "/projects/demo/a.ts" });
    const again = await agent.peer.next(isResponseTo("again"));
    expect(again.error.data.reason).toBe("prompting_client_gone");
    await drained(agent, sessionId, bob);
    expect(bob.unclaimed().filter((m) => m.method === "fs/read_text_file")).toEqual([]);
  });
});
