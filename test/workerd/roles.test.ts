// Roles (decision 0028) in the real Worker: each role allowed and refused exactly as documented, at
// the REST API and on /acp, with keys that carry a role (a person's token maps to the same roles:
// test/e2e/people.test.ts). Who may answer is in roles-answering.test.ts.

import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Role } from "../../core/principal";
import {
  api,
  addKey,
  attachClient,
  barrier,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  type SeededTenant,
  seedTenant,
  startTurn,
} from "./helpers";

const gitStatus = { decision: "allow", scope: { project: "/projects/demo" }, matcher: { type: "command", prefix: ["git", "status"] } };

async function keysByRole(t: SeededTenant): Promise<Record<Role, string>> {
  return {
    observer: await addKey(t.tenantId, "client", "olga", null, { role: "observer", user: "olga" }),
    member: await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" }),
    approver: await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" }),
    admin: await addKey(t.tenantId, "client", "adam", null, { role: "admin", user: "adam" }),
    owner: await addKey(t.tenantId, "admin", "otto", null, { role: "owner" }),
  };
}

describe("roles at the REST API", () => {
  it("each role reaches exactly what it may: watch for all, rules for approvers, administration for admins", async () => {
    const t = await seedTenant();
    const keys = await keysByRole(t);
    const { rule } = (await (await api("/v1/rules", t.adminKey, { method: "POST", body: gitStatus })).json()) as { rule: { id: string } };
    const status = async (role: Role, path: string, method = "GET", body?: unknown) =>
      (await api(path, keys[role], { method, ...(body !== undefined ? { body } : {}) })).status;
    const table: [string, string, unknown, Record<Role, number>][] = [
      ["GET", "/v1/sessions", undefined, { observer: 200, member: 200, approver: 200, admin: 200, owner: 200 }],
      ["GET", "/v1/audit", undefined, { observer: 200, member: 200, approver: 200, admin: 200, owner: 200 }],
      ["GET", "/v1/rules", undefined, { observer: 200, member: 200, approver: 200, admin: 200, owner: 200 }],
      ["POST", "/v1/tickets", {}, { observer: 201, member: 201, approver: 201, admin: 201, owner: 201 }],
      ["POST", "/v1/rules", gitStatus, { observer: 403, member: 403, approver: 201, admin: 201, owner: 201 }],
      // Changing a rule's expiry (lengthening it is making it anew) stays an admin's, as before roles.
      ["PATCH", `/v1/rules/${rule.id}`, { expiresAt: null }, { observer: 403, member: 403, approver: 403, admin: 200, owner: 200 }],
      ["GET", "/v1/keys", undefined, { observer: 403, member: 403, approver: 403, admin: 200, owner: 200 }],
      ["GET", "/v1/tenant/settings", undefined, { observer: 403, member: 403, approver: 403, admin: 200, owner: 200 }],
      ["GET", "/v1/notification-targets", undefined, { observer: 403, member: 403, approver: 403, admin: 200, owner: 200 }],
      ["GET", "/v1/agents", undefined, { observer: 200, member: 200, approver: 200, admin: 200, owner: 200 }],
      ["GET", "/v1/metrics", undefined, { observer: 403, member: 403, approver: 403, admin: 200, owner: 200 }],
    ];
    for (const [method, path, body, expected] of table) {
      const got: Record<string, number> = {};
      for (const role of Object.keys(expected) as Role[]) got[role] = await status(role, path, method, body);
      expect({ method, path, got }).toEqual({ method, path, got: expected });
    }
    for (const role of ["observer", "member", "approver"] as const)
      expect((await api("/v1/agents", keys[role], { method: "POST", body: { name: `by-${role}` } })).status).toBe(403);
    expect((await api("/v1/agents", keys.admin, { method: "POST", body: { name: "by-admin" } })).status).toBe(201);
    const refused = await api("/v1/keys", keys.approver);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /needs the role admin or higher; this key is approver/,
    );
  });

  it("revoking a rule: admins any, the approver who made it theirs, members and observers none", async () => {
    const t = await seedTenant();
    const keys = await keysByRole(t);
    const made = async (key: string) =>
      ((await (await api("/v1/rules", key, { method: "POST", body: gitStatus })).json()) as { rule: { id: string } }).rule.id;
    const byAda = await made(keys.approver);
    const byAdmin = await made(t.adminKey);
    expect((await api(`/v1/rules/${byAda}`, keys.member, { method: "DELETE" })).status).toBe(403);
    expect((await api(`/v1/rules/${byAda}`, keys.observer, { method: "DELETE" })).status).toBe(403);
    expect((await api(`/v1/rules/${byAdmin}`, keys.approver, { method: "DELETE" })).status).toBe(403);
    expect((await api(`/v1/rules/${byAda}`, keys.approver, { method: "DELETE" })).status).toBe(204);
    expect((await api(`/v1/rules/${byAdmin}`, keys.admin, { method: "DELETE" })).status).toBe(204);
  });

  it("nobody issues a key or maps a group above their own role; an admin key is admin or owner", async () => {
    const t = await seedTenant();
    const keys = await keysByRole(t);
    const issue = (key: string, body: unknown) => api("/v1/keys", key, { method: "POST", body });
    expect((await issue(keys.admin, { kind: "client", role: "owner" })).status).toBe(403);
    expect((await issue(keys.admin, { kind: "admin" })).status).toBe(403); // an admin key without a role is owner
    expect((await issue(keys.admin, { kind: "admin", role: "admin" })).status).toBe(201);
    expect((await issue(keys.admin, { kind: "client", role: "approver" })).status).toBe(201);
    expect((await issue(keys.owner, { kind: "client", role: "owner" })).status).toBe(201);
    expect((await issue(keys.owner, { kind: "admin", role: "member" })).status).toBe(400);
    expect((await issue(keys.owner, { kind: "agent", role: "member" })).status).toBe(400);
    const mapTo = (key: string, role: Role) =>
      api("/v1/tenant/settings", key, { method: "PATCH", body: { roles: { groups: { ops: role } } } });
    expect((await mapTo(keys.admin, "owner")).status).toBe(403);
    const ok = await mapTo(keys.admin, "approver");
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ settings: { roles: { groups: { ops: "approver" } } } });
    expect((await api("/v1/tenant/settings", keys.admin, { method: "PATCH", body: { limits: { connectionsPerKey: 1 } } })).status).toBe(
      400,
    );
  });

  it("the tenant's first admin key is its owner", async () => {
    const created = await SELF.fetch("http://gateway.test/v1/tenants", {
      method: "POST",
      headers: { Authorization: "Bearer test-operator-token", "Content-Type": "application/json" },
      body: JSON.stringify({ slug: `own-${crypto.randomUUID().slice(0, 8)}`, name: "Own" }),
    });
    expect(created.status, "precondition: the operator token of the test Worker (vitest.config.ts)").toBe(201);
    const { adminKey } = (await created.json()) as { adminKey: { key: string } };
    const owner = await api("/v1/keys", adminKey.key, { method: "POST", body: { kind: "client", role: "owner" } });
    expect(owner.status).toBe(201);
  });
});

