// Four eyes (decision 0028) in the real SessionObject: the tenant's policy (settings.fourEyes, read
// when each turn starts) holds operations for a second person. The prompter's approval is refused
// and another approver's accepted; two approvals from distinct people; an allow rule never covers a
// held operation (a reject rule still rejects); a request nobody attached can approve is visible to
// everyone waiting; an approval link only rejects it.

import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { FourEyesSettings } from "../../core/principal";
import { objects } from "../../durable-objects/objects";
import { addKey, attachClient, barrier, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const run = (id: string, command: string) => ({ toolCallId: id, title: "Run", kind: "execute", rawInput: { command } });
const selected = (optionId: string) => ({ outcome: { outcome: "selected", optionId } });

async function tenant(fourEyes: FourEyesSettings) {
  const t = await seedTenant({ fourEyes });
  return {
    t,
    ada: await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" }),
    bea: await addKey(t.tenantId, "client", "bea", null, { role: "approver", user: "bea" }),
    cal: await addKey(t.tenantId, "client", "cal", null, { role: "approver", user: "cal" }),
    mia: await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" }),
  };
}

const api = (path: string, key: string, body?: unknown) =>
  SELF.fetch(`http://gateway.test${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${key}`, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

/** Audit rows are written off the hot path (batched): poll D1, bounded, until `count` are there. */
async function auditOf(tenantId: string, count: number) {
  for (let i = 0; i < 250; i++) {
    const { results } = await env.DB.prepare(
      "SELECT outcome, decided_by_user AS user, policy, reason, approved_by AS approvedBy FROM decision_audit WHERE tenant_id = ?",
    )
      .bind(tenantId)
      .all();
    if (results.length >= count) return results;
    await scheduler.wait(20);
  }
  throw new Error(`fewer than ${count} audit rows arrived in D1`);
}

describe("four eyes: not the prompter", () => {
  it("the prompter's approval is refused naming why and stays pending; a second approver's is accepted and audited with the policy", async () => {
    const { t, ada, bea } = await tenant({ operations: [{ program: "rm" }] });
    const agent = await dialInAgent(t);
    const { client: prompter, sessionId } = await clientWithSession(t, agent, ada);
    const second = await attachClient(t, agent, sessionId, bea);
    await startTurn(prompter, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "rm -rf /projects/demo/build"), OPTIONS);
    const mine = await prompter.next(isMethod("session/request_permission"));
    expect(mine.params._meta.acpGateway).toMatchObject({
      answerable: { optionIds: ["no"], reason: expect.stringMatching(/second person.*you prompted this turn/) },
      fourEyes: { require: "not_prompter", why: expect.stringMatching(/it runs rm/), approvals: 0 },
    });
    prompter.respond(mine.id, selected("once"));
    const refused = await prompter.next((m) => m.id === null && m.error !== undefined);
    expect(refused.error).toMatchObject({ code: -32003, message: expect.stringMatching(/four-eyes|second person/) });
    await barrier(prompter, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === asked)).toEqual([]);
    const theirs = await second.next(isMethod("session/request_permission"));
    expect(theirs.params._meta.acpGateway.answerable).toEqual({
      optionIds: ["once", "always", "no"],
      reason: expect.stringMatching(/no rule may cover/),
    });
    second.respond(theirs.id, selected("once"));
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual(selected("once").outcome);
    const resolved = await prompter.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params.decidedBy).toMatchObject({ user: "bea", role: "approver", policy: "four_eyes:not_prompter" });
  });

  it("the prompter may still reject it", async () => {
    const { t, ada, bea } = await tenant({ operations: [{ program: "rm" }] });
    const agent = await dialInAgent(t);
    const { client: prompter, sessionId } = await clientWithSession(t, agent, ada);
    await attachClient(t, agent, sessionId, bea);
    await startTurn(prompter, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "rm x"), OPTIONS);
    prompter.respond((await prompter.next(isMethod("session/request_permission"))).id, selected("no"));
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual(selected("no").outcome);
  });

  it("an always from the second approver is applied once: no rule covers a four-eyes operation", async () => {
    const { t, ada, bea } = await tenant({ operations: [{ prefix: ["git", "status"] }] });
    const agent = await dialInAgent(t);
    const { client: prompter, sessionId } = await clientWithSession(t, agent, ada);
    const second = await attachClient(t, agent, sessionId, bea);
    await startTurn(prompter, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "git status"), OPTIONS);
    second.respond((await second.next(isMethod("session/request_permission"))).id, selected("always"));
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual(selected("once").outcome);
    expect((await prompter.next(isMethod("_acp_gateway/rule_not_created"))).params.reason).toMatch(/four eyes/);
    const rules = await env.DB.prepare("SELECT count(*) AS n FROM decision_rules WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(rules?.n).toBe(0);
  });
});

