// The console's sign-in look-up (decision 0030): GET /v1/sign-in?tenant=<slug> is public and tells a
// stranger only what a public OAuth client publishes — the issuer and the client id — and the same
// "key" for an unknown tenant, a disabled one and one without a provider; it is rate-limited per
// address. GET /v1/me names who a credential is.

import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { seedTenant } from "./helpers";

type Json = Record<string, any>;

async function call(path: string, init: { method?: string; key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await SELF.fetch(`http://gateway.test${path}`, {
    method: init.method ?? "GET",
    headers: {
      ...(init.key ? { Authorization: `Bearer ${init.key}` } : {}),
      ...(init.body !== undefined ? { "Content-Type": "application/json" } : {}),
      ...init.headers,
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
}

const OIDC = { issuer: "https://idp.example.com", jwksUrl: "https://idp.example.com/jwks.json", groupsClaim: "groups", nameClaim: "name" };

describe("GET /v1/sign-in", () => {
  it("gives a tenant's issuer and client id, and no other part of its configuration, to a caller without credentials", async () => {
    const t = await seedTenant();
    const put = await call("/v1/tenant/oidc", { method: "PUT", key: t.adminKey, body: { ...OIDC, audience: `aud-${t.slug}` } });
    expect(put.status).toBe(200);
    expect(put.body.clientId).toBeNull();

    const { status, body, headers } = await call(`/v1/sign-in?tenant=${t.slug}`);
    expect(status).toBe(200);
    expect(headers.get("Cache-Control")).toBe("no-store");
    expect(body).toEqual({
      tenant: t.slug,
      method: "provider",
      provider: { issuer: OIDC.issuer, clientId: `aud-${t.slug}`, token: "id_token", scope: "openid profile email" },
    });
    expect(JSON.stringify(body)).not.toContain("jwks");
    expect(JSON.stringify(body)).not.toContain("groups");
  });

  it("names the client id when it is not the audience, and the console is told to send the access token", async () => {
    const t = await seedTenant();
    const audience = `https://api.example.com/${t.slug}`;
    const put = await call("/v1/tenant/oidc", { method: "PUT", key: t.adminKey, body: { ...OIDC, audience, clientId: `spa-${t.slug}` } });
    expect(put.status).toBe(200);
    expect((await call("/v1/tenant/oidc", { key: t.adminKey })).body.clientId).toBe(`spa-${t.slug}`);
    const { body } = await call(`/v1/sign-in?tenant=${t.slug}`);
    expect(body.provider).toEqual({ issuer: OIDC.issuer, clientId: `spa-${t.slug}`, token: "access_token", scope: "openid profile email" });
    // The audience is not told: it is not what a public client publishes.
    expect(JSON.stringify(body)).not.toContain("api.example.com");
  });

  it("answers an unknown tenant, a disabled one and one without a provider alike: it is no way to list tenants", async () => {
    const plain = await seedTenant();
    const disabled = await seedTenant();
    await call("/v1/tenant/oidc", { method: "PUT", key: disabled.adminKey, body: { ...OIDC, audience: `aud-${disabled.slug}` } });
    await env.DB.prepare("UPDATE tenants SET disabled = 1 WHERE id = ?").bind(disabled.tenantId).run();
    const answers = await Promise.all(
      [plain.slug, disabled.slug, "no-such-tenant"].map(async (slug) => {
        const { status, body } = await call(`/v1/sign-in?tenant=${slug}`);
        return { status, body: { ...body, tenant: "*" } };
      }),
    );
    expect(answers).toEqual([0, 1, 2].map(() => ({ status: 200, body: { tenant: "*", method: "key" } })));
  });

  it("refuses a malformed slug with 400 and no lookup", async () => {
    const { status, body } = await call("/v1/sign-in?tenant=..%2Fadmin");
    expect(status).toBe(400);
    expect(body.error.message).toContain("tenant");
  });

  it("limits look-ups per address (429 beyond the REST limit), leaving other addresses alone", async () => {
    const ip = `203.0.113.${Math.floor(Math.random() * 250)}`;
    const headers = { "CF-Connecting-IP": ip };
    // Look-ups in batches of 50 until one is refused: the limit (600 a minute) refuses one within a
    // window's worth, or two where a window ends on the way (1,300 at most, bounded).
    const statuses: number[] = [];
    let refused: Json | undefined;
    for (let batch = 0; batch < 26 && !refused; batch++) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => call("/v1/sign-in?tenant=some-tenant", { headers })));
      statuses.push(...answers.map((a) => a.status));
      refused = answers.find((a) => a.status === 429)?.body;
    }
    expect(refused?.error.message).toContain("Too many sign-in look-ups from this address");
    expect(new Set(statuses)).toEqual(new Set([200, 429]));
    expect(statuses.indexOf(429)).toBeGreaterThanOrEqual(600);
    expect((await call("/v1/sign-in?tenant=some-tenant", { headers: { "CF-Connecting-IP": "198.51.100.7" } })).status).toBe(200);
  }, 60_000);

  it("refuses an OpenID Connect issuer that is not https", async () => {
    const t = await seedTenant();
    const { status, body } = await call("/v1/tenant/oidc", {
      method: "PUT",
      key: t.adminKey,
      body: { ...OIDC, issuer: "http://idp.example.com", audience: `aud-${t.slug}` },
    });
    expect(status).toBe(400);
    expect(body.error.message).toContain("issuer must be an https URL");
  });
});

describe("GET /v1/me", () => {
  it("names the tenant and the key's label, and refuses a caller without credentials", async () => {
    const t = await seedTenant();
    const { status, body } = await call("/v1/me", { key: t.clientKey });
    expect(status).toBe(200);
    expect(body).toEqual({
      tenant: t.slug,
      kind: "client",
      credential: "key",
      keyId: expect.any(String),
      label: "alice",
      person: null,
      role: "approver",
      expiresAt: null,
    });
    expect((await call("/v1/me")).status).toBe(401);
    expect((await call("/v1/me", { key: t.agentKey })).status).toBe(403);
  });
});
