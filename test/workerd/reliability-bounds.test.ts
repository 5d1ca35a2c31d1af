// Waiting requests do not pile up, and a session that nobody waits on leaves the rules push list
// (its rules shard's list of sessions it tells of a change: those with requests waiting on people;
// durable-objects/rules/rules-shard.ts).

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { allowNpmTest, barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { restartObject, sessionStub } from "./fuzz-faults";
import { objects } from "../../durable-objects/objects";
import { RULES_SHARDS } from "../../durable-objects/rules/contract";
import { shardOf } from "../../protocol/generation-lease";

/** The push list of the session's rules shard. */
async function pushList(tenantId: string, sessionId: string): Promise<string[]> {
  return runInDurableObject(objects.rulesShard(env, tenantId, shardOf(sessionId, RULES_SHARDS)), (_instance, state) =>
    state.storage.sql
      .exec<{ session_id: string }>("SELECT session_id FROM watching")
      .toArray()
      .map((r) => r.session_id),
  );
}

/** The push list, polled until it equals `expected` (or 5 s). */
async function pushListBecomes(tenantId: string, sessionId: string, expected: string[]): Promise<void> {
  const deadline = Date.now() + 5000;
  let seen = await pushList(tenantId, sessionId);
  while (JSON.stringify(seen) !== JSON.stringify(expected) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    seen = await pushList(tenantId, sessionId);
  }
  expect(seen).toEqual(expected);
}

describe("reliability: bounds on waiting", () => {
  it("refuses a permission request beyond the session's bound with a clear error to the agent and a notice to the clients", async () => {
    const t = await seedTenant({ limits: { pendingPermissionsPerSession: 2 } });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
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

  it("a session that waits on nobody leaves its shard's push list at the next change", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, { toolCallId: "w", kind: "edit" }, undefined, "pw");
    await client.next(isMethod("session/request_permission"));
    await pushListBecomes(t.tenantId, sessionId, [sessionId]);
    agent.peer.notify("$/cancel_request", { requestId: "pw" });
    await agent.peer.next(isResponseTo("pw"));
    await barrier(client, agent, sessionId);
    // Still listed until the next change finds it waiting on nobody (evicted or not).
    await restartObject(sessionStub(t.tenantId, sessionId));
    await allowNpmTest(t);
    await pushListBecomes(t.tenantId, sessionId, []);
  });

  it("a session evicted with a request waiting stays on the push list, and a new rule that matches answers the request", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, { toolCallId: "g", kind: "execute", rawInput: { command: "npm test" } }, undefined, "pg");
    await client.next(isMethod("session/request_permission"));
    await restartObject(sessionStub(t.tenantId, sessionId));
    await allowNpmTest(t);
    expect((await agent.peer.next(isResponseTo("pg"))).result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    await pushListBecomes(t.tenantId, sessionId, [sessionId]);
  });
});
