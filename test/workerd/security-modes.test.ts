// Modes and configuration are permissions (decision 0041), in the real Worker: a member's switch to a
// mode that asks less never reaches the agent, an approver's does and is audited, a tenant's forbid
// holds for its owner too, and initialize tells each client what is governed.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addKey, api, barrier, clientWithSession, connect, dialInAgent, isMethod, seedTenant } from "./helpers";

const auditedModes = (tenantId: string) =>
  env.DB.prepare(
    "SELECT kind, name, operation, outcome, decided_by_key IS NOT NULL AS keyed, decided_by_role AS role, policy, reason FROM decision_audit WHERE tenant_id = ? AND kind = 'mode' ORDER BY at, id",
  )
    .bind(tenantId)
    .all<{
      kind: string;
      name: string;
      operation: string;
      outcome: string;
      keyed: number;
      role: string;
      policy: string;
      reason: string | null;
    }>();

describe("modes and configuration are permissions on /acp", () => {
  it("a member's session/set_mode bypassPermissions and approval policy never are refused with -32003 and never reach the agent", async () => {
    const t = await seedTenant();
    const member = await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent, member);
    const bypass = await client.request("session/set_mode", { sessionId, modeId: "bypassPermissions" });
    expect(bypass.error).toMatchObject({
      code: -32003,
      message: expect.stringMatching(/member.*bypassPermissions.*approver or higher/),
      data: { method: "session/set_mode", value: "bypassPermissions", needs: "approver" },
    });
    const never = await client.request("session/set_config_option", { sessionId, configId: "approval_policy", value: "never" });
    expect(never.error).toMatchObject({ code: -32003, data: { setting: "approval_policy", value: "never" } });
    // As a notification too: the refusal comes back with id null, and nothing is relayed.
    client.notify("session/set_mode", { sessionId, modeId: "yolo" });
    expect((await client.next((m) => m.id === null && m.error?.data?.value === "yolo")).error.code).toBe(-32003);
    // A mode that asks at least as much as the default is the member's to choose.
    const plan = client.request("session/set_mode", { sessionId, modeId: "plan" });
    const relayed = await agent.peer.next(isMethod("session/set_mode"));
    expect(relayed.params.modeId).toBe("plan");
    agent.peer.respond(relayed.id, {});
    expect((await plan).result).toEqual({});
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/set_mode" || m.method === "session/set_config_option")).toEqual([]);
    const rows = (await auditedModes(t.tenantId)).results;
    expect(rows.map((r) => [r.operation, r.outcome, r.role])).toEqual([
      ["session/set_mode mode=bypassPermissions", "refused", "member"],
      ["session/set_config_option approval_policy=never", "refused", "member"],
      ["session/set_mode mode=yolo", "refused", "member"],
    ]);
  });

  it("an approver's switch to acceptEdits reaches the agent and is audited as made, with who made it", async () => {
    const t = await seedTenant();
    const approver = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent, approver);
    const set = client.request("session/set_mode", { sessionId, modeId: "acceptEdits" });
    const relayed = await agent.peer.next(isMethod("session/set_mode"));
    expect(relayed.params).toMatchObject({ sessionId, modeId: "acceptEdits" });
    agent.peer.respond(relayed.id, {});
    expect((await set).result).toEqual({});
    expect((await auditedModes(t.tenantId)).results).toEqual([
      {
        kind: "mode",
        name: "mode",
        operation: "session/set_mode mode=acceptEdits",
        outcome: "selected",
        keyed: 1,
        role: "approver",
        policy: "modes",
        reason: null,
      },
    ]);
    // And in the tenant's hash chain, like every decision.
    const chained = await env.DB.prepare("SELECT entry FROM audit_chain WHERE tenant_id = ?").bind(t.tenantId).all<{ entry: string }>();
    expect(chained.results.map((r) => JSON.parse(r.entry).operation)).toContain("session/set_mode mode=acceptEdits");
  });

  it("a tenant that forbids less oversight refuses its owner's bypassPermissions, and a session/new whose _meta asks for it", async () => {
    const t = await seedTenant({ modes: { forbidLessOversight: true } });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent, t.adminKey);
    const refused = await client.request("session/set_mode", { sessionId, modeId: "bypassPermissions" });
    expect(refused.error).toMatchObject({ code: -32003, message: expect.stringMatching(/Your tenant forbids/), data: { forbidden: true } });
    const created = await client.request("session/new", {
      cwd: "/projects/demo",
      mcpServers: [],
      _meta: { claudeCode: { options: { permissionMode: "bypassPermissions" } } },
    });
    expect(created.error).toMatchObject({ code: -32003, data: { setting: "_meta.claudeCode.options.permissionMode" } });
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/set_mode" || m.method === "session/new")).toEqual([]);
  });

  it("initialize tells each client which modes are open and whether it may make a governed change", async () => {
    const t = await seedTenant({ modes: { forbid: ["yolo"] } });
    const member = await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" });
    await dialInAgent(t);
    const told = async (key: string) => {
      const client = await connect("/acp?agent=scripted", key);
      return (await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} })).result._meta.acpGateway.modes;
    };
    expect(await told(member)).toEqual({
      ungoverned: ["default", "plan", "ask", "read-only", "untrusted"],
      governedNeeds: "approver",
      youMay: false,
      forbidLessOversight: false,
      forbid: ["yolo"],
      fourEyes: false,
    });
    expect((await told(t.clientKey)).youMay).toBe(true);
  });
});

describe("modes in the tenant's settings", () => {
  it("an admin sets settings.modes; a malformed one is refused with 400", async () => {
    const t = await seedTenant();
    const ok = await api("/v1/tenant/settings", t.adminKey, {
      method: "PATCH",
      body: { modes: { forbid: ["yolo"], forbidLessOversight: true } },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ settings: { modes: { forbid: ["yolo"], forbidLessOversight: true } } });
    expect((await api("/v1/tenant/settings", t.adminKey, { method: "PATCH", body: { modes: { forbid: "yolo" } } })).status).toBe(400);
    expect((await api("/v1/tenant/settings", t.adminKey, { method: "PATCH", body: { modes: { allow: ["yolo"] } } })).status).toBe(400);
  });
});