describe("four eyes: rules", () => {
  it("an allow rule never covers a held operation (people are asked); a reject rule still rejects one", async () => {
    const { t, ada } = await tenant({ operations: [{ prefix: ["git", "status"] }, { prefix: ["git", "push"] }] });
    for (const [decision, prefix] of [
      ["allow", ["git", "status"]],
      ["reject", ["git", "push"]],
    ] as const) {
      const made = await api("/v1/rules", t.adminKey, { decision, matcher: { type: "command", prefix } });
      expect(made.status).toBe(201);
    }
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent, ada);
    await startTurn(client, agent, sessionId);
    const rejected = agent.askPermission(sessionId, run("p1", "git push origin main"), OPTIONS);
    expect((await agent.peer.next(isResponseTo(rejected))).result.outcome).toEqual(selected("no").outcome);
    agent.askPermission(sessionId, run("s1", "git status"), OPTIONS);
    const asked = await client.next(isMethod("session/request_permission"));
    expect(asked.params.toolCall.toolCallId).toBe("s1");
    expect(asked.params._meta.acpGateway.fourEyes.require).toBe("not_prompter");
  });
});

describe("four eyes: two approvals", () => {
  it("the first approval is recorded and told to all; the same person again is refused; a second person's commits; the audit names both", async () => {
    const { t, ada, bea, cal } = await tenant({ operations: [{ prefix: ["git", "push"], require: "two_approvals" }] });
    const agent = await dialInAgent(t);
    const { client: prompter, sessionId } = await clientWithSession(t, agent, ada);
    const b = await attachClient(t, agent, sessionId, bea);
    const c = await attachClient(t, agent, sessionId, cal);
    await startTurn(prompter, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "git push origin main"), OPTIONS);
    b.respond((await b.next(isMethod("session/request_permission"))).id, selected("once"));
    const recorded = await c.next(isMethod("_acp_gateway/approval_recorded"));
    expect(recorded.params).toMatchObject({ toolCallId: "c1", approvedBy: { user: "bea", role: "approver" }, needed: 2, recorded: 1 });
    const again = await b.next(isMethod("session/request_permission"));
    expect(again.params._meta.acpGateway).toMatchObject({ answerable: { optionIds: ["no"] }, fourEyes: { approvals: 1 } });
    b.respond(again.id, selected("once"));
    expect((await b.next((m) => m.id === null && m.error !== undefined)).error.message).toMatch(/two approvals.*yours is recorded/);
    await barrier(prompter, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === asked)).toEqual([]);
    c.respond((await c.next(isMethod("session/request_permission"))).id, selected("once"));
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual(selected("once").outcome);
    const resolved = await prompter.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params.decidedBy).toMatchObject({ user: "cal", policy: "four_eyes:two_approvals", approvedBefore: [{ user: "bea" }] });
    const audit = await auditOf(t.tenantId, 3);
    expect(audit).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ outcome: "approval_recorded", user: "bea", policy: "four_eyes:two_approvals" }),
        expect.objectContaining({ outcome: "refused", user: "bea", reason: expect.stringMatching(/two approvals/) }),
        expect.objectContaining({
          outcome: "selected",
          user: "cal",
          policy: "four_eyes:two_approvals",
          approvedBy: expect.stringMatching(/"user":"bea"/),
        }),
      ]),
    );
  });
});

describe("four eyes: unsatisfiable", () => {
  it("with only the prompter and a member attached, everyone is told nobody can approve; a second approver attaching can", async () => {
    const { t, ada, bea, mia } = await tenant({ operations: [{ program: "rm" }] });
    const agent = await dialInAgent(t);
    const { client: prompter, sessionId } = await clientWithSession(t, agent, ada);
    const member = await attachClient(t, agent, sessionId, mia);
    await startTurn(prompter, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "rm x"), OPTIONS);
    for (const peer of [prompter, member]) {
      const told = await peer.next(isMethod("_acp_gateway/four_eyes_unsatisfiable"));
      expect(told.params).toMatchObject({
        toolCallId: "c1",
        require: "not_prompter",
        reason: expect.stringMatching(/nobody attached can approve/),
      });
      const copy = await peer.next(isMethod("session/request_permission"));
      expect(copy.params._meta.acpGateway.fourEyes.unsatisfiable).toMatch(/waits for an approver other than the person who prompted/);
    }
    const second = await attachClient(t, agent, sessionId, bea);
    const theirs = await second.next(isMethod("session/request_permission"));
    expect(theirs.params._meta.acpGateway.fourEyes.unsatisfiable).toBeUndefined();
    second.respond(theirs.id, selected("once"));
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual(selected("once").outcome);
  });
});

