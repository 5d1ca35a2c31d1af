// An approval link dies with what it stands on: once its notification target is deleted, its session
// deleted, its request resolved, or its team disabled, the link refuses with 410 (409 for an answer to
// a request someone else answered) and a page saying why — and answers nothing.

import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, inject, it, vi } from "vitest";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import {
  type ScriptedAgent,
  type SeededTenant,
  attachClient,
  barrier,
  clientWithSession,
  dialInAgent,
  isMethod,
  seedTenant,
} from "./helpers";
import { objects } from "../../durable-objects/objects";

type Json = Record<string, any>;
const NOTIFY_AFTER = 60_000;
const receiver = inject("webhookReceiverUrl");

const execCall = {
  toolCallId: "call-rm",
  title: "Tidy up the build output",
  kind: "execute",
  status: "pending",
  rawInput: { command: "rm", args: ["-rf", "dist"], cwd: "/projects/demo" },
};

const admin = (t: SeededTenant, path: string, method: string, body?: unknown) =>
  SELF.fetch(`http://gateway.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

const session = (t: SeededTenant, sessionId: string) => objects.session(env, t.tenantId, sessionId);
const pendingCount = async (t: SeededTenant, sessionId: string) => (await session(t, sessionId).snapshot())?.pendingPermissions.length ?? 0;

async function open(url: string) {
  const response = await SELF.fetch(url);
  return { status: response.status, text: await response.text() };
}
async function answer(url: string, optionId = "allow") {
  const response = await SELF.fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body: `optionId=${optionId}`,
  });
  return { status: response.status, text: await response.text() };
}

async function nextLink(channel: string): Promise<string> {
  const response = await fetch(`${receiver}/next/${channel}?timeout=5000`);
  expect(response.status).toBe(200);
  const { body } = (await response.json()) as { body: string };
  return (JSON.parse(body) as Json).link.url as string;
}

/**
 * A request waiting with nobody attached, notified to `targets` webhooks: the link each one got.
 * Precondition checked here: every link shows the request (200) before the test changes anything.
 */
async function notifiedRequest(targets = 1) {
  const t = await seedTenant({ notifyAfterMs: NOTIFY_AFTER });
  const channels = Array.from({ length: targets }, () => `withdraw-${crypto.randomUUID()}`);
  const ids: string[] = [];
  for (const channel of channels) {
    const created = await admin(t, "/v1/notification-targets", "POST", { name: `pager ${channel}`, url: `${receiver}/hook/${channel}` });
    expect(created.status).toBe(201);
    ids.push(((await created.json()) as Json).id as string);
  }
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  client.send({ jsonrpc: "2.0", id: "p1", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
  const prompt = await agent.peer.next(isMethod("session/prompt"));
  client.close();
  await client.closed;
  // Its socket's close reaches the session after the client's: asked before, the alarm could still see it attached.
  const attached = () => runInDurableObject(session(t, sessionId), (instance: SessionObject) => sessionTesting(instance).attached());
  await vi.waitFor(async () => expect(await attached()).toEqual([]), { timeout: 10_000, interval: 20 });
  const agentReqId = agent.askPermission(sessionId, execCall);
  const notifyRow = () =>
    runInDurableObject(session(t, sessionId), (_: SessionObject, state) => state.storage.sql.exec("SELECT 1 FROM notify").toArray()[0]);
  await vi.waitFor(async () => expect(await notifyRow()).toBeDefined(), { timeout: 5000, interval: 20 });
  await runInDurableObject(session(t, sessionId), (_: SessionObject, state) => {
    state.storage.sql.exec("UPDATE notify SET due_at = due_at - ? WHERE due_at IS NOT NULL", NOTIFY_AFTER);
  });
  // Run now; while the runtime is firing it already (none set for a moment), the next one it sets.
  await vi.waitFor(async () => expect(await runDurableObjectAlarm(session(t, sessionId))).toBe(true), { timeout: 10_000, interval: 20 });
  const links = await Promise.all(channels.map(nextLink));
  for (const link of links) expect((await open(link)).status).toBe(200);
  expect(await pendingCount(t, sessionId)).toBe(1);
  return { t, agent, sessionId, agentReqId, promptId: prompt.id, links, targetIds: ids };
}

const answeredToAgent = (agent: ScriptedAgent, agentReqId: string | number) =>
  agent.peer.next((m) => m.id === agentReqId && !("method" in m));

describe("approval links die with their target, session, request and team", () => {
  it("after DELETE /v1/notification-targets/{id}, its link is withdrawn (410) and answers nothing; another target's link still answers", async () => {
    const { t, agent, sessionId, agentReqId, links, targetIds } = await notifiedRequest(2);
    const [deletedLink = "", keptLink = ""] = links;
    expect((await admin(t, `/v1/notification-targets/${targetIds[0]}`, "DELETE")).status).toBe(204);

    const shown = await open(deletedLink);
    expect(shown.status).toBe(410);
    expect(shown.text).toContain("This approval link was withdrawn");
    expect(shown.text).toContain("notification target was deleted");
    const refused = await answer(deletedLink);
    expect(refused.status).toBe(410);
    expect(refused.text).toContain("notification target was deleted");
    expect(await pendingCount(t, sessionId)).toBe(1);

    // The other target's link is untouched: it answers, and that answer is the one the agent gets.
    expect((await answer(keptLink, "reject")).status).toBe(200);
    expect((await answeredToAgent(agent, agentReqId)).result).toEqual({ outcome: { outcome: "selected", optionId: "reject" } });
    // Withdrawn for good, even now that the request is resolved.
    expect((await open(deletedLink)).text).toContain("notification target was deleted");
  });

  it("after the session is deleted, its link is withdrawn (410: its session was deleted) and answers nothing", async () => {
    const { t, agent, sessionId, promptId, links } = await notifiedRequest();
    const [link = ""] = links;
    // A running turn cannot be deleted: the turn ends (its request is cancelled), then the session goes.
    agent.peer.respond(promptId, { stopReason: "end_turn" });
    const alice = await attachClient(t, agent, sessionId);
    const deleting = alice.request("session/delete", { sessionId });
    agent.peer.respond((await agent.peer.next(isMethod("session/delete"))).id, {});
    expect((await deleting).result).toEqual({});
    expect(await session(t, sessionId).exists()).toBe(false);

    const shown = await open(link);
    expect(shown.status).toBe(410);
    expect(shown.text).toContain("This approval link was withdrawn");
    expect(shown.text).toContain("Its session was deleted");
    const refused = await answer(link);
    expect(refused.status).toBe(410);
    expect(refused.text).toContain("Its session was deleted");
  });

  it("a link whose request a person answered refuses: 410 to show, 409 to answer, naming who answered; the agent gets one answer", async () => {
    const { t, agent, sessionId, agentReqId, links } = await notifiedRequest();
    const [link = ""] = links;
    const bob = await attachClient(t, agent, sessionId);
    const asked = await bob.next(isMethod("session/request_permission"));
    bob.respond(asked.id, { outcome: { outcome: "selected", optionId: "reject" } });
    expect((await answeredToAgent(agent, agentReqId)).result).toEqual({ outcome: { outcome: "selected", optionId: "reject" } });
    expect(await pendingCount(t, sessionId)).toBe(0);

    const shown = await open(link);
    expect(shown.status).toBe(410);
    expect(shown.text).toContain("Already answered");
    expect(shown.text).toContain("bob answered it from a client");
    const refused = await answer(link);
    expect(refused.status).toBe(409);
    expect(refused.text).toContain("Already answered");
    // Nothing more reached the agent: a second answer would have been on the same path before the barrier.
    await barrier(bob, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === agentReqId)).toEqual([]);
  });

  it("a link of a disabled team is withdrawn (410: its team was disabled) and answers nothing", async () => {
    const { t, sessionId, links } = await notifiedRequest();
    const [link = ""] = links;
    await env.DB.prepare("UPDATE tenants SET disabled = 1 WHERE id = ?").bind(t.tenantId).run();

    const shown = await open(link);
    expect(shown.status).toBe(410);
    expect(shown.text).toContain("This approval link was withdrawn");
    expect(shown.text).toContain("Its team was disabled");
    const refused = await answer(link);
    expect(refused.status).toBe(410);
    expect(refused.text).toContain("Its team was disabled");
    expect(await pendingCount(t, sessionId)).toBe(1);
  });
});
