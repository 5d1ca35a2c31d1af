// The real agents behind the gateway (issue 36): each pinned package started through
// `acp-gateway agent`, driven by its scripted model on loopback, with SDK WebSocket clients in front.
// Every test runs a real command or writes a real file in a throwaway project and checks the disk.

import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { AGENTS } from "./agents.ts";
import { rawClient } from "../e2e/peers.ts";
import { tenantOfItsOwn } from "../e2e/tenants.ts";
import { type RunningAgent, answer, askedDuring, choose, operationOf, prompt, startAgent, unasked } from "./harness.ts";

type Json = Record<string, any>;

const url = inject("gatewayUrl");

describe.each(AGENTS)("$pkg behind acp-gateway agent", (profile) => {
  let agent: RunningAgent;
  let keys: { client: string; agent: string; admin: string };
  beforeAll(async () => {
    keys = await tenantOfItsOwn(url, profile.id);
    agent = await startAgent(profile, { url, keys });
  });
  afterAll(async () => {
    await agent?.stop();
  });
  // A check that fails or runs out of time says what the agent asked its model and what it logged.
  beforeEach(({ onTestFailed }) => onTestFailed(() => console.error(agent?.report())));
  const file = (name: string) => join(agent.project, name);

  it("sends a permission request to two clients, withdraws the loser's copy, and allow once runs the command", async () => {
    const alice = await agent.client();
    const sessionId = await agent.newSession(alice);
    const bob = await agent.client();
    await bob.request("session/load", { sessionId, cwd: agent.project, mcpServers: [] });
    const turn = prompt(alice, sessionId, "RUN: touch once-marker");
    const [a, b] = await Promise.all([askedDuring(alice, turn), askedDuring(bob, turn)]);
    // The same request; each client's stream stamps its own cursor on it (decision 0050).
    expect(withoutCursor(a.params)).toEqual(withoutCursor(b.params));
    expect(existsSync(file("once-marker"))).toBe(false);
    const taken = await answer(bob, b, choose("allow_once"));
    // Alice's copy of the request Bob's answer resolved is withdrawn.
    const lost = await alice.permissions.waitFor((p) => operationOf(p) === operationOf(taken));
    await expect(lost.answered).rejects.toMatchObject({ code: -32800 });
    expect(await turn).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
    expect(existsSync(file("once-marker"))).toBe(true);
  });

  const GATEWAY_ALWAYS = "_acp_gateway/allow_always";

  it.runIf(!profile.unrememberable)(
    "a person's always (the gateway's own) answers the same command in a new session, asks for git push --force, and leaves the agent's own permissions unchanged",
    async () => {
      const before = agent.remembered();
      const alice = await agent.client();
      const first = await agent.newSession(alice);
      const turn = prompt(alice, first, "RUN: touch always-marker");
      const asked = await askedDuring(alice, turn);
      // The gateway owns remembered decisions: its own option, worded as the rule it stores, whatever the agent offered.
      const gatewayAlways = (asked.params.options as Json[]).find((o) => o.optionId === GATEWAY_ALWAYS);
      expect(gatewayAlways).toMatchObject({ kind: "allow_always", name: expect.stringContaining("touch") });
      await answer(alice, asked, choose({ id: GATEWAY_ALWAYS }));
      expect(await turn).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
      expect(existsSync(file("always-marker"))).toBe(true);
      rmSync(file("always-marker"));

      const second = await agent.newSession(alice);
      expect(await unasked(alice, second, prompt(alice, second, "RUN: touch always-marker"))).toEqual(
        expect.objectContaining({ stopReason: "end_turn" }),
      );
      expect(existsSync(file("always-marker"))).toBe(true);

      const beforePush = new Set(alice.permissions.items);
      const push = prompt(alice, second, "RUN: git push --force");
      const dangerous = await askedDuring(alice, push, (p) => !beforePush.has(p));
      expect(JSON.stringify(dangerous.params.toolCall)).toContain("git push --force");
      await answer(alice, dangerous, choose("reject_once"));
      expect(["end_turn", "cancelled"]).toContain((await push).stopReason);
      expect(agent.remembered()).toEqual(before);
    },
  );

  it.runIf(profile.unrememberable)(`is offered no always, and allow once runs the command: ${profile.unrememberable}`, async () => {
    const before = agent.remembered();
    const alice = await agent.client();
    const sessionId = await agent.newSession(alice);
    const turn = prompt(alice, sessionId, "RUN: touch unremembered-marker");
    const asked = await askedDuring(alice, turn);
    // Nothing may be remembered from a request without its input (decision 0040): no always of the gateway's own.
    expect((asked.params.options as Json[]).map((o) => o.optionId)).not.toContain(GATEWAY_ALWAYS);
    expect(asked.params._meta.acpGateway.operation.rawInputMissing).toBeTruthy();
    await answer(alice, asked, choose("allow_once"));
    expect(await turn).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
    expect(existsSync(file("unremembered-marker"))).toBe(true);
    expect(agent.remembered()).toEqual(before);
  });

  it("shows an edit's diff to clients before the file changes, and writes it after allow once", async () => {
    const alice = await agent.client();
    const sessionId = await agent.newSession(alice);
    const turn = prompt(alice, sessionId, "WRITE: notes.txt hello from the scripted model");
    const asked = await askedDuring(alice, turn);
    const seen = [...alice.updates.items.map((u) => u.update), asked.params.toolCall] as Json[];
    const diff = seen.flatMap((u) => (u.content ?? []) as Json[]).find((c) => c.type === "diff");
    expect(diff).toMatchObject({ path: file("notes.txt"), newText: expect.stringContaining("hello from the scripted model") });
    expect(existsSync(file("notes.txt"))).toBe(false);
    await answer(alice, asked, choose("allow_once"));
    expect(await turn).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
    expect(readFileSync(file("notes.txt"), "utf8")).toContain("hello from the scripted model");
  });

  it.runIf(profile.editsUnasked)(
    `an edit it makes unasked (mode ${profile.editsUnasked?.mode}) stops the session: clients are told what ran, prompts are refused until an approver resumes it`,
    async () => {
      const alice = await agent.client();
      const sessionId = await agent.newSession(alice);
      await alice.request("session/set_mode", { sessionId, modeId: profile.editsUnasked?.mode });
      const of = (method: string) => (n: { method: string; params: Json }) => n.method === method && n.params.sessionId === sessionId;
      const turn = prompt(alice, sessionId, "WRITE: unasked.txt written in a governed mode");
      const ran = await alice.notices.waitFor(of("_acp_gateway/ran_unasked"), 120_000, "the run nobody was asked about");
      expect(ran.params).toMatchObject({ kind: "edit", changes: [file("unasked.txt")] });
      const held = await alice.notices.waitFor(of("_acp_gateway/session_held"), 30_000, "the session held");
      expect(held.params.hold).toMatchObject({ reason: "ran_unasked", toolCallId: ran.params.toolCallId });
      // The agent had written before it reported the call finished: the gateway stops what follows.
      expect(["cancelled", "end_turn"]).toContain((await turn).stopReason);
      await expect(prompt(alice, sessionId, "RUN: touch after-hold")).rejects.toMatchObject({ data: { reason: "session_held" } });
      expect(existsSync(file("after-hold"))).toBe(false);
      const resumed = await fetch(`${url}/v1/sessions/${sessionId}/hold`, {
        method: "DELETE",
        headers: { Authorization: `Bearer ${keys.client}` },
      });
      expect(await resumed.json()).toEqual({ resumed: true });
      // Resumed, the session takes prompts; back in the agent's asking mode (acceptEdits lets Claude Code
      // touch files unasked, which would stop the session again), a command is asked of the person.
      await alice.request("session/set_mode", { sessionId, modeId: profile.editsUnasked?.askingMode });
      const next = prompt(alice, sessionId, "RUN: touch after-resume");
      await answer(alice, await askedDuring(alice, next), choose("allow_once"));
      expect(await next).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
      expect(existsSync(file("after-resume"))).toBe(true);
    },
  );

  it("cancel while the person is asked ends the turn cancelled and the command never runs", async () => {
    const alice = await agent.client();
    const sessionId = await agent.newSession(alice);
    const turn = prompt(alice, sessionId, "RUN: touch cancel-marker");
    const asked = await askedDuring(alice, turn);
    await alice.notify("session/cancel", { sessionId });
    // Soft: a turn that ends otherwise still reports whether the command ran.
    expect.soft(await turn).toEqual(expect.objectContaining({ stopReason: "cancelled" }));
    await expect.soft(asked.answered).rejects.toMatchObject({ code: -32800 });
    expect(existsSync(file("cancel-marker"))).toBe(false);
  });

  it("a client attaching mid-turn gets the history, then the waiting request, and its answer runs the command", async () => {
    const alice = await agent.client();
    const sessionId = await agent.newSession(alice);
    const turn = prompt(alice, sessionId, "RUN: touch late-marker");
    await askedDuring(alice, turn);
    const late = await agent.client();
    await late.request("session/load", { sessionId, cwd: agent.project, mcpServers: [] });
    // The history: the person's prompt and the agent's tool call (agents send other updates around them).
    const replayed = late.updates.items.map((u) => u.update as Json);
    expect(replayed).toContainEqual(
      expect.objectContaining({
        sessionUpdate: "user_message_chunk",
        content: expect.objectContaining({ text: "RUN: touch late-marker" }),
      }),
    );
    const copy = await late.permissions.waitFor(() => true, 10_000);
    // The request the first client was sent (asked again in its place, should the agent have changed it meanwhile).
    // The late copy also carries what the agent changed unseen, which the first client was told just after
    // its copy (`_acp_gateway/unseen_changes`, decision 0046): compared apart from that.
    expect(withoutUnseen(withoutCursor(copy.params))).toEqual(
      withoutUnseen(withoutCursor((await alice.permissions.waitFor((p) => operationOf(p) === operationOf(copy))).params)),
    );
    await answer(late, copy, choose("allow_once"));
    expect(await turn).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
    expect(existsSync(file("late-marker"))).toBe(true);
  });

  /** A client key issued to one person (its echoes and history name them), made with the tenant's admin key. */
  const personKey = async (user: string): Promise<string> => {
    const created = await fetch(`${url}/v1/keys`, {
      method: "POST",
      headers: { Authorization: `Bearer ${keys.admin}`, "content-type": "application/json" },
      body: JSON.stringify({ kind: "client", user, label: user }),
    });
    expect(created.status).toBe(201);
    return ((await created.json()) as { key: string }).key;
  };
  const personClient = async (user: string) => agent.client(await personKey(user));
  /** A byte-level client attached to the session as an observer: it is sent prompt_received and turn_complete (decision 0060). */
  const watcher = async (sessionId: string) => {
    const raw = await rawClient({ url, key: keys.client, agent: agent.name });
    await raw.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    await raw.request("session/attach", { sessionId, role: "observer", historyPolicy: "none" });
    return raw;
  };
  const updatesOf = (frames: Json[], sessionId: string, kind: string) =>
    frames.filter((m) => m.method === "session/update" && m.params?.sessionId === sessionId && m.params.update?.sessionUpdate === kind);
  /** The echo of a teammate's prompt to the watcher; a prompt the gateway refused fails at once, with its error. */
  const echoed = (
    watching: { received: { waitFor(match: (m: Json) => boolean, ms: number, what: string): Promise<Json> } },
    sent: Promise<unknown>,
    match: (m: Json) => boolean,
  ) =>
    Promise.race([
      watching.received.waitFor(match, 30_000, "Bob's prompt echoed"),
      sent.then(
        () => new Promise<never>(() => undefined),
        (error: unknown) => {
          throw new Error(`Bob's prompt was refused: ${JSON.stringify(error)}`);
        },
      ),
    ]);
  const turnOf = async (sessionId: string) =>
    ((await (await fetch(`${url}/v1/sessions/${sessionId}`, { headers: { Authorization: `Bearer ${keys.client}` } })).json()) as Json).turn
      ?.state as string;

  it.runIf(profile.queuesPrompts)(
    "a teammate's prompt while the first prompt's turn waits on a person reaches the agent: each prompt is answered, the turn ends once, both are in the history with their authors",
    async () => {
      const alice = await personClient("alice");
      const bob = await personClient("bob");
      const sessionId = await agent.newSession(alice);
      await bob.request("session/load", { sessionId, cwd: agent.project, mcpServers: [] });
      const carol = await watcher(sessionId);
      const first = prompt(alice, sessionId, "RUN: touch queued-first-marker");
      // The scripted model holds the first turn on its command: the agent waits for a person.
      const asked = await askedDuring(alice, first);
      const remark = "Bob adds: RUN: touch queued-second-marker";
      const second = prompt(bob, sessionId, remark);
      // Relayed at once (not refused turn_in_progress): the gateway echoes it, with its author, to the others.
      const received = await echoed(
        carol,
        second,
        (m) => updatesOf([m], sessionId, "prompt_received").length > 0 && JSON.stringify(m.params.update.prompt).includes(remark),
      );
      expect(received.params.update.sentBy).toMatchObject({ user: "bob" });
      expect(await turnOf(sessionId)).toBe("running");
      await answer(alice, asked, choose("allow_once"));
      // Claude takes Bob's words up within the running turn (beside the command's result): its model asks to run his command.
      const bobs = await askedDuring(bob, second, (p) => JSON.stringify(p.params.toolCall).includes("queued-second-marker"));
      // It answered Alice's prompt end_turn as it handed over (decision 0067); the turn runs on, Bob's request waiting.
      expect(await first).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
      expect(await turnOf(sessionId)).toBe("running");
      expect(updatesOf(carol.received.items, sessionId, "turn_complete")).toHaveLength(0);
      await answer(bob, bobs, choose("allow_once"));
      const [one, two] = await Promise.all([first, second]);
      // Each prompt is answered by the agent, never refused by the gateway.
      expect(one).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
      expect(two).toEqual(expect.objectContaining({ stopReason: "end_turn" }));
      expect(existsSync(file("queued-first-marker"))).toBe(true);
      expect(existsSync(file("queued-second-marker"))).toBe(true);
      // The turn ended once, after both answers: one turn_complete (counted after detach, answered after every earlier frame).
      await carol.received.waitFor((m) => updatesOf([m], sessionId, "turn_complete").length > 0, 30_000, "the turn's end");
      await carol.request("session/detach", { sessionId });
      expect(updatesOf(carol.received.items, sessionId, "turn_complete")).toHaveLength(1);
      expect(await turnOf(sessionId)).toBe("idle");
      // Both prompts are in the session's history, each with its author.
      const later = await rawClient({ url, key: keys.client, agent: agent.name });
      await later.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
      await later.request("session/load", { sessionId, cwd: agent.project, mcpServers: [] });
      const authorOf = (text: string) =>
        updatesOf(later.received.items, sessionId, "user_message_chunk").find((m) => m.params.update.content?.text === text)?.params._meta
          ?.acpGateway?.user;
      expect(authorOf("RUN: touch queued-first-marker")).toBe("alice");
      expect(authorOf(remark)).toBe("bob");
      carol.close();
      later.close();
    },
  );

  it.runIf(profile.queuesPrompts)(
    "session/cancel with two prompts in flight answers both cancelled, and the command never runs",
    async () => {
      const alice = await personClient("alice");
      const bob = await personClient("bob");
      const sessionId = await agent.newSession(alice);
      await bob.request("session/load", { sessionId, cwd: agent.project, mcpServers: [] });
      const first = prompt(alice, sessionId, "RUN: touch queued-cancel-marker");
      const asked = await askedDuring(alice, first);
      const carol = await watcher(sessionId);
      const second = prompt(bob, sessionId, "Bob adds: and then stop");
      await echoed(carol, second, (m) => updatesOf([m], sessionId, "prompt_received").length > 0);
      await alice.notify("session/cancel", { sessionId });
      const [one, two] = await Promise.all([first, second]);
      expect(one).toEqual(expect.objectContaining({ stopReason: "cancelled" }));
      expect(two).toEqual(expect.objectContaining({ stopReason: "cancelled" }));
      await expect(asked.answered).rejects.toMatchObject({ code: -32800 });
      expect(existsSync(file("queued-cancel-marker"))).toBe(false);
      expect(await turnOf(sessionId)).toBe("idle");
      carol.close();
    },
  );

  const postReject = async () => {
    mkdirSync(file("build"), { recursive: true });
    const created = await fetch(`${url}/v1/rules`, {
      method: "POST",
      headers: { Authorization: `Bearer ${keys.admin}`, "content-type": "application/json" },
      body: JSON.stringify({ decision: "reject", matcher: { type: "command", prefix: ["rm"] }, scope: { project: agent.project } }),
    });
    expect(created.status).toBe(201);
  };

  it.runIf(!profile.unrememberable)("a team's reject rule answers the agent: no client is asked and the command never runs", async () => {
    await postReject();
    const alice = await agent.client();
    const sessionId = await agent.newSession(alice);
    expect(["end_turn", "cancelled"]).toContain(
      (await unasked(alice, sessionId, prompt(alice, sessionId, "RUN: rm -rf build"))).stopReason,
    );
    expect(existsSync(file("build"))).toBe(true);
  });

  it.runIf(profile.unrememberable)("a request no rule can judge goes to a person, who rejects it: the command never runs", async () => {
    await postReject();
    const alice = await agent.client();
    const sessionId = await agent.newSession(alice);
    const turn = prompt(alice, sessionId, "RUN: rm -rf build");
    const asked = await askedDuring(alice, turn);
    await answer(alice, asked, choose("reject_once"));
    expect(["end_turn", "cancelled"]).toContain((await turn).stopReason);
    expect(existsSync(file("build"))).toBe(true);
  });
});

/** A frame's params without the stream cursor each client's stream stamps in `_meta` (decision 0050). */
function withoutCursor(params: unknown): unknown {
  if (typeof params !== "object" || params === null) return params;
  const { _meta: meta, ...rest } = params as { _meta?: Record<string, unknown> };
  if (!meta) return rest;
  const { "acp/cursor": _cursor, ...others } = meta;
  return Object.keys(others).length > 0 ? { ...rest, _meta: others } : rest;
}

/** A request's params without `_meta.acpGateway.unseen` (sent with a late copy, after the first ones). */
function withoutUnseen(params: unknown): unknown {
  const meta = (params as { _meta?: { acpGateway?: Record<string, unknown> } } | null)?._meta;
  if (!meta?.acpGateway || !("unseen" in meta.acpGateway)) return params;
  const { unseen: _unseen, ...gateway } = meta.acpGateway;
  return { ...(params as object), _meta: { ...meta, acpGateway: gateway } };
}
