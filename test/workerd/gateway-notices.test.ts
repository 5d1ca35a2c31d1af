// ACP `notice` updates for what the gateway does on its own (decision 0063), in the real Worker,
// SessionObject and D1: a request answered by a rule, a first approval of two waiting for a second
// person, an answer refused for who gave it (to that client only), a mode change held for four eyes and
// its decision. Each scenario attaches the same person twice — once advertising
// `clientCapabilities.session.notices`, once not — and checks that the first gets the notice and the
// second none, and that apart from the notices both received exactly the same frames.

import { describe, expect, it } from "vitest";
import {
  type Peer,
  type ScriptedAgent,
  type SeededTenant,
  addKey,
  allowNpmTest,
  api,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
  withoutCursor,
} from "./helpers";

type Json = Record<string, any>;

const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const run = (id: string, command: string) => ({ toolCallId: id, title: "Run", kind: "execute", rawInput: { command } });

const isNotice = (m: Json) => m.method === "session/update" && m.params?.update?.sessionUpdate === "notice";

/** A client of `key` that creates a session (the prompter), advertising notices or not. */
async function prompterOf(t: SeededTenant, agent: ScriptedAgent, key: string, notices: boolean) {
  const client = await connect(`/acp?agent=${agent.name}`, key);
  await client.request("initialize", { protocolVersion: 1, clientCapabilities: notices ? { session: { notices: {} } } : {} });
  const created = client.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
  const sessionId = await agent.acceptNewSession();
  if ((await created).result?.sessionId !== sessionId) throw new Error("session/new failed");
  return { client, sessionId };
}

/** A client of `key` that loads the session, advertising notices or not; `from` is where its frames under test start. */
async function joined(agent: ScriptedAgent, sessionId: string, key: string, notices: boolean): Promise<{ peer: Peer; from: number }> {
  const peer = await connect(`/acp?agent=${agent.name}`, key);
  await peer.request("initialize", { protocolVersion: 1, clientCapabilities: notices ? { session: { notices: {} } } : {} });
  const loaded = await peer.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
  if (loaded.error) throw new Error(JSON.stringify(loaded.error));
  return { peer, from: peer.raw.length };
}

/** The same person twice: one connection advertising notices, one not. */
async function pairOf(agent: ScriptedAgent, sessionId: string, key: string) {
  return { told: await joined(agent, sessionId, key, true), plain: await joined(agent, sessionId, key, false) };
}

/**
 * Every frame the session sent these peers before now has arrived: the agent streams a marker, which
 * the session sends each client after anything it sent it earlier, on the same socket.
 */
async function fence(agent: ScriptedAgent, sessionId: string, peers: Peer[]): Promise<void> {
  const text = `fence-${crypto.randomUUID()}`;
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  const isFence = (m: Json) => m.method === "session/update" && m.params?.update?.content?.text === text;
  await Promise.all(peers.map((p) => p.next(isFence)));
}

/** What a peer received since `from`, parsed, without stream cursors. */
const framesOf = (p: { peer: Peer; from: number }) => p.peer.raw.slice(p.from).map((raw) => withoutCursor(JSON.parse(raw) as Json));

/** The notices one got, and that both got the very same frames besides. */
function noticesBeside(pair: { told: { peer: Peer; from: number }; plain: { peer: Peer; from: number } }): Json[] {
  const told = framesOf(pair.told);
  const plain = framesOf(pair.plain);
  expect(plain.filter(isNotice)).toEqual([]);
  expect(told.filter((m) => !isNotice(m))).toEqual(plain);
  return told.filter(isNotice).map((m) => m.params);
}

