import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { seedTenant } from "./helpers";

type Json = Record<string, any>;
const call = async (path: string, key: string | undefined, init: { method?: string; body?: unknown } = {}) => {
  const response = await SELF.fetch(`http://gateway.test${path}`, {
    method: init.method ?? "GET",
    headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), "Content-Type": "application/json" },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json };
};

describe("notification targets API", () => {
  it("creates a target with a generated secret shown once, lists it without the secret, deletes it", async () => {
    const t = await seedTenant();
    const created = await call("/v1/notification-targets", t.adminKey, {
      method: "POST",
      body: { name: "ops pager", url: "https://hooks.example.com/acp" },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: "ops pager", url: "https://hooks.example.com/acp", linkBaseUrl: "http://gateway.test" });
    expect(created.body.secret).toMatch(/^whsec_[0-9a-z]{40}$/);
    const listed = await call("/v1/notification-targets", t.adminKey);
    expect(listed.body.items).toHaveLength(1);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
    expect(listed.body.nextCursor).toBeNull();
    expect((await call(`/v1/notification-targets/${created.body.id}`, t.adminKey, { method: "DELETE" })).status).toBe(204);
    expect((await call(`/v1/notification-targets/${created.body.id}`, t.adminKey, { method: "DELETE" })).status).toBe(404);
    expect((await call("/v1/notification-targets", t.adminKey)).body.items).toEqual([]);
  });

  it("keeps a given secret and link origin, and pages with a cursor", async () => {
    const t = await seedTenant();
    const secret = "a-secret-the-receiver-already-has-0123";
    const first = await call("/v1/notification-targets", t.adminKey, {
      method: "POST",
      body: { url: "http://127.0.0.1:9999/hook", secret, linkBaseUrl: "https://acp.example.com" },
    });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ secret, name: "127.0.0.1:9999", linkBaseUrl: "https://acp.example.com" });
    await call("/v1/notification-targets", t.adminKey, { method: "POST", body: { url: "http://localhost:9999/other" } });
    const page1 = await call("/v1/notification-targets?limit=1", t.adminKey);
    expect(page1.body.items).toHaveLength(1);
    const page2 = await call(`/v1/notification-targets?limit=1&cursor=${page1.body.nextCursor}`, t.adminKey);
    expect(page2.body.items).toHaveLength(1);
    expect(page2.body.items[0].id).not.toBe(page1.body.items[0].id);
    expect(page2.body.nextCursor).toBeNull();
  });

  it("refuses plain http to other hosts, short secrets, non-admin keys; tenants never see each other's targets", async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const refused = await call("/v1/notification-targets", t.adminKey, { method: "POST", body: { url: "http://hooks.example.com/acp" } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/https URL/);
    const short = await call("/v1/notification-targets", t.adminKey, { method: "POST", body: { url: "https://h.example", secret: "x" } });
    expect(short.status).toBe(400);
    expect((await call("/v1/notification-targets", t.clientKey)).status).toBe(403);
    expect((await call("/v1/notification-targets", undefined)).status).toBe(401);
    const mine = await call("/v1/notification-targets", t.adminKey, { method: "POST", body: { url: "https://h.example/x" } });
    expect((await call("/v1/notification-targets", other.adminKey)).body.items).toEqual([]);
    expect((await call(`/v1/notification-targets/${mine.body.id}`, other.adminKey, { method: "DELETE" })).status).toBe(404);
  });

  it("the tenant setting notifyAfterMs is accepted by the operator's tenants PATCH", async () => {
    const t = await seedTenant();
    const patched = await call(`/v1/tenants/${t.tenantId}`, "test-operator-token", {
      method: "PATCH",
      body: { settings: { notifyAfterMs: 5000 } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.tenant.settings).toEqual({ notifyAfterMs: 5000 });
    const bad = await call(`/v1/tenants/${t.tenantId}`, "test-operator-token", {
      method: "PATCH",
      body: { settings: { notifyAfterMs: -1 } },
    });
    expect(bad.status).toBe(400);
  });
});
