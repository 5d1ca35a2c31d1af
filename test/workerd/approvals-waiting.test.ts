// "Waiting on you" (GET /v1/approvals?waiting=me, worker/api/approvals.ts): across the tenant's
// sessions, every request the caller may answer now, each from the session that holds it — so a
// request answered, or withdrawn with its agent, is never listed, whatever the index still says.
// The index is brought up to date by running the session's alarm (it writes what the index is owed,
// decision 0049), never by waiting.

import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addKey, api, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { sessionStub, setD1 } from "./fuzz-faults";

type Tenant = Awaited<ReturnType<typeof seedTenant>>;
type Waiting = {
  sessionId: string;
  title: string | null;
  requestId: number;
  toolCallId: string;
  operation: any;
  askedAt: number;
  link: string;
};

async function waitingOn(key: string): Promise<Waiting[]> {
  const res = await api("/v1/approvals?waiting=me", key);
  expect(res.status).toBe(200);
  return ((await res.json()) as { items: Waiting[] }).items;
}

/** The index has what the session is owed (the alarm writes it now). */
async function indexed(t: Tenant, sessionId: string): Promise<void> {
  await runDurableObjectAlarm(sessionStub(t.tenantId, sessionId));
}

const run = (id: string, command: string) => ({ toolCallId: id, kind: "execute", title: `Run ${command}`, rawInput: { command } });

describe("waiting on you", { timeout: 30_000 }, () => {
  it("lists a request an approver may answer, with its session, the operation, when it was asked and a link; not once it is answered", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const before = Date.now();
    const id = agent.askPermission(sessionId, run("tc-1", "make deploy"));
    const copy = await client.next(isMethod("session/request_permission"));
    await indexed(t, sessionId);

    const items = await waitingOn(t.clientKey2);
    expect(items).toHaveLength(1);
    const [item] = items;
    expect(item).toMatchObject({ sessionId, toolCallId: "tc-1", requestId: expect.any(Number) });
    expect(item!.operation.command.text).toBe("make deploy");
    expect(item!.askedAt).toBeGreaterThanOrEqual(before);
    expect(item!.link).toBe(`http://gateway.test/#/session/${encodeURIComponent(sessionId)}`);

    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(id));
    // Answered: not listed, whether or not the index has caught up yet.
    expect(await waitingOn(t.clientKey2)).toEqual([]);
  });

  it("a member is waited on only in a turn they prompted; an observer never", async () => {
    const t = await seedTenant();
    const member = await addKey(t.tenantId, "client", "mo", null, { role: "member", user: "mo" });
    const otherMember = await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" });
    const observer = await addKey(t.tenantId, "client", "oz", null, { role: "observer" });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent, member);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, run("tc-1", "make test"));
    await client.next(isMethod("session/request_permission"));
    await indexed(t, sessionId);
    expect((await waitingOn(member)).map((w) => w.toolCallId)).toEqual(["tc-1"]);
    expect(await waitingOn(otherMember)).toEqual([]);
    expect(await waitingOn(observer)).toEqual([]);
    expect((await waitingOn(t.clientKey)).map((w) => w.toolCallId)).toEqual(["tc-1"]);
  });

  it("never lists a request its session no longer holds, while the index still says one waits (the agent left, D1 refused the session's write)", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, run("tc-1", "make deploy"));
    await client.next(isMethod("session/request_permission"));
    await indexed(t, sessionId);
    await setD1(sessionStub(t.tenantId, sessionId), "down");
    agent.peer.close();
    await client.next(isMethod("_acp_gateway/turn_ended"));
    const listed = (await (await api("/v1/sessions?limit=100", t.adminKey)).json()) as {
      items: { id: string; state: { waiting: number } }[];
    };
    expect(listed.items.find((s) => s.id === sessionId)?.state.waiting).toBe(1);
    expect(await waitingOn(t.clientKey)).toEqual([]);
  });

  it("across sessions, oldest first", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const a = await clientWithSession(t, agent);
    const b = await clientWithSession(t, agent);
    await startTurn(a.client, agent, a.sessionId, "ta");
    await startTurn(b.client, agent, b.sessionId, "tb");
    agent.askPermission(a.sessionId, run("first", "make a"));
    await a.client.next(isMethod("session/request_permission"));
    agent.askPermission(b.sessionId, run("second", "make b"));
    await b.client.next(isMethod("session/request_permission"));
    await indexed(t, a.sessionId);
    await indexed(t, b.sessionId);
    expect((await waitingOn(t.clientKey)).map((w) => [w.sessionId, w.toolCallId])).toEqual([
      [a.sessionId, "first"],
      [b.sessionId, "second"],
    ]);
  });

  it("refuses anything but waiting=me with a clear error", async () => {
    const t = await seedTenant();
    const res = await api("/v1/approvals?waiting=bob", t.clientKey);
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain("waiting must be 'me'");
  });
});