describe("ACP notices for what the gateway does on its own", () => {
  it("a request answered by a rule: the rule's description and id, what it chose; only to the client that advertised notices", async () => {
    const t = await seedTenant();
    await allowNpmTest(t);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, t.clientKey, false);
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    await startTurn(client, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "npm test"), OPTIONS);
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    const resolved = await pair.told.peer.next(isMethod("_acp_gateway/permission_resolved"));
    const rule = resolved.params.decidedBy;
    expect(rule).toMatchObject({ type: "rule", ruleId: expect.any(String), description: expect.any(String) });
    await fence(agent, sessionId, [client, pair.told.peer, pair.plain.peer]);
    const notices = noticesBeside(pair);
    expect(notices).toEqual([
      {
        sessionId,
        update: {
          sessionUpdate: "notice",
          severity: "info",
          title: "Answered by a rule",
          description: `The tenant's rule "${rule.description}" (${rule.ruleId}) answered the agent's permission request for tool call c1: it chose option "once". Nobody was asked.`,
        },
      },
    ]);
    expect(client.raw.map((r) => JSON.parse(r) as Json).filter(isNotice)).toEqual([]);
  });

  it("a first approval of two: every client that advertised notices is told the request waits for a second person", async () => {
    const t = await seedTenant({ fourEyes: { operations: [{ prefix: ["git", "push"], require: "two_approvals" }] } });
    const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
    const bea = await addKey(t.tenantId, "client", "bea", null, { role: "approver", user: "bea" });
    const cal = await addKey(t.tenantId, "client", "cal", null, { role: "approver", user: "cal" });
    const agent = await dialInAgent(t);
    const { client: prompter, sessionId } = await prompterOf(t, agent, ada, false);
    const b = (await joined(agent, sessionId, bea, false)).peer;
    const pair = await pairOf(agent, sessionId, cal);
    await startTurn(prompter, agent, sessionId);
    agent.askPermission(sessionId, run("c1", "git push origin main"), OPTIONS);
    b.respond((await b.next(isMethod("session/request_permission"))).id, { outcome: { outcome: "selected", optionId: "once" } });
    await pair.told.peer.next(isMethod("_acp_gateway/approval_recorded"));
    await fence(agent, sessionId, [pair.told.peer, pair.plain.peer, b]);
    expect(noticesBeside(pair)).toEqual([
      {
        sessionId,
        update: {
          sessionUpdate: "notice",
          severity: "info",
          title: "Waiting for a second approval",
          description: "bea approved tool call c1. Four eyes: it reaches the agent only when a second person approves it too.",
        },
      },
    ]);
  });

  it("an answer refused for a role: the refused client that advertised notices gets the reason; nobody else gets a notice", async () => {
    const t = await seedTenant();
    const olga = await addKey(t.tenantId, "client", "olga", null, { role: "observer", user: "olga" });
    const agent = await dialInAgent(t);
    // The prompter advertises notices too: the refusal of another's answer is not its notice.
    const { client: prompter, sessionId } = await prompterOf(t, agent, t.clientKey, true);
    const pair = await pairOf(agent, sessionId, olga);
    await startTurn(prompter, agent, sessionId);
    agent.askPermission(sessionId, run("c1", "rm -rf build"), OPTIONS);
    for (const { peer } of [pair.told, pair.plain]) {
      const copy = await peer.next(isMethod("session/request_permission"));
      peer.respond(copy.id, { outcome: { outcome: "selected", optionId: "once" } });
      await peer.next((m) => m.id === null && m.error !== undefined);
    }
    await fence(agent, sessionId, [prompter, pair.told.peer, pair.plain.peer]);
    const refusal = framesOf(pair.told).find((m) => m.id === null && m.error)?.error;
    expect(refusal).toMatchObject({ code: -32003, message: expect.stringMatching(/observer/) });
    expect(noticesBeside(pair)).toEqual([
      {
        sessionId,
        update: { sessionUpdate: "notice", severity: "warning", title: "Your answer was refused", description: refusal.message },
      },
    ]);
    expect(prompter.raw.map((r) => JSON.parse(r) as Json).filter(isNotice)).toEqual([]);
  });

  it("a mode change held for four eyes and its decision; a client attaching while it is held is told it anew", async () => {
    const t = await seedTenant({ modes: { fourEyes: true } });
    const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
    const bob = await addKey(t.tenantId, "client", "bob", null, { role: "approver", user: "bob" });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, ada, false);
    const pair = await pairOf(agent, sessionId, bob);
    const set = client.request("session/set_mode", { sessionId, modeId: "bypassPermissions" }, "mode-1");
    const waiting = await pair.told.peer.next(isMethod("_acp_gateway/mode_change_waiting"));
    await fence(agent, sessionId, [pair.told.peer, pair.plain.peer]);
    const held = {
      sessionId,
      update: {
        sessionUpdate: "notice",
        severity: "info",
        title: "Mode change waiting for a second person",
        description: waiting.params.message,
      },
    };
    expect(noticesBeside(pair)).toEqual([held]);

    // Attaching while it waits: the gateway's notification again, and a new notice where advertised.
    const late = await pairOf(agent, sessionId, bob);
    await fence(agent, sessionId, [late.told.peer, late.plain.peer]);
    const lateFrames = framesOf(late.told);
    expect(lateFrames.filter(isNotice).map((m) => m.params)).toEqual([held]);
    expect(framesOf(late.plain).filter(isNotice)).toEqual([]);

    const decided = await pair.plain.peer.request("_acp_gateway/decide_mode_change", {
      sessionId,
      proposalId: waiting.params.proposalId,
      decision: "approve",
    });
    expect(decided.result).toEqual({ outcome: "approved" });
    const relayed = await agent.peer.next(isMethod("session/set_mode"));
    agent.peer.respond(relayed.id, {});
    await set;
    await pair.told.peer.next(isMethod("_acp_gateway/mode_change_decided"));
    await fence(agent, sessionId, [pair.told.peer, pair.plain.peer]);
    // The decider's own answer is its request's; besides it both saw the same frames.
    const told = framesOf(pair.told).filter((m) => !isNotice(m));
    const plain = framesOf(pair.plain).filter((m) => !(m.id === decided.id && "result" in m));
    expect(told).toEqual(plain);
    expect(
      framesOf(pair.told)
        .filter(isNotice)
        .map((m) => m.params),
    ).toEqual([
      held,
      {
        sessionId,
        update: {
          sessionUpdate: "notice",
          severity: "info",
          title: "Mode change approved",
          description: "mode → bypassPermissions was approved by bob; it goes to the agent.",
        },
      },
    ]);
  });
});

