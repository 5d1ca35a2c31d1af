// The unseen-changes gate decided in the session under a clean lease from the tenant's root (decision
// 0058, protocol/unseen-lease.ts), in the real SessionObjects and RulesObject root: readers a rule
// answers while the session holds a lease cost no call to the root; a rule-answered write in another
// session revokes that lease first, and learns the readers it answered, which hold the write for people.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, onTestFinished } from "vitest";
import { objects } from "../../durable-objects/objects";
import { type RulesObject, rulesCalls, rulesTesting } from "../../durable-objects/rules/rules-object";
import { restartObject } from "./fuzz-faults";
import {
  api,
  clientWithSession,
  dialInAgent,
  isMethod,
  isResponseTo,
  type Peer,
  type SeededTenant,
  seedTenant,
  startTurn,
} from "./helpers";

const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const CWD = "/projects/demo";
const run = (toolCallId: string, command: string) => ({ toolCallId, title: "Run", kind: "execute", rawInput: { command } });
const edit = (toolCallId: string, path: string) => ({
  toolCallId,
  title: "Edit",
  kind: "edit",
  rawInput: { file_path: path, old_string: "a", new_string: "b" },
  locations: [{ path }],
  content: [{ type: "diff", path, oldText: "a", newText: "b" }],
});
type Agent = Awaited<ReturnType<typeof dialInAgent>>;

async function rule(t: SeededTenant, matcher: Record<string, unknown>): Promise<void> {
  const response = await api("/v1/rules", t.adminKey, { method: "POST", body: { decision: "allow", matcher, scope: { project: CWD } } });
  expect(response.status, await response.clone().text()).toBe(201);
}

async function answeredByRule(agent: Agent, sessionId: string, toolCall: Record<string, unknown>): Promise<void> {
  const id = agent.askPermission(sessionId, toolCall, OPTIONS);
  const answer = await agent.peer.next(isResponseTo(id));
  expect(answer.result.outcome, `${JSON.stringify(toolCall.rawInput)} answered by its rule`).toEqual({
    outcome: "selected",
    optionId: "once",
  });
}

async function heldForPeople(client: Peer, agent: Agent, sessionId: string, toolCall: Record<string, unknown>) {
  agent.askPermission(sessionId, toolCall, OPTIONS);
  const copy = await client.next(isMethod("session/request_permission"));
  expect(copy.params.toolCall.toolCallId).toBe(toolCall.toolCallId);
  return copy.params._meta.acpGateway.unseen;
}

/** Counts the calls sessions make to the tenant's root for the gate, by method, until the test ends. */
function countGateCalls(tenantId: string): Record<string, number> {
  const counts: Record<string, number> = {};
  const before = rulesCalls.seen;
  rulesCalls.seen = (name, method) => {
    before?.(name, method);
    if (name === tenantId && method.startsWith("unseen")) counts[method] = (counts[method] ?? 0) + 1;
  };
  onTestFinished(() => {
    rulesCalls.seen = before;
  });
  return counts;
}

/** The root's clean lease lengthened, so that none runs out (and none is renewed) on a loaded machine while the test counts. */
async function longCleanLease(tenantId: string): Promise<void> {
  await runInDurableObject(env.RULES.get(env.RULES.idFromName(tenantId)), (instance: RulesObject) => {
    rulesTesting(instance).cleanLeaseMs = 60_000;
  });
}

