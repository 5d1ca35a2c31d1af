// A live connection re-checks its credential (connection/key-recheck.ts): a person's token is good
// until its exp (plus the skew), and never once the tenant is disabled; a key as before.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { credentialStillValid } from "../../connection/key-recheck";
import type { Principal } from "../../core/principal";
import { seedTenant } from "./helpers";

function personPrincipal(tenantId: string, slug: string, expiresAt: number): Principal {
  return {
    tenantId,
    tenantSlug: slug,
    keyId: "person:test",
    kind: "client",
    credential: { type: "token", via: "oidc", expiresAt },
    label: "Alice",
    person: { issuer: "https://idp.test", subject: "u-alice", name: "Alice", groups: [] },
    role: null,
    agent: null,
    settings: {},
    lastUsedAt: null,
  };
}

describe("re-checking a person's token on a live connection", () => {
  it("keeps it until the token's expiry, and not after", async () => {
    const t = await seedTenant();
    const now = Date.now();
    expect(await credentialStillValid(env, personPrincipal(t.tenantId, t.slug, now + 1000), now)).toBe(true);
    expect(await credentialStillValid(env, personPrincipal(t.tenantId, t.slug, now), now)).toBe(false);
  });

  it("drops it once the tenant is disabled", async () => {
    const t = await seedTenant();
    const now = Date.now();
    await env.DB.prepare("UPDATE tenants SET disabled = 1 WHERE id = ?").bind(t.tenantId).run();
    expect(await credentialStillValid(env, personPrincipal(t.tenantId, t.slug, now + 60_000), now)).toBe(false);
  });
});
