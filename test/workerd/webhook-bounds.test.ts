// Per-tenant webhook bounds (decision 0061), in the real Worker, session, TenantLimitsObject and D1,
// with the loopback webhook receiver: each waiting request goes to the tenant's notificationTargetsPerRequest
// targets (the first by id), and requests past the tenant's webhookPostsPerMinute wait for the next
// minute in their session — kept, not dropped — and the session says so in its log.

import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, inject, it, vi } from "vitest";
import type { SessionObject } from "../../durable-objects/session/session-object";
import { objects } from "../../durable-objects/objects";
import { type SeededTenant, clientWithSession, dialInAgent, isMethod, seedTenant } from "./helpers";

const receiver = inject("webhookReceiverUrl");

async function addTarget(t: SeededTenant, channel: string): Promise<string> {
  const response = await SELF.fetch("http://gateway.test/v1/notification-targets", {
    method: "POST",
    headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name: `pager ${channel}`, url: `${receiver}/hook/${channel}` }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

/** The next webhook the receiver got on this channel (long-poll), parsed, or null. */
async function nextDelivery(channel: string, timeoutMs = 5000): Promise<{ request: { toolCallId: string } } | null> {
  const response = await fetch(`${receiver}/next/${channel}?timeout=${timeoutMs}`);
  return response.status === 200 ? JSON.parse(((await response.json()) as { body: string }).body) : null;
}

const stub = (t: SeededTenant, sessionId: string) => objects.session(env, t.tenantId, sessionId);
const notifyRows = (t: SeededTenant, sessionId: string) =>
  runInDurableObject(stub(t, sessionId), (_: SessionObject, state) =>
    state.storage.sql
      .exec<{ perm_id: number; due_at: number | null; sent_at: number | null }>(
        "SELECT perm_id, due_at, sent_at FROM notify ORDER BY perm_id",
      )
      .toArray(),
  );
/** Time passes for the session: every waiting notify time is now. */
const dueNow = (t: SeededTenant, sessionId: string) =>
  runInDurableObject(stub(t, sessionId), (_: SessionObject, state) => {
    state.storage.sql.exec("UPDATE notify SET due_at = 0 WHERE due_at IS NOT NULL");
  });

const run = (id: string) => ({ toolCallId: id, kind: "execute", title: `Run ${id}`, rawInput: { command: "make", args: [id] } });

describe("webhook fan-out bounds per tenant", { timeout: 30_000 }, () => {
  it("sends each request to the tenant's targets per request, and holds the requests past the minute's posts for the next minute, saying so", async () => {
    const t = await seedTenant({ notifyAfterMs: 60_000, limits: { notificationTargetsPerRequest: 2, webhookPostsPerMinute: 2 } });
    const channels = ["a", "b", "c"].map((c) => `${c}-${crypto.randomUUID()}`);
    const ids = await Promise.all(channels.map((c) => addTarget(t, c)));
    const firstTwo = [...ids].sort().slice(0, 2);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "p1", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    client.close();
    await client.closed;
    agent.askPermission(sessionId, run("tc-1"));
    agent.askPermission(sessionId, run("tc-2"));
    await vi.waitFor(async () => expect(await notifyRows(t, sessionId)).toHaveLength(2), { timeout: 5000, interval: 20 });
    await dueNow(t, sessionId);
    await runDurableObjectAlarm(stub(t, sessionId));

    // The first request went to the first two targets by id, and only to them.
    for (const [i, channel] of channels.entries()) {
      const delivery = await nextDelivery(channel, firstTwo.includes(ids[i] ?? "") ? 5000 : 300);
      if (firstTwo.includes(ids[i] ?? "")) expect(delivery?.request.toolCallId).toBe("tc-1");
      else expect(delivery).toBeNull();
    }
    // The second waits for the next minute, unsent and not dropped.
    const [first, second] = await notifyRows(t, sessionId);
    const readAt = Date.now();
    expect(first?.sent_at).not.toBeNull();
    // The start of the next minute (the minute the tenant's object counted, at most one after the alarm's).
    const sentAt = first?.sent_at ?? 0;
    const dueAt = second?.due_at ?? 1;
    expect(dueAt % 60_000).toBe(0);
    expect(dueAt).toBeGreaterThan(sentAt);
    expect(dueAt).toBeLessThanOrEqual(sentAt + 120_000);
    // Unsent while that minute had not come; when the rows were read after it came (the test ran across a
    // minute's turn, as CI once did), the session's alarm may have sent it, but never before its minute.
    if (readAt < dueAt) expect(second?.sent_at).toBeNull();
    else if (second?.sent_at != null) expect(second.sent_at).toBeGreaterThanOrEqual(dueAt);
    // The session says so, in its log (a client attached then is sent it).
    const logged = await runInDurableObject(stub(t, sessionId), (_: SessionObject, state) =>
      state.storage.sql.exec<{ body: string }>("SELECT body FROM log WHERE kind = 'notice'").toArray(),
    );
    const notices = logged.map((r) => JSON.parse(r.body)).filter((m) => m.method === "_acp_gateway/limit_reached");
    expect(notices).toEqual([
      expect.objectContaining({
        params: expect.objectContaining({ sessionId, data: { reason: "webhooks_paced", limit: "webhookPostsPerMinute", value: 2 } }),
      }),
    ]);
  });
});