describe("the unseen-changes gate under a clean lease", { timeout: 60_000 }, () => {
  it("readers a rule answers in a session holding a clean lease cost no call to the root: five npm tests, one call", async () => {
    const t = await seedTenant();
    await rule(t, { type: "command", prefix: ["npm", "test"] });
    await longCleanLease(t.tenantId);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const calls = countGateCalls(t.tenantId);
    for (let i = 0; i < 5; i++) await answeredByRule(agent, sessionId, run(`n${i}`, "npm test"));
    expect(calls).toEqual({ unseenStep: 1 });
  });

  it("an edit a rule would answer in another session revokes the lease, learns the readers answered under it, and is asked of people naming them", async () => {
    const t = await seedTenant();
    await rule(t, { type: "command", prefix: ["npm", "test"] });
    await rule(t, { type: "path", glob: `${CWD}/src/**`, kinds: ["edit"] });
    await longCleanLease(t.tenantId);
    const agent = await dialInAgent(t);
    const a = await clientWithSession(t, agent);
    await startTurn(a.client, agent, a.sessionId);
    const b = await clientWithSession(t, agent);
    await startTurn(b.client, agent, b.sessionId, "turnB");
    const calls = countGateCalls(t.tenantId);
    await answeredByRule(agent, a.sessionId, run("n1", "npm test"));
    // Answered in session A under its lease: the root has not heard of it.
    await answeredByRule(agent, a.sessionId, run("n2", "npm test"));
    expect(calls).toEqual({ unseenStep: 1 });
    const unseen = await heldForPeople(b.client, agent, b.sessionId, edit("e1", `${CWD}/src/main.c`));
    expect(unseen.total).toBe(0);
    expect(unseen.readers).toEqual(expect.arrayContaining([expect.objectContaining({ sessionId: a.sessionId, toolCallId: "n2" })]));
    // Nothing was noted: the edit went to people.
    expect(await objects.rules(env, t.tenantId).unseenNow()).toBeNull();
  });

  it("after an edit a rule answered, a session whose lease was revoked asks the root again and its reader is asked of people", async () => {
    const t = await seedTenant();
    await rule(t, { type: "command", prefix: ["npm", "test"] });
    await rule(t, { type: "path", glob: `${CWD}/src/**`, kinds: ["edit"] });
    await longCleanLease(t.tenantId);
    const agent = await dialInAgent(t);
    const a = await clientWithSession(t, agent);
    const prompt = await startTurn(a.client, agent, a.sessionId);
    const b = await clientWithSession(t, agent);
    await startTurn(b.client, agent, b.sessionId, "turnB");
    const calls = countGateCalls(t.tenantId);
    await answeredByRule(agent, a.sessionId, run("n1", "npm test"));
    // A's turn ends (its reader with it); A still holds its lease.
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    await a.client.next(isResponseTo("turn"));
    // The edit in B: A's lease is revoked before it is let go.
    await answeredByRule(agent, b.sessionId, edit("e1", `${CWD}/src/main.c`));
    await startTurn(a.client, agent, a.sessionId, "turn2");
    const unseen = await heldForPeople(a.client, agent, a.sessionId, run("n2", "npm test"));
    expect(unseen.changes).toMatchObject([{ path: `${CWD}/src/main.c`, sessionId: b.sessionId }]);
    expect(calls.unseenStep).toBe(3);
  });

  it("a reader answered under the lease is in the session's storage: evicted before anyone asked, its new instance still names it when an edit revokes the lease", async () => {
    const t = await seedTenant();
    await rule(t, { type: "command", prefix: ["npm", "test"] });
    await rule(t, { type: "path", glob: `${CWD}/src/**`, kinds: ["edit"] });
    await longCleanLease(t.tenantId);
    const agent = await dialInAgent(t);
    const a = await clientWithSession(t, agent);
    await startTurn(a.client, agent, a.sessionId);
    const b = await clientWithSession(t, agent);
    await startTurn(b.client, agent, b.sessionId, "turnB");
    await answeredByRule(agent, a.sessionId, run("n1", "npm test"));
    await answeredByRule(agent, a.sessionId, run("n2", "npm test"));
    // A's memory is lost; n2 was told to nobody but A's own storage.
    await restartObject(objects.session(env, t.tenantId, a.sessionId));
    const unseen = await heldForPeople(b.client, agent, b.sessionId, edit("e1", `${CWD}/src/main.c`));
    expect(unseen.readers).toEqual(expect.arrayContaining([expect.objectContaining({ sessionId: a.sessionId, toolCallId: "n2" })]));
  });
});
