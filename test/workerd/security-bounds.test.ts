// Bounds on what a tenant stores in the shared D1 (decision 0041): rules by count and bytes,
// notification targets by count, each within a hard maximum; each waiting request is sent to a
// bounded number of webhooks; only a rule's maker or an admin revokes it; the gateway fetches a
// tenant's keys (JWKS) only from a public host.

import { SELF, createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { targetsOfTenant } from "../../db/queries/notification-targets";
import app from "../../worker/index";
import { HARD_LIMITS } from "../../protocol/tenant-limits";
import { addKey, api, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

type Json = Record<string, any>;
const command = (word: string) => ({ decision: "allow", matcher: { type: "command", prefix: ["echo", word] } });
const post = async (key: string, body: unknown) => {
  const response = await api("/v1/rules", key, { method: "POST", body });
  return { status: response.status, body: (await response.json()) as Json };
};

describe("a tenant's rules are bounded", () => {
  it("past limits.rulesPerTenant a new rule is refused with 409 naming the limit; revoking one makes room", async () => {
    const t = await seedTenant({ limits: { rulesPerTenant: 3 } });
    const ids: string[] = [];
    for (const word of ["a", "b", "c"]) {
      const made = await post(t.adminKey, command(word));
      expect(made.status).toBe(201);
      ids.push(made.body.rule.id);
    }
    const refused = await post(t.adminKey, command("d"));
    expect(refused).toEqual({
      status: 409,
      body: { error: { code: "limit_exceeded", message: expect.stringMatching(/3 rules.*limits\.rulesPerTenant 3.*revoke/) } },
    });
    expect((await api(`/v1/rules/${ids[0]}`, t.adminKey, { method: "DELETE" })).status).toBe(204);
    expect((await post(t.adminKey, command("d"))).status).toBe(201);
  });

  it("one rule over 64 KiB (its matcher and the matcher's text) is refused with 413, and past limits.ruleBytesPerTenant a new rule is refused with 413", async () => {
    const t = await seedTenant({ limits: { ruleBytesPerTenant: 1024 } });
    const huge = { decision: "allow", matcher: { type: "argv", argv: Array.from({ length: 256 }, () => "x".repeat(130)) } };
    const tooLarge = await post(t.adminKey, huge);
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error).toEqual({ code: "limit_exceeded", message: expect.stringMatching(/one rule may be at most 65536/) });
    const described = (word: string) => ({ ...command(word), description: `${word} `.repeat(200).slice(0, 400) });
    expect((await post(t.adminKey, described("a"))).status).toBe(201);
    expect((await post(t.adminKey, described("b"))).status).toBe(201);
    const refused = await post(t.adminKey, described("c"));
    expect(refused.status).toBe(413);
    expect(refused.body.error.message).toMatch(/of 1024 bytes \(limits\.ruleBytesPerTenant\)/);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM decision_rules WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(rows?.n).toBe(2);
  });

  it("an always-allow when the tenant's rules are at their limit is applied once, and every client is told why", async () => {
    const t = await seedTenant({ limits: { rulesPerTenant: 1 } });
    expect((await post(t.adminKey, command("a"))).status).toBe(201);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const options = [
      { optionId: "once", name: "Allow once", kind: "allow_once" },
      { optionId: "always", name: "Always allow", kind: "allow_always" },
      { optionId: "no", name: "Reject", kind: "reject_once" },
    ];
    const asked = agent.askPermission(
      sessionId,
      { toolCallId: "c1", title: "Run", kind: "execute", rawInput: { command: "git status" } },
      options,
    );
    client.respond((await client.next(isMethod("session/request_permission"))).id, {
      outcome: { outcome: "selected", optionId: "always" },
    });
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    expect((await client.next(isMethod("_acp_gateway/rule_not_created"))).params.reason).toMatch(/limits\.rulesPerTenant/);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM decision_rules WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(rows?.n).toBe(1);
  });

  it("the operator may set the limits up to their hard maximum, and no further (400)", async () => {
    const t = await seedTenant();
    const patch = (limits: Json) =>
      SELF.fetch(`http://gateway.test/v1/tenants/${t.tenantId}`, {
        method: "PATCH",
        headers: { Authorization: "Bearer test-operator-token", "Content-Type": "application/json" },
        body: JSON.stringify({ settings: { limits } }),
      });
    expect((await patch({ rulesPerTenant: HARD_LIMITS.rulesPerTenant, notificationTargetsPerTenant: 5 })).status).toBe(200);
    expect((await patch({ rulesPerTenant: HARD_LIMITS.rulesPerTenant + 1 })).status).toBe(400);
    expect((await patch({ ruleBytesPerTenant: HARD_LIMITS.ruleBytesPerTenant + 1 })).status).toBe(400);
    expect((await patch({ notificationTargetsPerTenant: HARD_LIMITS.notificationTargetsPerTenant + 1 })).status).toBe(400);
  });
});

describe("a tenant's notification targets are bounded", () => {
  it("past limits.notificationTargetsPerTenant a new target is refused with 409 naming the limit", async () => {
    const t = await seedTenant({ limits: { notificationTargetsPerTenant: 2 } });
    const create = (n: number) =>
      api("/v1/notification-targets", t.adminKey, { method: "POST", body: { name: `t${n}`, url: `https://hooks.example.com/${n}` } });
    expect((await create(1)).status).toBe(201);
    expect((await create(2)).status).toBe(201);
    const refused = await create(3);
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: { code: "limit_exceeded", message: expect.stringMatching(/2 notification targets.*limits\.notificationTargetsPerTenant/) },
    });
  });

  it("each waiting request is sent to at most the hard maximum of targets, even where more were written by hand", async () => {
    const t = await seedTenant();
    const extra = HARD_LIMITS.notificationTargetsPerTenant + 10;
    await env.DB.batch(
      Array.from({ length: extra }, (_, i) =>
        env.DB.prepare(
          "INSERT INTO notification_targets (id, tenant_id, name, url, secret, link_base_url) VALUES (?, ?, ?, ?, 'secret', 'https://gw')",
        ).bind(`nt_${String(i).padStart(3, "0")}`, t.tenantId, `t${i}`, `https://hooks.example.com/${i}`),
      ),
    );
    expect(await targetsOfTenant(env.DB, t.tenantId)).toHaveLength(HARD_LIMITS.notificationTargetsPerTenant);
  });
});

