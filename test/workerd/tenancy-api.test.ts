import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bytesEqualInConstantTime, constantTimeEqual } from "../../worker/auth";
import { clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant, upgrade } from "./helpers";
import { objects } from "../../durable-objects/objects";

const OPERATOR = "test-operator-token";
type Json = Record<string, any>;
const call = async (path: string, key: string | undefined, init: { method?: string; body?: unknown; raw?: string } = {}) => {
  const response = await SELF.fetch(`http://gateway.test${path}`, {
    method: init.method ?? "GET",
    headers: { ...(key ? { Authorization: `Bearer ${key}` } : {}), "Content-Type": "application/json" },
    ...(init.raw !== undefined ? { body: init.raw } : init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json };
};

describe("operator and tenant admin API", () => {
  it("creates a tenant with its first admin key, which then manages keys and agents", async () => {
    const slug = `acme-${crypto.randomUUID().slice(0, 8)}`;
    const created = await call("/v1/tenants", OPERATOR, { method: "POST", body: { slug, name: "Acme" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ tenant: { slug, name: "Acme", disabled: false }, adminKey: { kind: "admin" } });
    const admin = created.body.adminKey.key as string;
    expect((await call("/v1/tenants", OPERATOR, { method: "POST", body: { slug, name: "Again" } })).status).toBe(409);

    const key = await call("/v1/keys", admin, { method: "POST", body: { kind: "client", label: "carol" } });
    expect(key.status).toBe(201);
    expect(key.body.key).toMatch(/^acp_client_/);
    const listed = await call("/v1/keys", admin);
    expect(JSON.stringify(listed.body)).not.toContain(key.body.key);
    expect(JSON.stringify(listed.body)).not.toMatch(/hash/);
    expect(listed.body.items.map((k: Json) => k.label).sort()).toEqual(["admin", "carol"]);

    const agent = await call("/v1/agents", admin, {
      method: "POST",
      body: { name: "remote", mode: "dial_out", url: "https://agent.example/acp", headers: { "X-Token": "s3cret" }, isDefault: true },
    });
    expect(agent.status).toBe(201);
    expect(agent.body.agent).toMatchObject({ name: "remote", mode: "dial_out", headerNames: ["X-Token"], isDefault: true });
    for (const r of [agent, await call("/v1/agents", admin), await call("/v1/agents/remote", admin)])
      expect(JSON.stringify(r.body)).not.toContain("s3cret");
    expect((await call("/v1/agents", admin, { method: "POST", body: { name: "remote" } })).status).toBe(409);
    expect((await call("/v1/agents", admin, { method: "POST", body: { name: "x", mode: "dial_out" } })).status).toBe(400);
    expect(
      (await call("/v1/agents/remote", admin, { method: "PATCH", body: { description: "Remote agent" } })).body.agent.description,
    ).toBe("Remote agent");
    expect((await call("/v1/agents/remote", admin, { method: "DELETE" })).status).toBe(204);
    expect((await call("/v1/agents/remote", admin)).status).toBe(404);
  });

  it("answers each class of bad input with its status and the error envelope", async () => {
    const t = await seedTenant();
    const cases: [Promise<{ status: number; body: Json }>, number][] = [
      [call("/v1/keys", undefined), 401],
      [call("/v1/keys", "nope"), 401],
      [call("/v1/keys", t.clientKey), 403],
      [call("/v1/tenants", t.adminKey), 401],
      [call("/v1/keys", t.adminKey, { method: "POST", body: { kind: "superuser" } }), 400],
      [call("/v1/keys", t.adminKey, { method: "POST", raw: "{not json" }), 400],
      [call("/v1/keys", t.adminKey, { method: "POST", body: { kind: "client", agent: "x" } }), 400],
      [call("/v1/agents", t.adminKey, { method: "POST", body: { name: "bad name!" } }), 400],
      [call("/v1/agents", t.adminKey, { method: "POST", body: { name: "big", description: "x".repeat(70 * 1024) } }), 413],
      [call("/v1/keys/key_unknown", t.adminKey, { method: "DELETE" }), 404],
      [call("/v1/sessions/unknown", t.clientKey), 404],
    ];
    for (const [pending, status] of cases) {
      const r = await pending;
      expect(r.status).toBe(status);
      expect(r.body).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
    }
  });

  it("an agent key bound to one name cannot dial in as another; an unbound one registers the name", async () => {
    const t = await seedTenant();
    const bound = (await call("/v1/keys", t.adminKey, { method: "POST", body: { kind: "agent", agent: "only-this" } })).body.key as string;
    expect((await upgrade("/agents/other/connect", bound)).status).toBe(403);
    expect((await upgrade("/agents/only-this/connect", bound)).status).toBe(101);
    await dialInAgent(t, "self-registered");
    const agents = await call("/v1/agents", t.adminKey);
    expect(agents.body.items.map((a: Json) => a.name).sort()).toEqual(["only-this", "self-registered"]);
  });

  it("answers 429 when one key makes too many REST calls, and other keys go on", async () => {
    const t = await seedTenant();
    // The limit is 600 a minute in fixed windows: a run that crosses a window's end may spread its
    // calls over two, so up to 1,300 (in parallel batches) always put more than 600 in one of them.
    let limitedOnce = false;
    for (let sent = 0; sent < 1300 && !limitedOnce; sent += 25) {
      const batch = Array.from({ length: 25 }, () =>
        SELF.fetch("http://gateway.test/v1/sessions", { headers: { Authorization: `Bearer ${t.clientKey}` } }).then((r) => r.status),
      );
      limitedOnce = (await Promise.all(batch)).includes(429);
    }
    expect(limitedOnce).toBe(true);
    const limited = await call("/v1/sessions", t.clientKey);
    expect(limited).toMatchObject({ status: 429, body: { error: { code: "rate_limited" } } });
    expect((await call("/v1/sessions", t.clientKey2)).status).toBe(200);
  }, 120_000);

  it("records when a key was last used", async () => {
    const t = await seedTenant();
    await call("/v1/sessions", t.clientKey);
    let client: Json | undefined;
    for (let i = 0; i < 100 && !client?.lastUsedAt; i++) {
      client = (await call("/v1/keys", t.adminKey)).body.items.find((k: Json) => k.label === "alice");
      if (!client?.lastUsedAt) await scheduler.wait(20);
    }
    expect(client?.lastUsedAt).toBeGreaterThan(0);
  });

  it("compares key hashes in constant time: every byte is read whether they differ first or last or not at all", () => {
    const reads = (bytes: number[]) => {
      let count = 0;
      const counted = new Proxy(bytes, {
        get: (target, key, receiver) => {
          if (typeof key === "string" && /^\d+$/.test(key)) count++;
          return Reflect.get(target, key, receiver);
        },
      });
      return { counted, count: () => count };
    };
    const hash = [...new TextEncoder().encode("a".repeat(64))];
    const cases = [hash, [0x62, ...hash.slice(1)], [...hash.slice(0, 63), 0x62]];
    const counts = cases.map((other) => {
      const left = reads(hash);
      const right = reads(other);
      bytesEqualInConstantTime(left.counted, right.counted);
      return [left.count(), right.count()];
    });
    expect(counts).toEqual([
      [64, 64],
      [64, 64],
      [64, 64],
    ]);
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
  });
});

describe("isolation between tenants", () => {
  it("tenant B gets not found for every id of tenant A, and A's state is unchanged", async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const agentA = await dialInAgent(a, "shared-name");
    const { client: clientA, sessionId } = await clientWithSession(a, agentA);
    const keyA = (await call("/v1/keys", a.adminKey, { method: "POST", body: { kind: "client", label: "a-user" } })).body.id as string;
    const ruleA = (
      await call("/v1/rules", a.adminKey, { method: "POST", body: { decision: "allow", matcher: { type: "command", prefix: ["ls"] } } })
    ).body.rule.id as string;
    const before = (await call(`/v1/sessions/${sessionId}`, a.clientKey)).body;

    // REST: every endpoint that takes an id.
    expect((await call(`/v1/sessions/${sessionId}`, b.clientKey)).status).toBe(404);
    expect((await call(`/v1/keys/${keyA}`, b.adminKey, { method: "DELETE" })).status).toBe(404);
    expect((await call(`/v1/agents/shared-name`, b.adminKey)).status).toBe(404);
    expect((await call(`/v1/agents/shared-name`, b.adminKey, { method: "PATCH", body: { description: "mine" } })).status).toBe(404);
    expect((await call(`/v1/agents/shared-name`, b.adminKey, { method: "DELETE" })).status).toBe(404);
    expect((await call(`/v1/rules/${ruleA}`, b.adminKey, { method: "DELETE" })).status).toBe(404);
    expect((await call(`/v1/rules/${ruleA}`, b.adminKey, { method: "PATCH", body: { expiresAt: 1 } })).status).toBe(404);
    for (const path of ["/v1/sessions", "/v1/keys", "/v1/rules", "/v1/audit", "/v1/agents"]) {
      const listed = await call(path, b.adminKey);
      expect(JSON.stringify(listed.body), path).not.toMatch(new RegExp(`${sessionId}|${keyA}|${ruleA}|a-user`));
    }

    // ACP: every method that takes a sessionId, over B's own connection to an agent of the same name.
    const agentB = await dialInAgent(b, "shared-name");
    const clientB = await connect("/acp?agent=shared-name", b.clientKey);
    await clientB.request("initialize", { protocolVersion: 1 });
    for (const [method, params] of [
      ["session/load", { sessionId, cwd: "/", mcpServers: [] }],
      ["session/prompt", { sessionId, prompt: [{ type: "text", text: "steal" }] }],
      ["session/set_mode", { sessionId, modeId: "yolo" }],
      ["session/resume", { sessionId }],
    ] as const) {
      const answer = await clientB.request(method, params);
      expect(answer.error?.code, method).toBe(-32002);
    }
    clientB.notify("session/cancel", { sessionId });
    const list = await clientB.request("session/list", {});
    expect(list.result.sessions).toEqual([]);

    // A's session, key, agent and rule are as they were, and A's agent heard nothing from B.
    clientA.send({ jsonrpc: "2.0", id: "still", method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agentA.peer.next(isMethod("session/prompt"));
    expect(prompt.params.prompt).toEqual([]);
    expect(agentA.peer.unclaimed().filter((m) => m.method === "session/cancel" || m.method === "session/set_mode")).toEqual([]);
    agentA.peer.respond(prompt.id, { stopReason: "end_turn" });
    await clientA.next(isResponseTo("still"));
    const after = (await call(`/v1/sessions/${sessionId}`, a.clientKey)).body;
    expect({ ...after, clients: [], lastSeq: 0 }).toEqual({ ...before, clients: [], lastSeq: 0 });
    expect((await call("/v1/keys", a.adminKey)).body.items.find((k: Json) => k.id === keyA).revokedAt).toBeNull();
    expect((await call("/v1/agents/shared-name", a.adminKey)).status).toBe(200);
    expect((await call("/v1/rules", a.adminKey)).body.items[0]).toMatchObject({ id: ruleA, revokedAt: null, expiresAt: null });
    expect(agentB.peer.unclaimed().filter((m) => m.method !== undefined)).toEqual([]);
  });

  it("a guessed session id of another tenant names an empty object of one's own tenant", async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const agentA = await dialInAgent(a);
    const { sessionId } = await clientWithSession(a, agentA);
    const theirs = objects.session(env, a.tenantId, sessionId);
    const guessed = objects.session(env, b.tenantId, sessionId);
    expect(theirs.id.toString()).not.toBe(guessed.id.toString());
    expect(await guessed.exists()).toBe(false);
    // The tenant is the object's name: b's call for a's session id reaches b's own, empty object.
    expect(await guessed.snapshot()).toBeNull();
    expect(await theirs.exists()).toBe(true);
  });
});

describe("revocation and expiry", () => {
  it("a revoked key is refused on the next request and its open WebSockets close", async () => {
    const t = await seedTenant();
    const clientKey = (await call("/v1/keys", t.adminKey, { method: "POST", body: { kind: "client", label: "dave" } })).body;
    const agentKey = (await call("/v1/keys", t.adminKey, { method: "POST", body: { kind: "agent" } })).body;
    const live = await connect("/acp?agent=revoked", clientKey.key);
    const agentSocket = await connect("/agents/revoked/connect", agentKey.key);
    expect((await call(`/v1/keys/${clientKey.id}`, t.adminKey, { method: "DELETE" })).status).toBe(204);
    expect((await call(`/v1/keys/${agentKey.id}`, t.adminKey, { method: "DELETE" })).status).toBe(204);
    expect((await agentSocket.closed).code).toBe(4401);
    expect((await live.closed).code).toBe(4401);
    expect((await upgrade("/acp?agent=revoked", clientKey.key)).status).toBe(401);
    expect((await call("/v1/sessions", clientKey.key)).status).toBe(401);
  });

  it("an expired key is refused, and a disabled tenant's connections close", async () => {
    const t = await seedTenant();
    const expiring = (await call("/v1/keys", t.adminKey, { method: "POST", body: { kind: "client", expiresAt: Date.now() + 60_000 } }))
      .body;
    const live = await connect("/acp?agent=x", expiring.key);
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(Date.now() - 1, expiring.id)
      .run();
    expect((await live.closed).code).toBe(4401);
    expect((await call("/v1/sessions", expiring.key)).status).toBe(401);

    const agent = await connect("/agents/a1/connect", t.agentKey);
    const other = await connect("/acp?agent=a1", t.clientKey);
    expect((await call(`/v1/tenants/${t.tenantId}`, OPERATOR, { method: "PATCH", body: { disabled: true } })).body.tenant.disabled).toBe(
      true,
    );
    expect((await agent.closed).code).toBe(4401);
    expect((await other.closed).code).toBe(4401);
    expect((await upgrade("/acp?agent=a1", t.clientKey)).status).toBe(401);
  });
});
