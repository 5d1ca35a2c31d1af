// An agent name belongs to the agent key that first dialled in under it (or the key an admin bound it
// to): another agent key of the same tenant is refused with 403 before the live agent hears of it, so
// it can neither close the live agent nor receive the session's next prompt. The same key
// reconnecting (a restart) still replaces its own older connection; an admin rebinds the name
// through PUT /v1/agents/{name}/owner.

import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  type ScriptedAgent,
  type SeededTenant,
  addKey,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  upgrade,
  type Peer,
} from "./helpers";
import { ScriptedAgent as Scripted } from "./helpers";
import { sha256Hex } from "../../protocol/ids";

type Json = Record<string, any>;

const api = async (path: string, key: string, method: string, body?: unknown) => {
  const response = await SELF.fetch(`http://gateway.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, body: (await response.json().catch(() => null)) as Json };
};

const ownerOf = (t: SeededTenant, name: string) =>
  env.DB.prepare("SELECT owner_key_id AS owner FROM agents WHERE tenant_id = ? AND name = ?")
    .bind(t.tenantId, name)
    .first<{ owner: string | null }>();

/** A new agent key of the tenant, with its id (the id an admin binds a name to). */
async function agentKeyWithId(t: SeededTenant): Promise<{ key: string; id: string }> {
  const key = await addKey(t.tenantId, "agent", "other agent");
  return { key, id: await keyId(key) };
}

async function keyId(key: string): Promise<string> {
  const row = await env.DB.prepare("SELECT id FROM api_keys WHERE hash = ?")
    .bind(await sha256Hex(key))
    .first<{ id: string }>();
  if (!row) throw new Error("the key just added is not in D1");
  return row.id;
}

/** Dials in with `key` under `name` and answers initialize, as dialInAgent does with the tenant's key. */
async function dialInWith(key: string, name: string): Promise<ScriptedAgent> {
  const peer = await connect(`/agents/${name}/connect`, key);
  const init = await peer.next(isMethod("initialize"));
  peer.respond(init.id, {
    protocolVersion: 1,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "other", version: "1" },
    authMethods: [],
  });
  return new Scripted(peer, name);
}

/** The client's prompt reaches `agent` (and nobody else), and its answer reaches the client. */
async function promptAnsweredBy(client: Peer, agent: ScriptedAgent, sessionId: string, text: string): Promise<void> {
  client.send({ jsonrpc: "2.0", id: text, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text }] } });
  const prompt = await agent.peer.next(isMethod("session/prompt"));
  expect(prompt.params.prompt[0].text).toBe(text);
  agent.peer.respond(prompt.id, { stopReason: "end_turn" });
  expect((await client.next(isResponseTo(text))).result?.stopReason).toBe("end_turn");
}

const stillOpen = (peer: Peer) => Promise.race([peer.closed.then((c) => `closed ${c.code}`), Promise.resolve("open")]);

describe("an agent name belongs to the key that first registered it", () => {
  it("another agent key of the tenant dialling in under the name gets 403 naming how to rebind; the live agent stays and answers the next prompt", async () => {
    const t = await seedTenant();
    const first = await dialInAgent(t, "builder");
    const { client, sessionId } = await clientWithSession(t, first);
    // Preconditions: the name is registered by the first key, and the intruder's key is another live agent key.
    const firstKeyId = (await ownerOf(t, "builder"))?.owner;
    expect(firstKeyId).toEqual(expect.any(String));
    const intruder = await agentKeyWithId(t);
    expect(intruder.id).not.toBe(firstKeyId);

    const refused = await upgrade("/agents/builder/connect", intruder.key);
    expect(refused.status).toBe(403);
    const body = (await refused.json()) as Json;
    expect(body.error.code).toBe("forbidden");
    expect(body.error.message).toMatch(/belongs to another agent key/);
    expect(body.error.message).toContain(`PUT /v1/agents/builder/owner with {"keyId":"${intruder.id}"}`);
    expect(refused.webSocket).toBeNull();

    // The live agent was never replaced: it still gets the session's next prompt, and answers it.
    await promptAnsweredBy(client, first, sessionId, "still mine");
    expect(await stillOpen(first.peer)).toBe("open");
    expect((await ownerOf(t, "builder"))?.owner).toBe(firstKeyId);
  });

  it("the same key reconnecting (a restart) replaces its own older connection, which gets 4000, and the new one serves the next session", async () => {
    const t = await seedTenant();
    const before = await dialInAgent(t, "restarting");
    await clientWithSession(t, before);
    const after = await dialInAgent(t, "restarting");
    expect(await before.peer.closed).toMatchObject({ code: 4000 });
    const { client, sessionId } = await clientWithSession(t, after);
    await promptAnsweredBy(client, after, sessionId, "after restart");
  });

  it("of two keys dialling in at once under a new name, exactly one owns it and the other gets 403", async () => {
    const t = await seedTenant();
    const other = await agentKeyWithId(t);
    expect(await ownerOf(t, "contested")).toBeNull();
    const [a, b] = await Promise.all([upgrade("/agents/contested/connect", t.agentKey), upgrade("/agents/contested/connect", other.key)]);
    expect([a.status, b.status].sort()).toEqual([101, 403]);
    const winner = a.status === 101 ? a : b;
    winner.webSocket?.accept();
    winner.webSocket?.close(1000, "done");
  });

  it("an admin binds the name to another key through PUT /v1/agents/{name}/owner: the old connection closes, the new key dials in and serves the next session, the old key is refused", async () => {
    const t = await seedTenant();
    const first = await dialInAgent(t, "moving");
    const next = await agentKeyWithId(t);
    expect((await upgrade("/agents/moving/connect", next.key)).status).toBe(403);

    // Only an admin may rebind, and only to a live agent key of the tenant.
    expect((await api("/v1/agents/moving/owner", t.clientKey, "PUT", { keyId: next.id })).status).toBe(403);
    expect((await api("/v1/agents/moving/owner", t.adminKey, "PUT", { keyId: "key_nobody" })).status).toBe(404);
    const other = await seedTenant();
    const foreign = await agentKeyWithId(other);
    expect((await api("/v1/agents/moving/owner", t.adminKey, "PUT", { keyId: foreign.id })).status).toBe(404);
    expect(await stillOpen(first.peer)).toBe("open");

    const bound = await api("/v1/agents/moving/owner", t.adminKey, "PUT", { keyId: next.id });
    expect(bound.status).toBe(200);
    expect(bound.body.agent).toMatchObject({ name: "moving", keyId: next.id });
    expect(await first.peer.closed).toMatchObject({ code: 4401, reason: "the agent name was bound to another key" });

    const moved = await dialInWith(next.key, "moving");
    const again = await clientWithSession(t, moved);
    await promptAnsweredBy(again.client, moved, again.sessionId, "to the new key");
    const refused = await upgrade("/agents/moving/connect", t.agentKey);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toMatch(/belongs to another agent key/);
  });

  it("binding a name that another live key was created for is refused with 409 naming that key", async () => {
    const t = await seedTenant();
    await dialInAgent(t, "pinned");
    const createdFor = await addKey(t.tenantId, "agent", "pinned key", "pinned");
    const pinnedId = await keyId(createdFor);
    const next = await agentKeyWithId(t);
    const refused = await api("/v1/agents/pinned/owner", t.adminKey, "PUT", { keyId: next.id });
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain(`${pinnedId}`);
    expect(refused.body.error.message).toMatch(/revoke it first/);
  });

  it("an owner must be a live agent key that may dial in as the name, and a dial_out agent has none (400)", async () => {
    const t = await seedTenant();
    await dialInAgent(t, "strict");
    const elsewhere = await keyId(await addKey(t.tenantId, "agent", "for another", "other-name"));
    const client = await keyId(t.clientKey);
    const revoked = await agentKeyWithId(t);
    expect((await api(`/v1/keys/${revoked.id}`, t.adminKey, "DELETE")).status).toBe(204);
    for (const [keyId, reason] of [
      [elsewhere, /may dial in only as "other-name"/],
      [client, /is a client key/],
      [revoked.id, /revoked or expired/],
    ] as const) {
      const refused = await api("/v1/agents/strict/owner", t.adminKey, "PUT", { keyId });
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toMatch(reason);
    }
    expect((await api("/v1/agents", t.adminKey, "POST", { name: "remote", mode: "dial_out", url: "wss://agent.example/acp" })).status).toBe(
      201,
    );
    const dialOut = await api("/v1/agents/remote/owner", t.adminKey, "PUT", { keyId: revoked.id });
    expect(dialOut.status).toBe(400);
    expect(dialOut.body.error.message).toMatch(/is dial_out/);
    expect((await api("/v1/agents/nobody/owner", t.adminKey, "PUT", { keyId: client })).status).toBe(404);
  });
});