describe("roles on /acp", () => {
  it("an observer attaches, loads and lists, and is refused session/new, session/prompt and session/cancel with -32003", async () => {
    const t = await seedTenant();
    const keys = await keysByRole(t);
    const agent = await dialInAgent(t);
    const { client: member, sessionId } = await clientWithSession(t, agent, keys.member);
    const observer = await attachClient(t, agent, sessionId, keys.observer);
    expect((await observer.request("session/list", {})).result.sessions).toEqual([expect.objectContaining({ sessionId })]);
    const created = await observer.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
    expect(created.error).toMatchObject({
      code: -32003,
      message: expect.stringMatching(/observer.*session\/new.*member/),
      data: { role: "observer" },
    });
    const prompted = await observer.request("session/prompt", { sessionId, prompt: [] });
    expect(prompted.error).toMatchObject({ code: -32003, data: { method: "session/prompt" } });
    // The member drives: its turn runs; the observer's cancel is refused (an error with id null) and never reaches the agent.
    await startTurn(member, agent, sessionId, "m1");
    observer.notify("session/cancel", { sessionId });
    const cancelRefused = await observer.next((m) => m.id === null && m.error?.data?.method === "session/cancel");
    expect(cancelRefused.error.code).toBe(-32003);
    await barrier(member, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/cancel" || m.method === "session/new")).toEqual([]);
    // It still watches: the agent's updates reach it.
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } });
    expect((await observer.next(isMethod("session/update"))).params.update.content.text).toBe("hi");
  });

  it("a member creates sessions, prompts and cancels", async () => {
    const t = await seedTenant();
    const keys = await keysByRole(t);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent, keys.member);
    await startTurn(client, agent, sessionId, "p1");
    client.notify("session/cancel", { sessionId });
    expect((await agent.peer.next(isMethod("session/cancel"))).params.sessionId).toBe(sessionId);
  });

  it("an agent key never speaks /acp", async () => {
    const t = await seedTenant();
    const refused = await SELF.fetch("http://gateway.test/acp?agent=scripted", {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${t.agentKey}` },
    });
    expect(refused.status).toBe(403);
    await expect(connect("/acp?agent=scripted", t.clientKey)).resolves.toBeDefined();
  });
});
