// Four eyes on a mode change (decision 0061), in the real Worker, session and D1: under
// settings.modes.fourEyes an approver's governed change is held by the session, nothing reaches the
// agent until a second person approves, the proposer (by any of their keys) cannot approve it, a key
// that names nobody cannot either, every client sees it waiting, and a refusal or the deadline answers
// the proposer -32003.

import { env, runDurableObjectAlarm } from "cloudflare:test";
import { objects } from "../../durable-objects/objects";
import { describe, expect, it } from "vitest";
import { addKey, api, attachClient, barrier, clientWithSession, dialInAgent, isMethod, seedTenant } from "./helpers";

const WAITING = "_acp_gateway/mode_change_waiting";
const DECIDED = "_acp_gateway/mode_change_decided";
const DECIDE = "_acp_gateway/decide_mode_change";

const modeRows = (tenantId: string) =>
  env.DB.prepare(
    "SELECT operation, outcome, decided_by_user AS user, policy FROM decision_audit WHERE tenant_id = ? AND kind = 'mode' ORDER BY at, rowid",
  )
    .bind(tenantId)
    .all<{ operation: string; outcome: string; user: string | null; policy: string }>();

const relayedModes = (agent: { peer: { unclaimed(): Record<string, any>[] } }) =>
  agent.peer.unclaimed().filter((m) => m.method === "session/set_mode" || m.method === "session/set_config_option");

async function fourEyesTenant(settings: Record<string, unknown> = {}) {
  const t = await seedTenant({ modes: { fourEyes: true }, ...settings });
  const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
  const adaAgain = await addKey(t.tenantId, "client", "ada-laptop", null, { role: "approver", user: "ada" });
  const bob = await addKey(t.tenantId, "client", "bob", null, { role: "approver", user: "bob" });
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent, ada);
  return { t, ada, adaAgain, bob, agent, client, sessionId };
}

