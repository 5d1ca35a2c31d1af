// What reaches clients of an agent as it really connects (decision 0042): only the capabilities the
// gateway serves (the current claude and codex adapters advertise ACP `providers`, whose methods the
// gateway answers -32601), and the agent's notifications that name no session (`_auth/status_update`)
// kept as its status for the API and for clients' initialize, not dropped.

import { describe, expect, it } from "vitest";
import { api, connect, dialInAgent, seedTenant } from "./helpers";

describe("an agent's capabilities and sessionless notifications", () => {
  it("a client's initialize carries no capability the gateway does not serve: providers and a session fork are dropped, the rest kept", async () => {
    const t = await seedTenant();
    await dialInAgent(t, "current", {
      promptCapabilities: { image: true, embeddedContext: true },
      sessionCapabilities: { list: {}, fork: {}, resume: {} },
      providers: {},
      _meta: { claudeCode: { promptQueueing: true } },
    });
    const client = await connect("/acp?agent=current", t.clientKey);
    const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const caps = init.result.agentCapabilities;
    expect(caps).not.toHaveProperty("providers");
    // Multi-client attach is the gateway's own, advertised under _meta until PR #533 lands (decision 0054).
    expect(caps.sessionCapabilities).toEqual({ list: {}, resume: {}, delete: {}, _meta: { "acp/attach": expect.any(Object) } });
    expect(caps.promptCapabilities).toEqual({ image: true, embeddedContext: true });
    // Claude Code's promptQueueing is served as sent: the gateway relays a prompt while a turn runs to this agent (decision 0067).
    expect(caps._meta).toEqual({ claudeCode: { promptQueueing: true } });
    expect(caps.loadSession).toBe(true);
    // What the capability promised is indeed refused: providers/list names no session.
    expect((await client.request("providers/list", {})).error.code).toBe(-32601);
  });

  it("an agent's _auth/status_update (no session) is its status: GET /v1/agents and a client's initialize show the newest of each method", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "authy");
    agent.peer.notify("_auth/status_update", { status: "expired", message: "log in again" });
    agent.peer.notify("_auth/status_update", { status: "ok" });
    // The relay answers a request without a session in order after the notifications: they were taken.
    expect((await agent.peer.request("_test/no_session", {})).error.code).toBe(-32601);
    const page = (await (await api("/v1/agents?status=1", t.clientKey)).json()) as { items: Record<string, unknown>[] };
    const listed = page.items.find((a) => a.name === "authy") as { notices: { method: string; params: unknown }[] };
    expect(listed.notices).toEqual([{ method: "_auth/status_update", params: { status: "ok" }, at: expect.any(Number) }]);
    const client = await connect("/acp?agent=authy", t.clientKey);
    const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(init.result._meta.acpGateway.agentNotices).toEqual([
      { method: "_auth/status_update", params: { status: "ok" }, at: expect.any(Number) },
    ]);
  });
});
