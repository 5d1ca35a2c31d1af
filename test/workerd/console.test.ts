import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";

describe("the web console", () => {
  it("is served at / with its script, beside the API", async () => {
    const page = await SELF.fetch("http://gateway.test/");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script type="module" src="/console.js">');
    const script = await SELF.fetch("http://gateway.test/console.js");
    const text = await script.text();
    expect(text).toContain("/v1/tickets");
    expect(text).not.toContain("acp.bearer.");
    expect((await SELF.fetch("http://gateway.test/health")).status).toBe(200);
  });
});

describe("what the console reads", () => {
  const get = (path: string, key: string) => SELF.fetch(`http://gateway.test${path}`, { headers: { Authorization: `Bearer ${key}` } });

  it("a client key lists the tenant's agents with whether each is connected, but not where they live", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "lister");
    const registered = await SELF.fetch("http://gateway.test/v1/agents", {
      method: "POST",
      headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "far", mode: "dial_out", url: "wss://agents.example/far", headers: { "X-Token": "secret" } }),
    });
    expect(registered.status).toBe(201);
    const page = (await (await get("/v1/agents?status=1", t.clientKey)).json()) as { items: Record<string, unknown>[] };
    const byName = Object.fromEntries(page.items.map((a) => [a.name, a]));
    expect(byName[agent.name]).toMatchObject({ mode: "dial_in", connected: true, keyId: null });
    // A dial-out agent is not dialled to answer a listing; its url and header names are the admins'.
    expect(byName.far).toMatchObject({ mode: "dial_out", connected: null, url: null, headerNames: [] });
    const asAdmin = (await (await get("/v1/agents", t.adminKey)).json()) as { items: Record<string, unknown>[] };
    expect(asAdmin.items.find((a) => a.name === "far")).toMatchObject({ url: "wss://agents.example/far", headerNames: ["X-Token"] });
    expect(asAdmin.items.every((a) => !("connected" in a))).toBe(true);
  });

  it("a session the agent has not named is titled by its first prompt's first line; the agent's own title wins", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const titleOf = async () => ((await (await get(`/v1/sessions/${sessionId}`, t.adminKey)).json()) as { title: string | null }).title;
    expect(await titleOf()).toBeNull();
    client.send({
      jsonrpc: "2.0",
      id: "p",
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "  Fix   the flaky test\nin the parser, please" }] },
    });
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    expect(await titleOf()).toBe("Fix the flaky test");
    agent.update(sessionId, { sessionUpdate: "session_info_update", title: "Parser: flaky test" });
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    await client.next(isResponseTo("p"));
    expect(await titleOf()).toBe("Parser: flaky test");
  });

  it("one list call shows each session's turn and the approvals waiting on people, as they change", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    type Listed = { id: string; state: { turn: string; waiting: number } };
    const stateOf = async () => {
      const page = (await (await get("/v1/sessions", t.clientKey)).json()) as { items: Listed[] };
      return page.items.find((s) => s.id === sessionId)?.state;
    };
    // Published by the session after each change; the list reads the index and wakes no object.
    const until = (state: Listed["state"]) => expect.poll(stateOf, { timeout: 10_000, interval: 20 }).toEqual(state);
    await until({ turn: "idle", waiting: 0 });
    client.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    await until({ turn: "running", waiting: 0 });
    const asked = agent.askPermission(sessionId, { toolCallId: "t1", kind: "execute", rawInput: { command: "make deploy" } });
    const copy = await client.next(isMethod("session/request_permission"));
    await until({ turn: "running", waiting: 1 });
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(asked));
    await until({ turn: "running", waiting: 0 });
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    await client.next(isResponseTo("p"));
    await until({ turn: "idle", waiting: 0 });
  });
});
