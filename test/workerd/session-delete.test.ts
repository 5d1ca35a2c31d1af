// session/delete and logout when several clients, of several people in one tenant, share a session
// (protocol/session-delete.ts): who may delete, what the others are told, the index and the
// SessionObject afterwards; logout ends only the connection that sent it.

import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { attachClient, barrier, clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { setD1 } from "./fuzz-faults";
import { objects } from "../../durable-objects/objects";

async function indexed(tenantId: string, sessionId: string): Promise<boolean> {
  const row = await env.DB.prepare("SELECT 1 FROM sessions WHERE tenant_id = ? AND session_id = ?").bind(tenantId, sessionId).first();
  return row !== null;
}

describe("session/delete with several clients", () => {
  it("another person of the tenant deletes: the agent is asked, the other client is told and detached but stays connected, and the session is gone from the index and its object", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    expect((await bob.request("initialize", { protocolVersion: 1 })).result.agentCapabilities.sessionCapabilities.delete).toEqual({});

    const deleting = bob.request("session/delete", { sessionId });
    const asked = await agent.peer.next(isMethod("session/delete"));
    expect(asked.params).toEqual({ sessionId });
    agent.peer.respond(asked.id, {});
    expect((await deleting).result).toEqual({});

    const notice = await alice.next(isMethod("_acp_gateway/session_deleted"));
    expect(notice.params).toMatchObject({ sessionId, deletedBy: "bob" });
    expect(notice.params.message).toMatch(/was deleted by bob; you were detached/);
    // Alice's connection stays: she lists sessions on it, and the deleted one is not there.
    const listed = await alice.request("session/list", {});
    expect(listed.result.sessions.map((s: { sessionId: string }) => s.sessionId)).not.toContain(sessionId);
    const prompt = await alice.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "still there?" }] });
    expect(prompt.error).toMatchObject({ code: -32002 });
    expect((await bob.request("session/load", { sessionId, cwd: "/", mcpServers: [] })).error).toMatchObject({ code: -32002 });

    expect(await indexed(t.tenantId, sessionId)).toBe(false);
    const object = objects.session(env, t.tenantId, sessionId);
    expect(await object.exists()).toBe(false);
  });

  it("D1 fails as the session is deleted: the deletion stands and the clients are told, and the alarm takes the index row out once D1 is back", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const object = objects.session(env, t.tenantId, sessionId);
    await setD1(object, "down");

    const deleting = alice.request("session/delete", { sessionId });
    agent.peer.respond((await agent.peer.next(isMethod("session/delete"))).id, {});
    expect((await deleting).result).toEqual({});
    expect(await object.exists()).toBe(false);
    // D1 refused the delete: the row is still listed, and the session remembers to remove it.
    expect(await indexed(t.tenantId, sessionId)).toBe(true);
    expect(await runDurableObjectAlarm(object)).toBe(true); // still down: tried again, kept
    expect(await indexed(t.tenantId, sessionId)).toBe(true);

    await setD1(object, "up");
    expect(await runDurableObjectAlarm(object)).toBe(true);
    await expect.poll(() => indexed(t.tenantId, sessionId)).toBe(false);
    // Done: nothing is left to retry, so no alarm stays set for it.
    await expect.poll(() => runDurableObjectAlarm(object)).toBe(false);
  });

  it("is refused while a turn is running, with what to do; the agent is not asked and nothing changes", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    alice.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
    await agent.peer.next(isMethod("session/prompt"));
    const refused = await bob.request("session/delete", { sessionId });
    expect(refused.error).toMatchObject({ code: -32600, data: { reason: "turn_in_progress" } });
    expect(refused.error.message).toMatch(/send session\/cancel and wait for it to end, then delete/);
    await barrier(bob, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "session/delete")).toEqual([]);
    expect(await indexed(t.tenantId, sessionId)).toBe(true);
  });

  it("an agent that does not implement session/delete: the gateway still deletes its own record", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const deleting = client.request("session/delete", { sessionId });
    const asked = await agent.peer.next(isMethod("session/delete"));
    agent.peer.send({ jsonrpc: "2.0", id: asked.id, error: { code: -32601, message: "Method not found" } });
    expect((await deleting).result).toEqual({});
    expect(await indexed(t.tenantId, sessionId)).toBe(false);
  });

  it("an agent that refuses: its error reaches the deleter and nothing is deleted", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const other = await attachClient(t, agent, sessionId);
    const deleting = client.request("session/delete", { sessionId });
    const asked = await agent.peer.next(isMethod("session/delete"));
    agent.peer.send({ jsonrpc: "2.0", id: asked.id, error: { code: -32000, message: "session is pinned" } });
    expect((await deleting).error).toMatchObject({ code: -32000, message: "session is pinned" });
    expect(await indexed(t.tenantId, sessionId)).toBe(true);
    // The other client is still attached: the agent's updates reach it.
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "still here" } });
    expect((await other.next(isMethod("session/update"))).params.update.content.text).toBe("still here");
  });
});

describe("logout with several clients", () => {
  it("ends only the connection that sent it: answered, closed, never relayed; another connection of the same key goes on", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: first, sessionId } = await clientWithSession(t, agent);
    const second = await attachClient(t, agent, sessionId, t.clientKey);
    expect((await first.request("logout", {})).result).toEqual({});
    const closed = await first.closed;
    expect(closed).toMatchObject({ code: 1000, reason: "logged out" });
    await barrier(second, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.method === "logout")).toEqual([]);
    const again = connect(`/acp?agent=${agent.name}`, t.clientKey);
    const peer = await again;
    expect((await peer.request("initialize", { protocolVersion: 1 })).result).toBeDefined();
    second.send({ jsonrpc: "2.0", id: "list", method: "session/list", params: {} });
    expect((await second.next(isResponseTo("list"))).result.sessions).toBeDefined();
  });
});