/** What a notice says beside one gateway notification: its severity, its title, and the notification's sentence it carries. */
type Said = [severity: string, title: string, text?: (params: Json) => unknown];

/**
 * The notices the told one of a pair should have got: one beside each gateway notification in `said`
 * it received, in their order, carrying the notification's own sentence (its `message` unless said
 * otherwise). Each method in `said` arrived at least once.
 */
function expectedBeside(pair: { told: { peer: Peer; from: number } }, sessionId: string, said: Record<string, Said>): Json[] {
  const told = framesOf(pair.told).filter((m) => typeof m.method === "string" && m.method in said);
  expect(new Set(told.map((m) => m.method))).toEqual(new Set(Object.keys(said)));
  return told.map((m) => {
    const [severity, title, text = (p: Json) => p.message] = said[m.method as string] ?? ["", ""];
    return { sessionId, update: { sessionUpdate: "notice", severity, title, description: text(m.params) } };
  });
}

const ALWAYS_OPTIONS = [...OPTIONS, { optionId: "always", name: "Always allow", kind: "allow_always" }];

describe("ACP notices beside the gateway's other notifications (decision 0063)", () => {
  it("an agent that ran a tool call unasked: ran_unasked, turn_ended, session_held (anew to a client attaching while held), then session_resumed, each a notice", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, t.clientKey, false);
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    const turn = await startTurn(client, agent, sessionId);
    agent.update(sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "u1",
      title: "Edit",
      kind: "edit",
      status: "completed",
      rawInput: { file_path: "/projects/demo/a.c", old_string: "a", new_string: "b" },
      locations: [{ path: "/projects/demo/a.c" }],
    });
    await pair.told.peer.next(isMethod("_acp_gateway/session_held"));
    agent.peer.respond(turn.id, { stopReason: "cancelled" });
    await client.next(isResponseTo("turn"));
    // Attaching while it is held: a new live notice where advertised (the replay's session_held is history).
    const late = await pairOf(agent, sessionId, t.clientKey2);
    await fence(agent, sessionId, [late.told.peer, late.plain.peer]);
    const heldNow = framesOf(late.told).filter((m) => m.method === "_acp_gateway/session_held");
    expect(heldNow).toHaveLength(0); // a load replays history before `from`: the notice is all that is new
    expect(noticesBeside(late)).toEqual([
      {
        sessionId,
        update: {
          sessionUpdate: "notice",
          severity: "error",
          title: "Session held: it takes no prompts",
          description: expect.stringMatching(/DELETE \/v1\/sessions\/.+\/hold/),
        },
      },
    ]);
    const resumed = await api(`/v1/sessions/${sessionId}/hold`, t.clientKey2, { method: "DELETE" });
    expect(resumed.status).toBe(200);
    await pair.told.peer.next(isMethod("_acp_gateway/session_resumed"));
    await fence(agent, sessionId, [client, pair.told.peer, pair.plain.peer]);
    const expected = expectedBeside(pair, sessionId, {
      "_acp_gateway/ran_unasked": ["warning", "The agent ran a tool call without asking"],
      "_acp_gateway/turn_ended": ["warning", "The gateway ended the turn"],
      "_acp_gateway/session_held": ["error", "Session held: it takes no prompts"],
      "_acp_gateway/session_resumed": ["info", "Session resumed"],
    });
    expect(expected.map((n) => n.update.description)).toEqual([
      expect.stringMatching(/without asking anyone/),
      expect.stringMatching(/without asking anyone/),
      expect.stringMatching(/DELETE \/v1\/sessions\/.+\/hold/),
      expect.stringMatching(/resumed the session/),
    ]);
    expect(noticesBeside(pair)).toEqual(expected);
  });

  it("four eyes nobody attached can give: the request waits, and the notice says for whom", async () => {
    const t = await seedTenant({ fourEyes: { operations: [{ program: "rm" }] } });
    const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
    const mia = await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, ada, false);
    const pair = await pairOf(agent, sessionId, mia);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, run("c1", "rm x"), OPTIONS);
    await pair.told.peer.next(isMethod("_acp_gateway/four_eyes_unsatisfiable"));
    await fence(agent, sessionId, [client, pair.told.peer, pair.plain.peer]);
    const expected = expectedBeside(pair, sessionId, {
      "_acp_gateway/four_eyes_unsatisfiable": ["warning", "Nobody here can give the second approval", (p) => p.reason],
    });
    expect(expected[0]?.update.description).toMatch(/four eyes .* nobody attached can approve it now/);
    expect(noticesBeside(pair)).toEqual(expected);
  });

  it("a member's always applied once and not remembered; an approver's made a rule: each told with what it means", async () => {
    const t = await seedTenant();
    const mia = await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" });
    const ada = await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" });
    const agent = await dialInAgent(t);
    const { client: member, sessionId } = await prompterOf(t, agent, mia, false);
    const approver = (await joined(agent, sessionId, ada, false)).peer;
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    await startTurn(member, agent, sessionId);
    agent.askPermission(sessionId, run("c1", "git status"), ALWAYS_OPTIONS);
    member.respond((await member.next(isMethod("session/request_permission"))).id, {
      outcome: { outcome: "selected", optionId: "always" },
    });
    await pair.told.peer.next(isMethod("_acp_gateway/rule_not_created"));
    agent.askPermission(sessionId, run("c2", "git log"), ALWAYS_OPTIONS);
    const copy = await approver.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === "c2");
    approver.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
    const created = await pair.told.peer.next(isMethod("_acp_gateway/rule_created"));
    await fence(agent, sessionId, [member, approver, pair.told.peer, pair.plain.peer]);
    const { rule } = created.params;
    expect(noticesBeside(pair)).toEqual([
      ...expectedBeside(pair, sessionId, { "_acp_gateway/rule_not_created": ["info", "Not remembered as a rule", (p) => p.reason] }),
      {
        sessionId,
        update: {
          sessionUpdate: "notice",
          severity: "info",
          title: "A rule was remembered",
          description: `ada's answer to tool call c2 became the tenant's rule "${rule.description}" (${rule.id}): from now on it will allow matching requests without asking anyone. An admin can revoke it.`,
        },
      },
    ]);
  });

  it("a request over the session's limit, and one whose operation the agent changed: limit_reached and operation_changed", async () => {
    const t = await seedTenant({ limits: { pendingPermissionsPerSession: 1 } });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, t.clientKey, false);
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, run("n1", "npm test"), OPTIONS);
    await pair.told.peer.next(isMethod("session/request_permission"));
    const over = agent.askPermission(sessionId, run("n2", "npm run lint"), OPTIONS);
    expect((await agent.peer.next(isResponseTo(over))).error?.data?.reason).toBe("pending_permission_limit");
    agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: "n1", rawInput: { command: "npm publish" } });
    await pair.told.peer.next(isMethod("_acp_gateway/operation_changed"));
    await fence(agent, sessionId, [client, pair.told.peer, pair.plain.peer]);
    const expected = expectedBeside(pair, sessionId, {
      "_acp_gateway/limit_reached": ["warning", "A limit was reached"],
      "_acp_gateway/operation_changed": ["warning", "A request changed and is asked again"],
    });
    expect(expected.map((n) => n.update.description)).toEqual([
      expect.stringMatching(/Too many permission requests are waiting/),
      expect.stringMatching(/changed this request's .* asked again/),
    ]);
    expect(noticesBeside(pair)).toEqual(expected);
  });

  it("the agent switching itself into a governed mode: agent_mode_changed as a warning", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, t.clientKey, false);
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    agent.update(sessionId, { sessionUpdate: "current_mode_update", currentModeId: "acceptEdits" });
    await pair.told.peer.next(isMethod("_acp_gateway/agent_mode_changed"));
    await fence(agent, sessionId, [client, pair.told.peer, pair.plain.peer]);
    const expected = expectedBeside(pair, sessionId, {
      "_acp_gateway/agent_mode_changed": ["warning", "The agent switched its mode by itself"],
    });
    expect(expected[0]?.update.description).toMatch(/switched this session's mode to acceptEdits by itself/);
    expect(noticesBeside(pair)).toEqual(expected);
  });

  it("a session deleted by another: a client that advertised notices gets one right after session_deleted, before it is detached", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, t.clientKey, false);
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    const deleting = client.request("session/delete", { sessionId });
    agent.peer.respond((await agent.peer.next(isMethod("session/delete"))).id, {});
    expect((await deleting).result).toEqual({});
    const deleted = await pair.told.peer.next(isMethod("_acp_gateway/session_deleted"));
    const notice = withoutCursor(await pair.told.peer.next(isNotice));
    expect(notice.params).toEqual({
      sessionId,
      update: { sessionUpdate: "notice", severity: "warning", title: "Session deleted", description: deleted.params.message },
    });
    expect(deleted.params.message).toMatch(/was deleted by alice; you were detached/);
    // The session is gone, so no fence can follow: that the other gets no notice is checked only as far
    // as its frames have come (its socket is another; noticeTo reads the capability as every path does).
    await pair.plain.peer.next(isMethod("_acp_gateway/session_deleted"));
    expect(framesOf(pair.plain).filter(isNotice)).toEqual([]);
    expect(framesOf(pair.told).filter((m) => !isNotice(m))).toEqual(framesOf(pair.plain));
  });
});

