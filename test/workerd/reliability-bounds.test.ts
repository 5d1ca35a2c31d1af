// Waiting requests do not pile up, and a session that nobody waits on leaves the rules watch list.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";

const rulesStub = (tenantId: string) => env.RULES.get(env.RULES.idFromName(tenantId));

async function watched(tenantId: string): Promise<string[]> {
  return runInDurableObject(rulesStub(tenantId), (_instance, state) =>
    state.storage.sql
      .exec<{ session_id: string }>("SELECT session_id FROM watchers")
      .toArray()
      .map((r) => r.session_id),
  );
}

/** The watch list as the session's fire-and-forget calls leave it: polled until it equals `expected` (or 5 s). */
async function watchListBecomes(tenantId: string, expected: string[]): Promise<void> {
  const deadline = Date.now() + 5000;
  let seen = await watched(tenantId);
  while (JSON.stringify(seen) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    seen = await watched(tenantId);
  }
  expect(seen).toEqual(expected);
}

describe("reliability: bounds on waiting", () => {
  it("refuses a permission request beyond the session's bound with a clear error to the agent and a notice to the clients", async () => {
    const t = await seedTenant({ limits: { pendingPermissionsPerSession: 2 } });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    agent.askPermission(sessionId, { toolCallId: "a", kind: "edit" }, undefined, "p1");
    agent.askPermission(sessionId, { toolCallId: "b", kind: "edit" }, undefined, "p2");
    await client.next(isMethod("session/request_permission"));
    await client.next(isMethod("session/request_permission"));
    agent.askPermission(sessionId, { toolCallId: "c", kind: "edit" }, undefined, "p3");
    const refused = await agent.peer.next(isResponseTo("p3"));
    expect(refused.error).toMatchObject({
      code: -32029,
      data: { reason: "pending_permission_limit", limit: "pendingPermissionsPerSession", value: 2 },
    });
    expect(refused.error.message).toMatch(/Too many permission requests are waiting in session .* limit is 2/);
    const notice = await client.next(isMethod("_acp_gateway/limit_reached"));
    expect(notice.params).toMatchObject({ sessionId, data: { reason: "pending_permission_limit" } });
    await barrier(client, agent, sessionId);
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
  });

  it("leaves the rules watch list when the agent withdraws its last waiting request", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    agent.askPermission(sessionId, { toolCallId: "w", kind: "edit" }, undefined, "pw");
    await client.next(isMethod("session/request_permission"));
    await watchListBecomes(t.tenantId, [sessionId]);
    agent.peer.notify("$/cancel_request", { requestId: "pw" });
    await agent.peer.next(isResponseTo("pw"));
    await barrier(client, agent, sessionId);
    await watchListBecomes(t.tenantId, []);
  });

  it("leaves the rules watch list when the agent is gone with requests waiting", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    agent.askPermission(sessionId, { toolCallId: "g", kind: "edit" });
    await client.next(isMethod("session/request_permission"));
    await watchListBecomes(t.tenantId, [sessionId]);
    agent.peer.close();
    await client.next(isResponseTo("turn")); // the turn failed: agentGone has run
    const back = await dialInAgent(t, agent.name);
    await barrier(client, back, sessionId);
    await watchListBecomes(t.tenantId, []);
  });
});