describe("four eyes on a mode change", () => {
  it("holds an approver's bypassPermissions until a second person approves; the proposer gets the agent's answer", async () => {
    const { t, bob, agent, client, sessionId } = await fourEyesTenant();
    const second = await attachClient(t, agent, sessionId, bob);
    const set = client.request("session/set_mode", { sessionId, modeId: "bypassPermissions" }, "mode-1");
    const waiting = await second.next(isMethod(WAITING));
    expect(waiting.params).toMatchObject({ sessionId, setting: "mode", value: "bypassPermissions", proposedBy: "ada" });
    // Who proposed, as a person, and who each client is (GET /v1/me): what a console greys out the proposer's Approve by.
    expect(waiting.params.proposer).toBe("subject:ada");
    expect(await (await api("/v1/me", bob)).json()).toMatchObject({ person: { subject: "bob" }, role: "approver" });
    expect((await client.next(isMethod(WAITING))).params.proposalId).toBe(waiting.params.proposalId);
    await barrier(client, agent, sessionId);
    expect(relayedModes(agent)).toEqual([]);

    const decided = await second.request(DECIDE, { sessionId, proposalId: waiting.params.proposalId, decision: "approve" });
    expect(decided.result).toEqual({ outcome: "approved" });
    const relayed = await agent.peer.next(isMethod("session/set_mode"));
    expect(relayed.params).toEqual({ sessionId, modeId: "bypassPermissions" });
    agent.peer.respond(relayed.id, { fromAgent: true });
    expect(await set).toMatchObject({ id: "mode-1", result: { fromAgent: true } });
    expect((await client.next(isMethod(DECIDED))).params).toMatchObject({ outcome: "approved", by: "bob" });
    expect((await modeRows(t.tenantId)).results.map((r) => [r.outcome, r.user])).toEqual([
      ["proposed", "ada"],
      ["selected", "bob"],
    ]);
  });

  it("the proposer cannot approve their own change, from this key or another key issued to them; they may withdraw it", async () => {
    const { t, adaAgain, agent, client, sessionId } = await fourEyesTenant();
    const set = client.request("session/set_config_option", { sessionId, configId: "approval_policy", value: "never" });
    const { proposalId } = (await client.next(isMethod(WAITING))).params;
    const own = await client.request(DECIDE, { sessionId, proposalId, decision: "approve" });
    expect(own.error).toMatchObject({ code: -32003, message: expect.stringMatching(/You proposed .* second person/) });
    const byRest = await api(`/v1/sessions/${sessionId}/mode-changes/${proposalId}`, adaAgain, {
      method: "POST",
      body: { decision: "approve" },
    });
    expect(byRest.status).toBe(403);
    await barrier(client, agent, sessionId);
    expect(relayedModes(agent)).toEqual([]);
    // Still waiting, for everyone to see: a client attaching now is told, and REST lists it.
    const later = await attachClient(t, agent, sessionId, t.clientKey);
    expect((await later.next(isMethod(WAITING))).params).toMatchObject({ proposalId, setting: "approval_policy", value: "never" });
    const listed = await api(`/v1/sessions/${sessionId}/mode-changes`, t.clientKey);
    expect(((await listed.json()) as { items: { id: string }[] }).items.map((p) => p.id)).toEqual([proposalId]);
    // "Waiting on you": a second approver sees it, the proposer does not (it waits on someone else).
    await runDurableObjectAlarm(objects.session(env, t.tenantId, sessionId)); // the index has what the session is owed
    const waitingOn = async (key: string) =>
      ((await (await api("/v1/approvals?waiting=me", key)).json()) as { modeChanges: { proposalId: string; proposedBy: string }[] })
        .modeChanges;
    expect(await waitingOn(t.clientKey)).toEqual([
      expect.objectContaining({ proposalId, proposedBy: "ada", operation: "session/set_config_option approval_policy=never" }),
    ]);
    expect(await waitingOn(adaAgain)).toEqual([]);
    const withdrawn = await client.request(DECIDE, { sessionId, proposalId, decision: "refuse" });
    expect(withdrawn.result).toEqual({ outcome: "refused" });
    expect((await set).error).toMatchObject({ code: -32003, message: expect.stringMatching(/You withdrew/) });
  });

  it("a key that names nobody cannot be the second person; a second approver's refusal answers the proposer -32003 naming them", async () => {
    const { t, bob, agent, client, sessionId } = await fourEyesTenant();
    const set = client.request("session/set_mode", { sessionId, modeId: "yolo" });
    const { proposalId } = (await client.next(isMethod(WAITING))).params;
    const path = `/v1/sessions/${sessionId}/mode-changes/${proposalId}`;
    const byAdminKey = await api(path, t.adminKey, { method: "POST", body: { decision: "approve" } });
    expect(byAdminKey.status).toBe(403);
    expect(await byAdminKey.text()).toMatch(/names nobody/);
    const refused = await api(path, bob, { method: "POST", body: { decision: "refuse" } });
    expect(await refused.json()).toEqual({ outcome: "refused" });
    expect((await set).error).toMatchObject({
      code: -32003,
      message: expect.stringMatching(/bob refused switching the session's mode to yolo/),
    });
    expect((await api(path, bob, { method: "POST", body: { decision: "approve" } })).status).toBe(404);
    await barrier(client, agent, sessionId);
    expect(relayedModes(agent)).toEqual([]);
    expect((await modeRows(t.tenantId)).results.map((r) => [r.outcome, r.user])).toEqual([
      ["proposed", "ada"],
      ["refused", "bob"],
    ]);
  });

  it("a change nobody decides expires at the tenant's permission deadline: the proposer is told, nothing is relayed", async () => {
    const { t, agent, client, sessionId } = await fourEyesTenant({ permissionDeadlineMs: 1500 });
    const set = await client.request("session/set_mode", { sessionId, modeId: "acceptEdits" });
    expect(set.error).toMatchObject({ code: -32003, message: expect.stringMatching(/expired: no second person approved it/) });
    expect((await client.next(isMethod(DECIDED))).params).toMatchObject({ outcome: "expired", by: null });
    await barrier(client, agent, sessionId);
    expect(relayedModes(agent)).toEqual([]);
    expect((await modeRows(t.tenantId)).results.map((r) => r.outcome)).toEqual(["proposed", "withdrawn"]);
  });

  it("a decided change stays in the session's history: a client loading the session later is told who proposed it and who approved it, and nothing waits", async () => {
    const { t, bob, agent, client, sessionId } = await fourEyesTenant();
    const set = client.request("session/set_mode", { sessionId, modeId: "bypassPermissions" });
    const { proposalId } = (await client.next(isMethod(WAITING))).params;
    const decided = await api(`/v1/sessions/${sessionId}/mode-changes/${proposalId}`, bob, {
      method: "POST",
      body: { decision: "approve" },
    });
    expect(await decided.json()).toEqual({ outcome: "approved" });
    const relayed = await agent.peer.next(isMethod("session/set_mode"));
    agent.peer.respond(relayed.id, {});
    expect((await set).result).toEqual({});

    // A reload or a teammate's attach: the replay (before the load's answer) carries the outcome and the card whole.
    const later = await attachClient(t, agent, sessionId, t.clientKey);
    const replayed = later.unclaimed().filter((m) => m.method === DECIDED || m.method === WAITING);
    expect(replayed).toEqual([
      expect.objectContaining({
        method: DECIDED,
        params: expect.objectContaining({
          sessionId,
          proposalId,
          method: "session/set_mode",
          setting: "mode",
          value: "bypassPermissions",
          proposedBy: "ada",
          proposer: "subject:ada",
          proposedAt: expect.any(Number),
          expiresAt: expect.any(Number),
          outcome: "approved",
          by: "bob",
        }),
      }),
    ]);
  });

  it("an expired change is in the history too: a client loading the session after the deadline is told it expired", async () => {
    const { t, agent, client, sessionId } = await fourEyesTenant({ permissionDeadlineMs: 1500 });
    const set = await client.request("session/set_config_option", { sessionId, configId: "approval_policy", value: "never" });
    expect(set.error).toMatchObject({ code: -32003, message: expect.stringMatching(/expired/) });
    const later = await attachClient(t, agent, sessionId, t.clientKey);
    expect(later.unclaimed().filter((m) => m.method === DECIDED || m.method === WAITING)).toEqual([
      expect.objectContaining({
        params: expect.objectContaining({ setting: "approval_policy", value: "never", proposedBy: "ada", outcome: "expired", by: null }),
      }),
    ]);
  });

  it("a held change in a deleted session is withdrawn at once: the proposer is answered -32003 saying so, it is audited, and no list shows it", async () => {
    const { t, bob, agent, client, sessionId } = await fourEyesTenant(); // a 10-minute deadline: only the deletion can end it now
    const second = await attachClient(t, agent, sessionId, bob);
    const set = client.request("session/set_mode", { sessionId, modeId: "yolo" });
    const { proposalId } = (await second.next(isMethod(WAITING))).params;
    await runDurableObjectAlarm(objects.session(env, t.tenantId, sessionId)); // the index has what the session is owed
    const waitingOnBob = async () =>
      ((await (await api("/v1/approvals?waiting=me", bob)).json()) as { modeChanges: { proposalId: string }[] }).modeChanges;
    expect((await waitingOnBob()).map((m) => m.proposalId)).toEqual([proposalId]);

    const deleting = second.request("session/delete", { sessionId });
    agent.peer.respond((await agent.peer.next(isMethod("session/delete"))).id, {});
    expect((await deleting).result).toEqual({});
    expect((await set).error).toMatchObject({
      code: -32003,
      message: expect.stringMatching(/switching the session's mode to yolo was withdrawn: the session was deleted by bob/i),
      data: { proposalId, sessionDeleted: true },
    });
    await expect
      .poll(async () => (await modeRows(t.tenantId)).results.map((r) => [r.outcome, r.user]), { timeout: 10_000, interval: 20 })
      .toEqual([
        ["proposed", "ada"],
        ["withdrawn", "bob"],
      ]);
    expect((await api(`/v1/sessions/${sessionId}/mode-changes`, bob)).status).toBe(404);
    expect(await waitingOnBob()).toEqual([]);
    const decide = await api(`/v1/sessions/${sessionId}/mode-changes/${proposalId}`, bob, {
      method: "POST",
      body: { decision: "approve" },
    });
    expect(decide.status).toBe(404);
    expect(relayedModes(agent)).toEqual([]);
  });

  it("a member is still refused; a governed notification and a session/new asking for bypass are refused, not held; clients may not send the hold", async () => {
    const { t, agent, client, sessionId } = await fourEyesTenant();
    const member = await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" });
    const mia = await attachClient(t, agent, sessionId, member);
    expect((await mia.request("session/set_mode", { sessionId, modeId: "bypassPermissions" })).error).toMatchObject({
      code: -32003,
      data: { needs: "approver" },
    });
    client.notify("session/set_mode", { sessionId, modeId: "yolo" });
    expect((await client.next((m) => m.id === null && m.error)).error).toMatchObject({ code: -32003, data: { fourEyes: true } });
    const created = await client.request("session/new", {
      cwd: "/p",
      mcpServers: [],
      _meta: { claudeCode: { options: { permissionMode: "bypassPermissions" } } },
    });
    expect(created.error).toMatchObject({ code: -32003, data: { fourEyes: true } });
    const forged = await client.request("_acp_gateway/hold_mode_change", { sessionId, request: { method: "session/set_mode" } });
    expect(forged.error).toMatchObject({ code: -32003 });
    // An ungoverned mode is not held.
    const plan = client.request("session/set_mode", { sessionId, modeId: "plan" });
    const relayed = await agent.peer.next(isMethod("session/set_mode"));
    expect(relayed.params.modeId).toBe("plan");
    agent.peer.respond(relayed.id, {});
    expect((await plan).result).toEqual({});
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/new" || m.method === "session/set_mode")).toEqual([]);
  });

  it("an admin turns it on with PATCH /v1/tenant/settings; a value that is not a boolean is refused 400", async () => {
    const t = await seedTenant();
    const on = await api("/v1/tenant/settings", t.adminKey, { method: "PATCH", body: { modes: { fourEyes: true } } });
    expect(on.status).toBe(200);
    expect(await on.json()).toMatchObject({ settings: { modes: { fourEyes: true } } });
    expect((await api("/v1/tenant/settings", t.adminKey, { method: "PATCH", body: { modes: { fourEyes: "yes" } } })).status).toBe(400);
  });
});
