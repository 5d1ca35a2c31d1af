// Agent keys: expiry closes a live agent socket within seconds (as revocation does); changing or
// removing an agent's registration closes its live connection; a name bound to an agent key, or
// registered as dial_out, cannot be taken by another key.

import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { randomId, sha256Hex } from "../../protocol/ids";
import { addKey, connect, dialInAgent, seedTenant, upgrade } from "./helpers";

const api = (path: string, key: string, method: string, body?: unknown) =>
  SELF.fetch(`http://gateway.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

async function agentKeyExpiringAt(tenantId: string, expiresAt: number): Promise<string> {
  const key = randomId("acp_agent", 32);
  await env.DB.prepare(
    "INSERT INTO api_keys (id, tenant_id, kind, label, agent, prefix, hash, expires_at) VALUES (?, ?, 'agent', NULL, NULL, ?, ?, ?)",
  )
    .bind(randomId("key"), tenantId, key.slice(0, 12), await sha256Hex(key), expiresAt)
    .run();
  return key;
}

describe("agent keys", () => {
  it("an agent key that expires closes its live agent socket within seconds, and the key is refused after", async () => {
    const t = await seedTenant();
    const key = await agentKeyExpiringAt(t.tenantId, Date.now() + 1_000);
    const agent = await connect("/agents/expiring/connect", key);
    const closed = await Promise.race([agent.closed, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 8_000))]);
    expect(closed).toMatchObject({ code: 4401, reason: "the agent key expired" });
    expect((await upgrade("/agents/expiring/connect", key)).status).toBe(401);
  }, 15_000);

  it("dial-in with another key under a name bound to an agent key is refused with 403", async () => {
    const t = await seedTenant();
    const bound = await addKey(t.tenantId, "agent", null, "builder");
    const taken = await upgrade("/agents/builder/connect", t.agentKey);
    expect(taken.status).toBe(403);
    expect(await taken.text()).toMatch(/bound to another agent key/);
    expect((await upgrade("/agents/builder/connect", bound)).status).toBe(101);
  });

  it("dial-in under a name registered as dial_out is refused with 403", async () => {
    const t = await seedTenant();
    const registered = await api("/v1/agents", t.adminKey, "POST", { name: "remote", mode: "dial_out", url: "wss://agent.example/acp" });
    expect(registered.status).toBe(201);
    const taken = await upgrade("/agents/remote/connect", t.agentKey);
    expect(taken.status).toBe(403);
    expect(await taken.text()).toMatch(/registered as dial_out/);
  });

  it("changing an agent's URL or headers, or removing it, closes its live connection", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "moving");
    expect((await api("/v1/agents/moving", t.adminKey, "PATCH", { description: "same place" })).status).toBe(200);
    const changed = await api("/v1/agents/moving", t.adminKey, "PATCH", { mode: "dial_out", url: "wss://elsewhere.example/acp" });
    expect(changed.status).toBe(200);
    expect(await agent.peer.closed).toMatchObject({ code: 4401, reason: "the agent's registration changed" });

    const other = await dialInAgent(t, "leaving");
    expect((await api("/v1/agents/leaving", t.adminKey, "DELETE")).status).toBe(204);
    expect(await other.peer.closed).toMatchObject({ code: 4401, reason: "the agent was removed" });
  });
});