describe("the agent's own notices and quota updates, relayed as sent", () => {
  it("the gateway advertises notices to the agent: it can show them, to the clients that advertised them", async () => {
    const t = await seedTenant();
    const peer = await connect("/agents/scripted/connect", t.agentKey);
    const init = await peer.next(isMethod("initialize"));
    expect(init.params.clientCapabilities).toEqual({
      fs: { readTextFile: false, writeTextFile: false },
      terminal: false,
      session: { notices: {} },
    });
  });

  it("an agent's notice goes as sent to the clients that advertised notices, to no other, and is not history", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, t.clientKey, false);
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    // The draft's example, with an implementation-specific severity and the agent's _meta: kept as they are.
    const update = {
      sessionUpdate: "notice",
      severity: "_vendor_hint",
      title: "MCP server unavailable",
      description: "Continuing without it.",
      _meta: { vendor: { id: 7 } },
    };
    agent.update(sessionId, update);
    await fence(agent, sessionId, [client, pair.told.peer, pair.plain.peer]);
    expect(noticesBeside(pair)).toEqual([{ sessionId, update }]);
    expect(client.raw.map((r) => JSON.parse(r) as Json).filter(isNotice)).toEqual([]);
    // A client loading the session afterwards (notices advertised) is not replayed it: notices are live only.
    const later = await connect(`/acp?agent=${agent.name}`, t.clientKey2);
    await later.request("initialize", { protocolVersion: 1, clientCapabilities: { session: { notices: {} } } });
    await later.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
    await fence(agent, sessionId, [later]);
    expect(later.raw.map((r) => JSON.parse(r) as Json).filter(isNotice)).toEqual([]);
  });

  it("an agent's quota_update (a draft kind) reaches every client exactly as sent", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await prompterOf(t, agent, t.clientKey, false);
    const pair = await pairOf(agent, sessionId, t.clientKey2);
    const update = { sessionUpdate: "quota_update", quotas: [{ id: "tokens", used: 900, limit: 1000, resetsAt: "2026-12-08T00:00:00Z" }] };
    agent.update(sessionId, update);
    await fence(agent, sessionId, [client, pair.told.peer, pair.plain.peer]);
    for (const frames of [framesOf(pair.told), framesOf(pair.plain)])
      expect(frames.filter((m) => m.params?.update?.sessionUpdate === "quota_update")).toEqual([
        { jsonrpc: "2.0", method: "session/update", params: { sessionId, update } },
      ]);
  });
});
