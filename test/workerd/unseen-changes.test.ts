// No chain of automatic steps runs what no person saw (issue 35, decision 0046), in the real
// SessionObject and the tenant's real RulesObject: a step a rule answers that may have written (an
// edit, a command the table does not understand) is noted as unseen; a later step whose effect may read
// content (every command but ls and pwd) is then not answered by its rule — the person is asked and
// shown what changed; their allow marks it seen, their reject does not. A rule-answered reader still
// running holds a rule-answered write. The tenant's sessions share it all.

import { SELF, env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, inject, it, vi } from "vitest";
import { objects } from "../../durable-objects/objects";
import { MAX_UNSEEN_ROWS } from "../../durable-objects/rules/unseen-changes";
import { restartObject } from "./fuzz-faults";
import {
  api,
  attachClient,
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
const isCopy = isMethod("session/request_permission");
type Agent = Awaited<ReturnType<typeof dialInAgent>>;

async function rule(t: SeededTenant, matcher: Record<string, unknown>): Promise<void> {
  const response = await api("/v1/rules", t.adminKey, { method: "POST", body: { decision: "allow", matcher, scope: { project: CWD } } });
  expect(response.status, await response.clone().text()).toBe(201);
}

/** The agent asks; the rule answers it with the offered once, and no client is asked. */
async function answeredByRule(agent: Agent, sessionId: string, toolCall: Record<string, unknown>): Promise<void> {
  const id = agent.askPermission(sessionId, toolCall, OPTIONS);
  const answer = await agent.peer.next(isResponseTo(id));
  expect(answer.result.outcome, `${JSON.stringify(toolCall.rawInput)} answered by its rule`).toEqual({
    outcome: "selected",
    optionId: "once",
  });
}

/** The agent asks; a person is asked instead of the rule, and the copy says what changed. */
async function heldForPeople(client: Peer, agent: Agent, sessionId: string, toolCall: Record<string, unknown>) {
  const id = agent.askPermission(sessionId, toolCall, OPTIONS);
  const copy = await client.next(isCopy);
  expect(copy.params.toolCall.toolCallId).toBe(toolCall.toolCallId);
  return { id, copy, unseen: copy.params._meta.acpGateway.unseen };
}

/** An allow whose answer says its card showed `ids` of the list `unseen` (decision 0064): what the console sends. */
const allowShowing = (unseen: { listId: string }, ids: number[]) => ({
  outcome: { outcome: "selected", optionId: "once" },
  _meta: { acpGateway: { shown: { list: unseen.listId, changes: ids } } },
});
/** A reject with the same claim: the console says what the card showed whichever option is chosen. */
const rejectShowing = (unseen: { listId: string }, ids: number[]) => ({
  ...allowShowing(unseen, ids),
  outcome: { outcome: "selected", optionId: "no" },
});
const idsOf = (unseen: { changes: { id: number }[] }) => unseen.changes.map((c) => c.id);
/** An allow whose answer also says the person ticked "I accept what this may have written" for `accepted` (decision 0068). */
const allowAccepting = (unseen: { listId: string }, ids: number[], accepted: number[]) => ({
  outcome: { outcome: "selected", optionId: "once" },
  _meta: { acpGateway: { shown: { list: unseen.listId, changes: ids, accepted } } },
});

/** A session of the tenant's client whose turn runs (`prompt`: the agent's session/prompt). */
async function session(t: SeededTenant, agent: Agent) {
  const { client, sessionId } = await clientWithSession(t, agent);
  const prompt = await startTurn(client, agent, sessionId);
  return { client, sessionId, prompt };
}

/** Every edit under src/. */
const EDITS_IN_SRC = { type: "path", glob: `${CWD}/src/**`, kinds: ["edit"] };
const commandRule = (...prefix: string[]) => ({ type: "command", prefix });

/** A tenant (`settings`) with an allow rule in the project for each matcher, its agent dialled in, and one session whose turn runs. */
async function tenantWithRules(matchers: Record<string, unknown>[], settings?: Record<string, unknown>) {
  const t = await seedTenant(settings);
  for (const matcher of matchers) await rule(t, matcher);
  const agent = await dialInAgent(t);
  return { t, agent, ...(await session(t, agent)) };
}

describe("an unseen change stops a rule answering what may read it", () => {
  it("an always on package.json's edit, then npm test: the edit is answered, npm test is asked with the change named; allowed, the next npm test is answered", async () => {
    const { agent, client, sessionId } = await tenantWithRules([
      { type: "path", glob: `${CWD}/package.json`, kinds: ["edit"] },
      commandRule("npm", "test"),
    ]);
    // Before any change: npm test is the rule's (and its tool call finishes).
    await answeredByRule(agent, sessionId, run("t0", "npm test"));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t0", status: "completed" });
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/package.json`));
    const held = await heldForPeople(client, agent, sessionId, run("t1", "npm test"));
    expect(held.unseen).toMatchObject({
      total: 1,
      changes: [{ path: `${CWD}/package.json`, sessionId, toolCallId: "e1" }],
      message: expect.stringMatching(/The agent changed \/projects\/demo\/package\.json since anyone looked/),
    });
    client.respond(held.copy.id, allowShowing(held.unseen, idsOf(held.unseen)));
    expect((await agent.peer.next(isResponseTo(held.id))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
    // Seen: the rule answers again.
    await answeredByRule(agent, sessionId, run("t2", "npm test"));
  });

  it("a person's reject marks nothing seen: the next npm test is asked again", async () => {
    const { agent, client, sessionId } = await tenantWithRules([EDITS_IN_SRC, commandRule("npm", "test")]);
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/a.test.js`));
    const first = await heldForPeople(client, agent, sessionId, run("t1", "npm test"));
    client.respond(first.copy.id, rejectShowing(first.unseen, idsOf(first.unseen)));
    expect((await agent.peer.next(isResponseTo(first.id))).result.outcome).toEqual({ outcome: "selected", optionId: "no" });
    const again = await heldForPeople(client, agent, sessionId, run("t2", "npm test"));
    expect(again.unseen.changes).toMatchObject([{ path: `${CWD}/src/a.test.js` }]);
  });

  it("a change in one session holds the rule in another session of the tenant (the file system is shared)", async () => {
    const { t, agent, ...a } = await tenantWithRules([EDITS_IN_SRC, commandRule("make", "test")]);
    const b = await session(t, agent);
    await answeredByRule(agent, a.sessionId, edit("e1", `${CWD}/src/main.c`));
    const held = await heldForPeople(b.client, agent, b.sessionId, run("m1", "make test"));
    expect(held.unseen.changes).toMatchObject([{ path: `${CWD}/src/main.c`, sessionId: a.sessionId }]);
  });

  it("ls and pwd read no file's content: still answered while changes are unseen", async () => {
    const { agent, sessionId } = await tenantWithRules([EDITS_IN_SRC, commandRule("ls"), commandRule("pwd")]);
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/x.c`));
    await answeredByRule(agent, sessionId, run("l1", "ls -la src"));
    await answeredByRule(agent, sessionId, run("p1", "pwd"));
  });

  it("a command an exact rule answers may write anything: cp notes.txt Makefile.sh, then make test is asked, naming files a command may have written", async () => {
    const { agent, client, sessionId } = await tenantWithRules([
      { type: "argv", argv: ["cp", "notes.txt", "Makefile.sh"] },
      commandRule("make", "test"),
    ]);
    await answeredByRule(agent, sessionId, run("c1", "cp notes.txt Makefile.sh"));
    const held = await heldForPeople(client, agent, sessionId, run("m1", "make test"));
    expect(held.unseen.changes).toMatchObject([{ path: "*", toolCallId: "c1" }]);
    expect(held.unseen.message).toMatch(/files a command may have written/);
  });

  it("a rule-answered command still running holds a rule-answered edit (parallel tool calls); once it finished, the edit is the rule's", async () => {
    const { agent, client, sessionId } = await tenantWithRules([EDITS_IN_SRC, commandRule("make", "test")]);
    await answeredByRule(agent, sessionId, run("m1", "make test"));
    const held = await heldForPeople(client, agent, sessionId, edit("e1", `${CWD}/src/main.c`));
    expect(held.unseen).toMatchObject({ total: 0, readers: [{ sessionId, toolCallId: "m1" }] });
    expect(held.unseen.message).toMatch(/may be reading the project now/);
    // The person allows the edit they saw: nothing is noted (they saw its diff).
    client.respond(held.copy.id, { outcome: { outcome: "selected", optionId: "once" } });
    await agent.peer.next(isResponseTo(held.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "m1", status: "completed" });
    await answeredByRule(agent, sessionId, edit("e2", `${CWD}/src/util.c`));
  });

  it("the turn's end closes its readers: an edit in the next turn is the rule's", async () => {
    const { agent, client, sessionId, prompt } = await tenantWithRules([EDITS_IN_SRC, commandRule("make", "test")]);
    await answeredByRule(agent, sessionId, run("m1", "make test"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    await client.next(isResponseTo("turn"));
    await startTurn(client, agent, sessionId, "turn2");
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/main.c`));
  });

  it("a tool call the agent ran without asking (an edit reported completed, never asked) is unseen: clients are told, and make test is asked naming it", async () => {
    // The turn goes on (decision 0056 stops it by default).
    const { agent, client, sessionId } = await tenantWithRules([commandRule("make", "test")], { unaskedRuns: "tell" });
    agent.update(sessionId, { sessionUpdate: "tool_call", ...edit("u1", `${CWD}/src/main.c`), status: "completed" });
    const told = await client.next(isMethod("_acp_gateway/ran_unasked"));
    expect(told.params).toMatchObject({ sessionId, toolCallId: "u1", kind: "edit", changes: [`${CWD}/src/main.c`] });
    expect(told.params.message).toMatch(/without asking anyone/);
    const held = await heldForPeople(client, agent, sessionId, run("m1", "make test"));
    expect(held.unseen.changes).toMatchObject([{ path: `${CWD}/src/main.c`, toolCallId: "u1", ruleId: null }]);
  });

  it("a read the agent ran without asking changes nothing; a command reported in progress before it is asked (opencode) is not unasked", async () => {
    const { agent, client, sessionId } = await tenantWithRules([commandRule("make", "test")]);
    agent.update(sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "r1",
      title: "Read",
      kind: "read",
      locations: [{ path: `${CWD}/a` }],
      status: "completed",
    });
    agent.update(sessionId, { sessionUpdate: "tool_call", ...run("m0", "make test"), status: "in_progress" });
    await answeredByRule(agent, sessionId, run("m0", "make test"));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "m0", status: "completed" });
    await answeredByRule(agent, sessionId, run("m1", "make test"));
    expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/ran_unasked")).toEqual([]);
  });

  it("a command asked before the session restarted and reported finished after it is not unasked (the log says it was asked)", async () => {
    const { t, agent, client, sessionId } = await tenantWithRules([{ type: "argv", argv: ["./build.sh"] }]);
    const id = agent.askPermission(sessionId, run("b1", "./build.sh --fast"), OPTIONS);
    const copy = await client.next(isCopy);
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "once" } });
    await agent.peer.next(isResponseTo(id));
    await restartObject(objects.session(env, t.tenantId, sessionId));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "b1", status: "completed" });
    await answeredByRule(agent, sessionId, run("b2", "./build.sh"));
    expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/ran_unasked")).toEqual([]);
  });

  it("the tenant's unseen changes are bounded: past the bound the newest is one '*' (a new id each time), so a person's earlier look never clears it", async () => {
    const t = await seedTenant();
    const root = objects.rules(env, t.tenantId);
    const change = (i: number) => ({ path: `${CWD}/f${i}`, sessionId: "s", toolCallId: `u${i}`, ruleId: null, at: i });
    await root.unseenNote(Array.from({ length: MAX_UNSEEN_ROWS + 5 }, (_, i) => change(i)));
    const first = await root.unseenNow();
    expect(first?.total).toBe(MAX_UNSEEN_ROWS + 1);
    await root.unseenNote([change(9999)]);
    const later = await root.unseenNow();
    expect(later?.total).toBe(MAX_UNSEEN_ROWS + 1);
    expect(later!.upTo).toBeGreaterThan(first!.upTo);
    // A person shown every change of the first look clears all but the newest "*".
    await root.unseenSeen(Array.from({ length: first!.upTo }, (_, i) => i + 1));
    expect(await root.unseenNow()).toMatchObject({ total: 1, changes: [{ path: "*" }] });
  });

  it("a step no rule answers is shown the unseen changes too (just after its copy), and the person's allow marks them seen (they judged the effect)", async () => {
    const { agent, client, sessionId } = await tenantWithRules([EDITS_IN_SRC, commandRule("npm", "test")]);
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/a.test.js`));
    // git status has no rule: asked anyway, and every client is told what changed since anyone looked.
    const asked = await heldForPeople(client, agent, sessionId, run("g1", "git status"));
    expect(asked.unseen).toBeUndefined();
    const told = await client.next(isMethod("_acp_gateway/unseen_changes"));
    expect(told.params).toMatchObject({ sessionId, toolCallId: "g1" });
    expect(told.params.unseen.changes).toMatchObject([{ path: `${CWD}/src/a.test.js` }]);
    expect(told.params.unseen.message).toMatch(/since anyone looked/);
    client.respond(asked.copy.id, allowShowing(told.params.unseen, idsOf(told.params.unseen)));
    await agent.peer.next(isResponseTo(asked.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "g1", status: "completed" });
    await answeredByRule(agent, sessionId, run("t1", "npm test"));
  });
});

describe("seen means each change shown as the server sent it (decision 0064)", () => {
  it("the list carries each edit's diff as its tool call reported it; an allow that names none of them clears nothing, one naming what it was sent clears exactly that", async () => {
    const { agent, client, sessionId } = await tenantWithRules([EDITS_IN_SRC, commandRule("npm", "test")]);
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/a.test.js`));
    await answeredByRule(agent, sessionId, { ...edit("e2", `${CWD}/src/b.test.js`), content: [] }); // no diff reported
    const first = await heldForPeople(client, agent, sessionId, run("t1", "npm test"));
    expect(first.unseen.listId).toEqual(expect.any(String));
    expect(first.unseen.changes).toEqual([
      expect.objectContaining({ path: `${CWD}/src/a.test.js`, toolCallId: "e1", diff: { oldText: "a", newText: "b" } }),
      expect.not.objectContaining({ diff: expect.anything() }),
    ]);
    // An SDK client says nothing of what it showed: the allow goes to the agent, and nothing is seen.
    client.respond(first.copy.id, { outcome: { outcome: "selected", optionId: "once" } });
    expect((await agent.peer.next(isResponseTo(first.id))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
    const second = await heldForPeople(client, agent, sessionId, run("t2", "npm test"));
    expect(second.unseen.total).toBe(2);
    expect(second.unseen.listId).not.toBe(first.unseen.listId);
    // A card that showed only the diff of a.test.js (and names a change it was never sent): that one is seen.
    const [a, b] = idsOf(second.unseen);
    client.respond(second.copy.id, allowShowing(second.unseen, [a!, 999_999]));
    await agent.peer.next(isResponseTo(second.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t2", status: "completed" });
    const third = await heldForPeople(client, agent, sessionId, run("t3", "npm test"));
    expect(third.unseen).toMatchObject({ total: 1, changes: [{ id: b, path: `${CWD}/src/b.test.js` }] });
    // The change whose diff cannot be shown is not seen by being named (decision 0068): only its acceptance clears it.
    client.respond(third.copy.id, allowShowing(third.unseen, [b!]));
    await agent.peer.next(isResponseTo(third.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t3", status: "completed" });
    const fourth = await heldForPeople(client, agent, sessionId, run("t4", "npm test"));
    expect(idsOf(fourth.unseen)).toEqual([b]);
    client.respond(fourth.copy.id, allowAccepting(fourth.unseen, [b!], [b!]));
    await agent.peer.next(isResponseTo(fourth.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t4", status: "completed" });
    await answeredByRule(agent, sessionId, run("t5", "npm test"));
  });

  it("a client cannot claim what it was not sent: the ids of an older list, or a change noted after its list, clear nothing", async () => {
    const { agent, client, sessionId } = await tenantWithRules([EDITS_IN_SRC, commandRule("npm", "test")]);
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/a.test.js`));
    const first = await heldForPeople(client, agent, sessionId, run("t1", "npm test"));
    client.respond(first.copy.id, { outcome: { outcome: "selected", optionId: "no" } });
    await agent.peer.next(isResponseTo(first.id));
    const second = await heldForPeople(client, agent, sessionId, run("t2", "npm test"));
    // The ids are right but the list is the first request's, not the one this request was sent.
    client.respond(second.copy.id, allowShowing(first.unseen, idsOf(first.unseen)));
    await agent.peer.next(isResponseTo(second.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t2", status: "completed" });
    const third = await heldForPeople(client, agent, sessionId, run("t3", "npm test"));
    expect(idsOf(third.unseen)).toEqual(idsOf(first.unseen));
    // A change the list did not carry (its id guessed: the next one) is not cleared by naming it.
    const next = Math.max(...idsOf(third.unseen)) + 1;
    client.respond(third.copy.id, { outcome: { outcome: "selected", optionId: "no" } });
    await agent.peer.next(isResponseTo(third.id));
    await answeredByRule(agent, sessionId, edit("e2", `${CWD}/src/b.test.js`));
    const fourth = await heldForPeople(client, agent, sessionId, run("t4", "npm test"));
    expect(idsOf(fourth.unseen)).toEqual([...idsOf(first.unseen), next]);
    client.respond(fourth.copy.id, allowShowing(third.unseen, [next]));
    await agent.peer.next(isResponseTo(fourth.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t4", status: "completed" });
    expect((await heldForPeople(client, agent, sessionId, run("t5", "npm test"))).unseen.total).toBe(2);
  });

  it("an approval link's allow clears nothing: its page shows the operation, not the list", async () => {
    const { t, agent, client, sessionId } = await tenantWithRules([EDITS_IN_SRC, commandRule("npm", "test")], { notifyAfterMs: 60_000 });
    const channel = `unseen-${crypto.randomUUID()}`;
    const target = await api("/v1/notification-targets", t.adminKey, {
      method: "POST",
      body: { name: "pager", url: `${inject("webhookReceiverUrl")}/hook/${channel}` },
    });
    expect(target.status).toBe(201);
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/a.test.js`));
    client.close(); // nobody attached: the waiting request goes to the pager
    await client.closed;
    const asked = agent.askPermission(sessionId, run("t1", "npm test"), OPTIONS);
    const object = objects.session(env, t.tenantId, sessionId);
    const notifyRow = () => runInDurableObject(object, (_, state) => state.storage.sql.exec("SELECT 1 FROM notify").toArray()[0]);
    await vi.waitFor(async () => expect(await notifyRow()).toBeDefined(), { timeout: 10_000, interval: 20 });
    await runInDurableObject(object, (_, state) => void state.storage.sql.exec("UPDATE notify SET due_at = due_at - 60000"));
    await runDurableObjectAlarm(object);
    const hook = await fetch(`${inject("webhookReceiverUrl")}/next/${channel}?timeout=10000`);
    expect(hook.status).toBe(200);
    const link = (JSON.parse(((await hook.json()) as { body: string }).body) as { link: { url: string } }).link.url;
    const answered = await SELF.fetch(link, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "optionId=once",
    });
    expect(answered.status).toBe(200);
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
    // Still unseen: the next npm test is asked of people, listing the edit again.
    const again = agent.askPermission(sessionId, run("t2", "npm test"), OPTIONS);
    const watcher = await attachClient(t, agent, sessionId, t.clientKey);
    const copy = await watcher.next(isCopy);
    expect(copy.params.toolCall.toolCallId).toBe("t2");
    expect(copy.params._meta.acpGateway.unseen.changes).toMatchObject([{ path: `${CWD}/src/a.test.js`, toolCallId: "e1" }]);
    watcher.respond(copy.id, { outcome: { outcome: "selected", optionId: "no" } });
    await agent.peer.next(isResponseTo(again));
  });
});

describe("a change no diff can show is cleared only by a person accepting it, once its step finished (decision 0068)", () => {
  it("a command's '*' is listed with its command, directory, rule and time; named alone it stays unseen, accepted while its command runs it stays, accepted once finished it is seen", async () => {
    const t = await seedTenant();
    await rule(t, { type: "argv", argv: ["cp", "notes.txt", "Makefile.sh"] });
    await rule(t, { type: "command", prefix: ["make", "test"] });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await session(t, agent);
    await answeredByRule(agent, sessionId, run("c1", "cp notes.txt Makefile.sh"));
    const first = await heldForPeople(client, agent, sessionId, run("m1", "make test"));
    const [change] = first.unseen.changes;
    expect(change).toMatchObject({ path: "*", toolCallId: "c1", command: "cp notes.txt Makefile.sh", cwd: CWD, running: true });
    expect(change.ruleId).toEqual(expect.any(String));
    expect(change.at).toEqual(expect.any(Number));
    expect(change.diff).toBeUndefined();
    // Accepted while cp has not reported finishing: it may still be writing, so nothing is seen.
    client.respond(first.copy.id, allowAccepting(first.unseen, [change.id], [change.id]));
    await agent.peer.next(isResponseTo(first.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "m1", status: "completed" });
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "c1", status: "completed" });
    const second = await heldForPeople(client, agent, sessionId, run("m2", "make test"));
    expect(second.unseen.changes).toEqual([expect.objectContaining({ id: change.id })]);
    expect(second.unseen.changes[0].running).toBeUndefined();
    // Named as shown, not accepted: still unseen.
    client.respond(second.copy.id, allowShowing(second.unseen, [change.id]));
    await agent.peer.next(isResponseTo(second.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "m2", status: "completed" });
    const third = await heldForPeople(client, agent, sessionId, run("m3", "make test"));
    expect(idsOf(third.unseen)).toEqual([change.id]);
    // Accepted against another request's list: still unseen. Accepted against its own list: seen.
    client.respond(third.copy.id, allowAccepting(second.unseen, [change.id], [change.id]));
    await agent.peer.next(isResponseTo(third.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "m3", status: "completed" });
    const fourth = await heldForPeople(client, agent, sessionId, run("m4", "make test"));
    client.respond(fourth.copy.id, allowAccepting(fourth.unseen, [], [change.id]));
    await agent.peer.next(isResponseTo(fourth.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "m4", status: "completed" });
    await answeredByRule(agent, sessionId, run("m5", "make test"));
  });

  it("a step that may have written anything is running until it finishes even when it reads nothing (ls /etc under its exact rule)", async () => {
    const t = await seedTenant();
    await rule(t, { type: "argv", argv: ["ls", "/etc"] });
    await rule(t, { type: "command", prefix: ["make", "test"] });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await session(t, agent);
    await answeredByRule(agent, sessionId, run("l1", "ls /etc"));
    const first = await heldForPeople(client, agent, sessionId, run("m1", "make test"));
    expect(first.unseen.changes).toEqual([expect.objectContaining({ path: "*", toolCallId: "l1", command: "ls /etc", running: true })]);
    client.respond(first.copy.id, { outcome: { outcome: "selected", optionId: "no" } });
    await agent.peer.next(isResponseTo(first.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "l1", status: "completed" });
    const second = await heldForPeople(client, agent, sessionId, run("m2", "make test"));
    expect(second.unseen.changes[0].running).toBeUndefined();
  });

  it("accepting a change that has a diff clears nothing: its diff must be named as shown", async () => {
    const t = await seedTenant();
    await rule(t, { type: "path", glob: `${CWD}/src/**`, kinds: ["edit"] });
    await rule(t, { type: "command", prefix: ["npm", "test"] });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await session(t, agent);
    await answeredByRule(agent, sessionId, edit("e1", `${CWD}/src/a.test.js`));
    const first = await heldForPeople(client, agent, sessionId, run("t1", "npm test"));
    expect(first.unseen.changes[0].diff).toBeDefined();
    client.respond(first.copy.id, allowAccepting(first.unseen, [], idsOf(first.unseen)));
    await agent.peer.next(isResponseTo(first.id));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" });
    expect(idsOf((await heldForPeople(client, agent, sessionId, run("t2", "npm test"))).unseen)).toEqual(idsOf(first.unseen));
  });
});

