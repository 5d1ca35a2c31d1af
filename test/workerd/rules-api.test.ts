import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addKey, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn, api } from "./helpers";

const gitStatus = { decision: "allow", scope: { project: "/projects/demo" }, matcher: { type: "command", prefix: ["git", "status"] } };

describe("the rules API", () => {
  it("creates, lists, filters, dry-runs, changes and revokes rules", async () => {
    const t = await seedTenant();
    const created = await api("/v1/rules", t.adminKey, { method: "POST", body: gitStatus });
    expect(created.status).toBe(201);
    const { rule } = (await created.json()) as { rule: Record<string, any> };
    expect(rule).toMatchObject({
      decision: "allow",
      scope: { project: "/projects/demo" },
      matcher: gitStatus.matcher,
      revokedAt: null,
      hits: 0,
      createdBy: { user: "admin" },
    });

    const list = (await (await api("/v1/rules?q=git", t.clientKey)).json()) as { items: { id: string }[]; nextCursor: string | null };
    expect(list.items.map((r) => r.id)).toEqual([rule.id]);
    expect(((await (await api("/v1/rules?decision=reject", t.clientKey)).json()) as { items: unknown[] }).items).toEqual([]);

    const dry = (await (
      await api("/v1/rules/test", t.clientKey, {
        method: "POST",
        body: {
          toolCall: { toolCallId: "x", kind: "execute", rawInput: { command: "git status -s" } },
          cwd: "/projects/demo",
          agent: "any",
        },
      })
    ).json()) as Record<string, any>;
    expect(dry).toMatchObject({ decision: "allow", rule: { id: rule.id }, option: { kind: "allow_once" } });
    const outside = (await (
      await api("/v1/rules/test", t.clientKey, {
        method: "POST",
        body: { toolCall: { kind: "execute", rawInput: { command: "git status" } }, cwd: "/elsewhere", agent: "any" },
      })
    ).json()) as Record<string, any>;
    expect(outside).toEqual({ decision: null, rule: null, option: null });

    const patched = await api(`/v1/rules/${rule.id}`, t.adminKey, { method: "PATCH", body: { expiresAt: 1 } });
    expect(((await patched.json()) as { rule: { expiresAt: number } }).rule.expiresAt).toBe(1);
    const expired = (await (
      await api("/v1/rules/test", t.clientKey, {
        method: "POST",
        body: { toolCall: { kind: "execute", rawInput: { command: "git status" } }, cwd: "/projects/demo", agent: "a" },
      })
    ).json()) as Record<string, any>;
    expect(expired.decision).toBeNull();

    expect((await api(`/v1/rules/${rule.id}`, t.adminKey, { method: "DELETE" })).status).toBe(204);
    const after = (await (await api("/v1/rules", t.adminKey)).json()) as { items: { revokedAt: number | null }[] };
    expect(after.items[0]?.revokedAt).toBeGreaterThan(0);
  });

  it("a label never lets a key revoke a rule it did not make: not a person's display name, not another key's label", async () => {
    const t = await seedTenant();
    const created = (await (await api("/v1/rules", t.adminKey, { method: "POST", body: gitStatus })).json()) as { rule: { id: string } };
    // As a rule a person signed in with a token made from an answer: their person key id, their display name "alice".
    await env.DB.prepare("UPDATE decision_rules SET created_by_key = ?, created_by_user = ? WHERE id = ?")
      .bind("person:0123456789abcdef", "alice", created.rule.id)
      .run();
    expect((await api(`/v1/rules/${created.rule.id}`, t.clientKey, { method: "DELETE" })).status).toBe(403);
    // Between keys neither (decision 0041): a label is whatever its key's issuer wrote, not who someone is.
    await env.DB.prepare("UPDATE decision_rules SET created_by_key = ?, created_by_user = ? WHERE id = ?")
      .bind("key_other", "alice", created.rule.id)
      .run();
    expect((await api(`/v1/rules/${created.rule.id}`, t.clientKey, { method: "DELETE" })).status).toBe(403);
  });

  it("refuses bad input with 400, wrong key kinds with 403, and another tenant's rule with 404", async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const bad = await api("/v1/rules", a.adminKey, {
      method: "POST",
      body: { decision: "allow", matcher: { type: "command", prefix: [] } },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "invalid_request" } });
    // Writing rules is for approvers and up (decision 0028): a member's key is refused.
    const member = await addKey(a.tenantId, "client", "mia", null, { role: "member" });
    expect((await api("/v1/rules", member, { method: "POST", body: gitStatus })).status).toBe(403);
    expect((await api("/v1/rules", undefined)).status).toBe(401);
    const { rule } = (await (await api("/v1/rules", a.adminKey, { method: "POST", body: gitStatus })).json()) as { rule: { id: string } };
    expect((await api(`/v1/rules/${rule.id}`, b.adminKey, { method: "DELETE" })).status).toBe(404);
    expect((await api(`/v1/rules/${rule.id}`, b.adminKey, { method: "PATCH", body: { expiresAt: null } })).status).toBe(404);
    expect(((await (await api("/v1/rules", b.adminKey)).json()) as { items: unknown[] }).items).toEqual([]);
    const still = (await (await api("/v1/rules", a.adminKey)).json()) as { items: { id: string; revokedAt: null }[] };
    expect(still.items).toMatchObject([{ id: rule.id, revokedAt: null }]);
    // An approver (a client key without a role) may revoke only rules its user made; admins revoke any.
    expect((await api(`/v1/rules/${rule.id}`, a.clientKey, { method: "DELETE" })).status).toBe(403);
  });

  it("revoking through the API stops the rule in a live session at once", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const { rule } = (await (await api("/v1/rules", t.adminKey, { method: "POST", body: gitStatus })).json()) as { rule: { id: string } };
    await startTurn(client, agent, sessionId, "p");
    const options = [
      { optionId: "ok", name: "Allow", kind: "allow_once" },
      { optionId: "no", name: "Reject", kind: "reject_once" },
    ];
    const first = agent.askPermission(sessionId, { toolCallId: "g1", kind: "execute", rawInput: { command: "git status" } }, options);
    expect((await agent.peer.next(isResponseTo(first))).result.outcome.optionId).toBe("ok");
    expect((await api(`/v1/rules/${rule.id}`, t.adminKey, { method: "DELETE" })).status).toBe(204);
    agent.askPermission(sessionId, { toolCallId: "g2", kind: "execute", rawInput: { command: "git status" } }, options);
    expect((await client.next(isMethod("session/request_permission"))).params.toolCall.toolCallId).toBe("g2");
  });

  it("serves the OpenAPI document generated from the schemas", async () => {
    const doc = (await (await api("/v1/openapi.json", undefined)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/v1/tenants",
        "/v1/tenants/{id}",
        "/v1/keys",
        "/v1/keys/{id}",
        "/v1/agents",
        "/v1/agents/{name}",
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/rules",
        "/v1/rules/{id}",
        "/v1/rules/test",
        "/v1/audit",
        "/v1/audit/export",
      ]),
    );
  });
});

