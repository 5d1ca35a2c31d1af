// The sessions index converges to each session's own state (decision 0049, protocol/live-state.ts):
// what D1 is owed is kept in the session's storage, the session's alarm is due while anything is, and
// a new instance resumes it. Each case leaves the index owed a change that the old code lost (the
// object gone inside the quarter-second window, a write D1 refused), runs the session's alarm as the
// runtime would, and compares GET /v1/sessions with the session's own snapshot (GET /v1/sessions/{id}).

import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { api, clientWithSession, dialInAgent, isMethod, seedTenant, startTurn } from "./helpers";
import { agentStub, crashObject, restartObject, sessionStub, setD1 } from "./fuzz-faults";

type Tenant = Awaited<ReturnType<typeof seedTenant>>;

/** The session's row in the tenant's list. */
async function listed(t: Tenant, sessionId: string): Promise<{ turn: string; waiting: number }> {
  const res = await api("/v1/sessions?limit=100", t.adminKey);
  expect(res.status).toBe(200);
  const page = (await res.json()) as { items: { id: string; state: { turn: string; waiting: number } }[] };
  const row = page.items.find((s) => s.id === sessionId);
  if (!row) throw new Error(`session ${sessionId} is not listed`);
  return row.state;
}

/** The session's own state, from its snapshot. */
async function own(t: Tenant, sessionId: string): Promise<{ turn: string; waiting: number }> {
  const res = await api(`/v1/sessions/${sessionId}`, t.adminKey);
  expect(res.status).toBe(200);
  const snapshot = (await res.json()) as { turn: { state: string }; pendingPermissions: unknown[] };
  return { turn: snapshot.turn.state, waiting: snapshot.pendingPermissions.length };
}

const run = (id: string) => ({ toolCallId: id, kind: "execute", rawInput: { command: `make ${id}` } });

describe("the sessions index converges to each session's own state", { timeout: 30_000 }, () => {
  it("the session evicted inside the window or mid-write, with a request just asked: its alarm writes what the index is owed", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    // D1 answers this instance only after 1.5 s: its write, if the timer runs first, is still in flight.
    await setD1(sessionStub(t.tenantId, sessionId), "slow");
    agent.askPermission(sessionId, run("a"));
    await client.next(isMethod("session/request_permission"));
    // Inside LIVE_INDEX_MS of the request, or with its write in flight: either dies with the instance.
    await restartObject(sessionStub(t.tenantId, sessionId));
    expect(await runDurableObjectAlarm(sessionStub(t.tenantId, sessionId))).toBe(true);
    expect(await own(t, sessionId)).toEqual({ turn: "running", waiting: 1 });
    expect(await listed(t, sessionId)).toEqual({ turn: "running", waiting: 1 });
  });

  it("a write D1 refused is owed until D1 takes one: the alarm after the outage writes the session's state", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    await setD1(sessionStub(t.tenantId, sessionId), "down");
    agent.askPermission(sessionId, run("a"));
    await client.next(isMethod("session/request_permission"));
    // The write fails (the alarm runs it now, awaited); nothing changes in the session after it.
    expect(await runDurableObjectAlarm(sessionStub(t.tenantId, sessionId))).toBe(true);
    await setD1(sessionStub(t.tenantId, sessionId), "up");
    expect(await runDurableObjectAlarm(sessionStub(t.tenantId, sessionId))).toBe(true);
    expect(await listed(t, sessionId)).toEqual({ turn: "running", waiting: 1 });
    expect(await listed(t, sessionId)).toEqual(await own(t, sessionId));
  });

  it("the agent leaves mid-turn with a request waiting, the index write fails or never runs, the clients go and the session is evicted: its next alarm writes idle, nothing waiting", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, run("a"));
    await client.next(isMethod("session/request_permission"));
    // Whether the timer runs before the eviction (the write fails) or not (it never runs), the change is owed.
    await setD1(sessionStub(t.tenantId, sessionId), "down");
    agent.peer.close();
    expect((await client.next(isMethod("_acp_gateway/turn_ended"))).params.reason).toBe("agent_disconnected");
    client.close();
    await restartObject(sessionStub(t.tenantId, sessionId)); // a new instance reaches D1 (the fault was the old one's)
    expect(await runDurableObjectAlarm(sessionStub(t.tenantId, sessionId))).toBe(true);
    expect(await own(t, sessionId)).toEqual({ turn: "idle", waiting: 0 });
    expect(await listed(t, sessionId)).toEqual({ turn: "idle", waiting: 0 });
  });

  it("the gateway stopped mid-turn (the AgentObject lost, the session evicted) and started again: the index says what the session does", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, run("a"));
    await client.next(isMethod("session/request_permission"));
    await restartObject(sessionStub(t.tenantId, sessionId));
    await crashObject(agentStub(t.tenantId, agent.name));
    await agent.peer.closed;
    // Started again: the AgentObject's alarm finds the connection its last instance lost and tells
    // the session, which withdraws the request and ends the turn; its index write fails (or never
    // runs) and the session is evicted again, and its alarm runs what the index is owed.
    await setD1(sessionStub(t.tenantId, sessionId), "down");
    await runDurableObjectAlarm(agentStub(t.tenantId, agent.name));
    expect((await client.next(isMethod("_acp_gateway/turn_ended"))).params.reason).toBe("agent_disconnected");
    await restartObject(sessionStub(t.tenantId, sessionId));
    expect(await runDurableObjectAlarm(sessionStub(t.tenantId, sessionId))).toBe(true);
    expect(await own(t, sessionId)).toEqual({ turn: "idle", waiting: 0 });
    expect(await listed(t, sessionId)).toEqual({ turn: "idle", waiting: 0 });
  });
});