describe("effects that outlive their step (decision 0068)", () => {
  it("a command that may keep running after its step is never answered by a rule and offers no 'always': `make test &` under a make test rule, `setsid -f make test` under its exact rule", async () => {
    const t = await seedTenant();
    await rule(t, { type: "command", prefix: ["make", "test"] });
    await rule(t, { type: "argv", argv: ["setsid", "-f", "make", "test"] });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await session(t, agent);
    // The rule still answers make test in the foreground: nothing unseen, nothing left running.
    await answeredByRule(agent, sessionId, run("m0", "make test"));
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "m0", status: "completed" });
    const background = await heldForPeople(client, agent, sessionId, run("m1", "make test &"));
    expect(background.unseen).toBeUndefined();
    client.respond(background.copy.id, { outcome: { outcome: "selected", optionId: "no" } });
    await agent.peer.next(isResponseTo(background.id));
    const detached = await heldForPeople(client, agent, sessionId, run("s1", "setsid -f make test"));
    expect(detached.copy.params._meta.acpGateway.operation.outlivesItsStep).toMatch(/`setsid` starts something that keeps running/);
    // No gateway "always" is offered for it: only the agent's own options.
    expect(detached.copy.params.options.map((o: { optionId: string }) => o.optionId)).toEqual(OPTIONS.map((o) => o.optionId));
    client.respond(detached.copy.id, { outcome: { outcome: "selected", optionId: "no" } });
    await agent.peer.next(isResponseTo(detached.id));
  });
});