describe("the audit API", () => {
  it("lists resolutions newest first, filters them and pages with a cursor", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId, "p");
    for (const id of ["q1", "q2", "q3"]) {
      const req = agent.askPermission(sessionId, { toolCallId: id, kind: "read", locations: [{ path: `/p/${id}` }] });
      client.respond((await client.next(isMethod("session/request_permission"))).id, {
        outcome: { outcome: "selected", optionId: "allow" },
      });
      await agent.peer.next(isResponseTo(req));
    }
    let page: { items: { toolCallId: string; decidedBy: { type: string; user: string } }[]; nextCursor: string | null } = {
      items: [],
      nextCursor: null,
    };
    // Audit rows reach D1 in batches (100 ms after a batch's first resolution): wait for the newest.
    for (let i = 0; i < 100 && page.items[0]?.toolCallId !== "q3"; i++) {
      page = (await (await api("/v1/audit?limit=2&decidedBy=person", t.adminKey)).json()) as typeof page;
      if (page.items[0]?.toolCallId !== "q3") await scheduler.wait(20);
    }
    expect(page.items.map((e) => e.toolCallId)).toEqual(["q3", "q2"]);
    expect(page.items[0]?.decidedBy).toMatchObject({ type: "person", user: "alice" });
    const next = (await (await api(`/v1/audit?limit=2&cursor=${page.nextCursor}`, t.adminKey)).json()) as typeof page;
    expect(next.items.map((e) => e.toolCallId)).toEqual(["q1"]);
    const other = await seedTenant();
    expect(((await (await api("/v1/audit", other.adminKey)).json()) as typeof page).items).toEqual([]);
  });
});