describe("only a rule's maker or an admin revokes it", () => {
  it("an approver cannot revoke a rule another approver's key made by giving their key the same label", async () => {
    const t = await seedTenant();
    const maker = await addKey(t.tenantId, "client", "ada", null, { role: "approver" });
    const lookalike = await addKey(t.tenantId, "client", "ada", null, { role: "approver" });
    const made = await post(maker, command("a"));
    expect(made.status).toBe(201);
    const refused = await api(`/v1/rules/${made.body.rule.id}`, lookalike, { method: "DELETE" });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Json).error.message).toMatch(/Only an admin, or the approver who made the rule/);
    expect((await api(`/v1/rules/${made.body.rule.id}`, maker, { method: "DELETE" })).status).toBe(204);
  });
});

describe("a tenant's JWKS URL names a public host", () => {
  /** A request to the Worker with the deployment's default WEBHOOK_ALLOW_PRIVATE (unset: private hosts refused). */
  async function strict(path: string, init: RequestInit) {
    const ctx = createExecutionContext();
    const response = await app.fetch(new Request(`http://gateway.test${path}`, init), { ...env, WEBHOOK_ALLOW_PRIVATE: undefined }, ctx);
    await waitOnExecutionContext(ctx);
    return { status: response.status, body: (await response.json()) as Json };
  }

  it("a jwksUrl or Access team on a loopback, private or link-local host is refused with 400 when it is stored", async () => {
    const t = await seedTenant();
    const put = (path: string, body: Json) =>
      strict(path, {
        method: "PUT",
        headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
    const oidc = { issuer: "https://idp.example.com", audience: `aud-${t.slug}` };
    for (const jwksUrl of [
      "https://169.254.169.254/latest/meta-data",
      "https://127.0.0.1/jwks",
      "https://localhost/jwks",
      "https://[::1]/jwks",
      "https://10.1.2.3/jwks",
      "https://0x7f.1/jwks",
    ]) {
      const refused = await put("/v1/tenant/oidc", { ...oidc, jwksUrl });
      expect({ jwksUrl, status: refused.status, message: refused.body.error?.message }).toEqual({
        jwksUrl,
        status: 400,
        message: expect.stringMatching(/jwksUrl is refused: its host .* is .*public hosts/),
      });
    }
    expect((await put("/v1/tenant/access", { teamDomain: "192.168.1.10", audience: `aud-${t.slug}` })).status).toBe(400);
    expect((await put("/v1/tenant/oidc", { ...oidc, jwksUrl: "https://idp.example.com/jwks.json" })).status).toBe(200);
  });

  it("a stored jwksUrl on a private host (a row from before, or by hand) is never fetched: the token is refused naming why", async () => {
    const t = await seedTenant();
    await env.DB.prepare(
      "INSERT INTO tenant_identity (tenant_id, provider, issuer, audience, jwks_url, updated_at) VALUES (?, 'oidc', 'https://idp.example.com', ?, 'https://169.254.169.254/keys', 0)",
    )
      .bind(t.tenantId, `aud-${t.slug}`)
      .run();
    const token = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.eyJzdWIiOiJ4IiwiZXhwIjo5OTk5OTk5OTk5fQ.c2lnbmF0dXJl";
    const refused = await strict("/v1/sessions", { headers: { Authorization: `Bearer ${token}`, "Acp-Tenant": t.slug } });
    expect(refused.status).toBe(401);
    expect(refused.body.error.message).toMatch(/JWKS URL is refused: its host 169\.254\.169\.254 is link-local/);
  });
});
