// The session's record of the agent's modes (decision 0061), in the real Worker, session and D1: the
// snapshot shows what the agent advertised with each mode marked governed, and an agent that reports
// a governed mode is told to every client and audited; an ungoverned one is not; one the tenant forbids
// holds the session (decision 0056's hold).

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, barrier, clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

const MODES = {
  currentModeId: "default",
  availableModes: [
    { id: "default", name: "Default" },
    { id: "plan", name: "Plan" },
    { id: "acceptEdits", name: "Accept edits" },
    { id: "bypassPermissions", name: "Bypass permissions" },
  ],
};

describe("the session's record of the agent's modes", () => {
  it("shows the advertised modes marked governed; an agent's switch to bypassPermissions is told to every client and audited", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const client = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const created = client.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
    const asked = await agent.peer.next(isMethod("session/new"));
    const sessionId = `sess-${crypto.randomUUID()}`;
    agent.peer.respond(asked.id, { sessionId, modes: MODES });
    const answer = (await created).result;
    expect(answer.sessionId).toBe(sessionId);
    // The answer says which modes are governed, for this session; so does session/load's.
    const marked = {
      currentModeId: "default",
      currentGoverned: false,
      available: expect.arrayContaining([{ id: "bypassPermissions", name: "Bypass permissions", governed: true }]),
    };
    expect(answer._meta.acpGateway.modes).toEqual(marked);
    const other = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    await other.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const loaded = await other.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
    expect(loaded.result._meta.acpGateway.modes).toEqual(marked);

    const snapshot = async () => (await (await api(`/v1/sessions/${sessionId}`, t.clientKey)).json()) as { modes: unknown };
    expect((await snapshot()).modes).toEqual({
      currentModeId: "default",
      currentGoverned: false,
      available: [
        { id: "default", name: "Default", governed: false },
        { id: "plan", name: "Plan", governed: false },
        { id: "acceptEdits", name: "Accept edits", governed: true },
        { id: "bypassPermissions", name: "Bypass permissions", governed: true },
      ],
    });

    // An ungoverned switch: recorded, nobody told.
    agent.update(sessionId, { sessionUpdate: "current_mode_update", currentModeId: "plan" });
    await other.next((m) => m.params?.update?.currentModeId === "plan");
    agent.update(sessionId, { sessionUpdate: "current_mode_update", currentModeId: "bypassPermissions" });
    for (const c of [client, other]) {
      const told = await c.next(isMethod("_acp_gateway/agent_mode_changed"));
      expect(told.params).toMatchObject({ sessionId, from: "plan", to: "bypassPermissions", governed: true });
    }
    await barrier(client, agent, sessionId);
    expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/agent_mode_changed")).toEqual([]);
    expect((await snapshot()).modes).toMatchObject({ currentModeId: "bypassPermissions", currentGoverned: true });
    await expect
      .poll(
        async () =>
          (
            await env.DB.prepare("SELECT operation, decided_by AS by FROM decision_audit WHERE tenant_id = ? AND kind = 'mode'")
              .bind(t.tenantId)
              .all<{ operation: string; by: string }>()
          ).results,
      )
      .toEqual([{ operation: "current_mode_update mode=bypassPermissions", by: "agent" }]);
  });

  it("an agent that switches itself into a mode the tenant forbids holds the session: the turn is cancelled, prompts refused until an approver resumes it", async () => {
    const t = await seedTenant({ modes: { forbid: ["bypassPermissions"] } });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const turn = await startTurn(client, agent, sessionId, "turn-1");
    agent.update(sessionId, { sessionUpdate: "current_mode_update", currentModeId: "bypassPermissions" });
    expect((await agent.peer.next(isMethod("session/cancel"))).params).toEqual({ sessionId });
    const held = await client.next(isMethod("_acp_gateway/session_held"));
    expect(held.params).toMatchObject({
      sessionId,
      hold: { reason: "mode_forbidden", mode: "bypassPermissions" },
      message: expect.stringMatching(/switched this session's mode to bypassPermissions by itself, which this tenant forbids/),
    });
    expect(((await (await api(`/v1/sessions/${sessionId}`, t.clientKey)).json()) as { held: unknown }).held).toMatchObject({
      reason: "mode_forbidden",
      mode: "bypassPermissions",
    });
    agent.peer.respond(turn.id, { stopReason: "cancelled" }); // the agent ends the cancelled turn
    await client.next(isResponseTo("turn-1"));
    client.send({ jsonrpc: "2.0", id: "turn-2", method: "session/prompt", params: { sessionId, prompt: [] } });
    expect((await client.next(isResponseTo("turn-2"))).error).toMatchObject({ data: { reason: "session_held" } });
    expect((await api(`/v1/sessions/${sessionId}/hold`, t.clientKey, { method: "DELETE" })).status).toBe(200);
    await startTurn(client, agent, sessionId, "turn-3");
  });
});