describe("four eyes: closed world", () => {
  it("a policy the settings API would not store (a row written by hand) holds every operation for a second person", async () => {
    // SAFETY: the row is written as JSON directly, as an operator's hand-made UPDATE would.
    const { t, ada } = await tenant({ operations: "rm" } as unknown as FourEyesSettings);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent, ada);
    await startTurn(client, agent, sessionId);
    agent.askPermission(sessionId, run("c1", "ls"), OPTIONS);
    const copy = await client.next(isMethod("session/request_permission"));
    expect(copy.params._meta.acpGateway).toMatchObject({
      answerable: { optionIds: ["no"] },
      fourEyes: { require: "not_prompter", why: expect.stringMatching(/could not be read/) },
    });
  });
});

describe("four eyes: the export", () => {
  it("the NDJSON export names the person, role, connection, policy and reason of each decision", async () => {
    const { t, ada, bea } = await tenant({ operations: [{ program: "rm" }] });
    const agent = await dialInAgent(t);
    const { client: prompter, sessionId } = await clientWithSession(t, agent, ada);
    const second = await attachClient(t, agent, sessionId, bea);
    await startTurn(prompter, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "rm x"), OPTIONS);
    prompter.respond((await prompter.next(isMethod("session/request_permission"))).id, selected("once"));
    await prompter.next((m) => m.id === null && m.error !== undefined);
    second.respond((await second.next(isMethod("session/request_permission"))).id, selected("once"));
    await agent.peer.next(isResponseTo(asked));
    await auditOf(t.tenantId, 2);
    let lines: { entry: Record<string, any> }[] = [];
    for (let i = 0; i < 250 && lines.length < 2; i++) {
      const text = await (await api("/v1/audit/export", t.adminKey)).text();
      lines = text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { entry: Record<string, any> });
      if (lines.length < 2) await scheduler.wait(20);
    }
    expect(lines.map((l) => l.entry)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          outcome: "refused",
          decidedBy: expect.objectContaining({
            person: { issuer: "key", subject: "ada" },
            role: "approver",
            connectionId: expect.any(String),
          }),
          policy: "four_eyes:not_prompter",
          reason: expect.stringMatching(/prompted this turn/),
        }),
        expect.objectContaining({
          outcome: "selected",
          decidedBy: expect.objectContaining({ person: { issuer: "key", subject: "bea" }, role: "approver" }),
          policy: "four_eyes:not_prompter",
        }),
      ]),
    );
  });
});

describe("an always never stores an allow that would answer what four eyes holds (issue 35)", () => {
  const remember = (tenantId: string, command: string, user: string) =>
    objects.rules(env, tenantId).remember({
      sessionId: "s-remember",
      agent: "demo",
      cwd: "/srv/proj",
      user,
      toolCall: run("tc", command),
      options: OPTIONS,
      chosen: OPTIONS[1] as (typeof OPTIONS)[number],
      keyId: "k",
      toolCallId: "tc",
    });

  it("an approver's always on `git status` under a policy on `git status --short` is refused with the reason, and stores nothing", async () => {
    const { t } = await tenant({ operations: [{ program: "git", prefix: ["git", "status", "--short"] }] });
    const result = await remember(t.tenantId, "git status", "ada");
    expect(result).toMatchObject({ reason: expect.stringMatching(/four-eyes/) });
    const rules = (await (await api("/v1/rules", t.adminKey)).json()) as { items: unknown[] };
    expect(rules.items).toEqual([]);
  });

  it("the same always with no policy stores the prefix rule (the refusal comes from the policy, not the command)", async () => {
    const t = await seedTenant();
    const result = await remember(t.tenantId, "git status", "ada");
    expect(result).toMatchObject({ decision: "allow", description: expect.stringMatching(/git status/) });
  });
});
