// Answering is authorised when it commits (decision 0028), in the real SessionObject: who may answer
// is on every copy (`_meta.acpGateway.answerable`), a refused answer gets -32003 naming why while the
// request stays pending for the others and the refusal is audited, and a member's "always" is
// applied once with `_acp_gateway/rule_not_created`.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  addKey,
  attachClient,
  barrier,
  clientWithSession,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
  withoutCursor,
} from "./helpers";

const OPTIONS = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
];
const run = (id: string, command: string) => ({ toolCallId: id, title: "Run", kind: "execute", rawInput: { command } });

async function tenantWithPeople() {
  const t = await seedTenant();
  return {
    t,
    observer: await addKey(t.tenantId, "client", "olga", null, { role: "observer", user: "olga" }),
    member: await addKey(t.tenantId, "client", "mia", null, { role: "member", user: "mia" }),
    member2: await addKey(t.tenantId, "client", "max", null, { role: "member", user: "max" }),
    approver: await addKey(t.tenantId, "client", "ada", null, { role: "approver", user: "ada" }),
  };
}

async function auditRows(tenantId: string) {
  const rows = await env.DB.prepare(
    "SELECT outcome, option_id AS optionId, decided_by_user AS user, decided_by_role AS role, decided_by_connection AS connection, decided_by_issuer AS issuer, decided_by_subject AS subject, reason, policy FROM decision_audit WHERE tenant_id = ? ORDER BY at, id",
  )
    .bind(tenantId)
    .all();
  return rows.results;
}

/** Audit rows are written off the hot path (batched): poll D1, bounded, until they are there. */
async function waitFor<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; i < 250; i++) {
    const v = await read();
    if (ok(v)) return v;
    await scheduler.wait(20);
  }
  throw new Error("the audit rows never arrived in D1");
}

describe("who may answer, on every copy", () => {
  it("each copy carries answerable for its client's person, keeping the agent's _meta but never an agent's forged acpGateway", async () => {
    const { t, observer, member, member2, approver } = await tenantWithPeople();
    const agent = await dialInAgent(t);
    const { client: mia, sessionId } = await clientWithSession(t, agent, member);
    const olga = await attachClient(t, agent, sessionId, observer);
    const max = await attachClient(t, agent, sessionId, member2);
    const ada = await attachClient(t, agent, sessionId, approver);
    await startTurn(mia, agent, sessionId);
    agent.peer.send({
      jsonrpc: "2.0",
      id: "p1",
      method: "session/request_permission",
      params: {
        sessionId,
        toolCall: run("c1", "ls"),
        options: OPTIONS,
        _meta: { agentOwn: 1, acpGateway: { answerable: { optionIds: ["once"] } } },
      },
    });
    const copyOf = async (peer: typeof mia) => withoutCursor((await peer.next(isMethod("session/request_permission"))).params)._meta;
    const [m, o, x, a] = await Promise.all([copyOf(mia), copyOf(olga), copyOf(max), copyOf(ada)]);
    expect(m).toEqual({
      agentOwn: 1,
      acpGateway: {
        answerable: {
          optionIds: ["once", "always", "no", "_acp_gateway/allow_always", "_acp_gateway/reject_always"],
          reason: expect.stringMatching(/only approvers store rules/),
        },
        // The digest of the operation the copy shows, frozen when it was asked (decision 0040).
        operation: { hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
      },
    });
    expect(o.acpGateway.answerable).toEqual({ optionIds: [], reason: expect.stringMatching(/observer/) });
    expect(x.acpGateway.answerable).toEqual({ optionIds: [], reason: expect.stringMatching(/member.*turn they prompted/) });
    expect(a.acpGateway.answerable).toEqual({
      optionIds: ["once", "always", "no", "_acp_gateway/allow_always", "_acp_gateway/reject_always"],
    });
  });
});

describe("answering is authorised when it commits", () => {
  it("an observer's and another member's answers are refused with -32003 naming why; the request stays pending and an approver's answer wins; each refusal is audited", async () => {
    const { t, observer, member, member2, approver } = await tenantWithPeople();
    const agent = await dialInAgent(t);
    const { client: mia, sessionId } = await clientWithSession(t, agent, member);
    const olga = await attachClient(t, agent, sessionId, observer);
    const max = await attachClient(t, agent, sessionId, member2);
    await startTurn(mia, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "rm -rf build"), OPTIONS);
    for (const [peer, pattern] of [
      [olga, /observer/],
      [max, /members answer only the requests of a turn they prompted/],
    ] as const) {
      const copy = await peer.next(isMethod("session/request_permission"));
      peer.respond(copy.id, { outcome: { outcome: "selected", optionId: "once" } });
      const refused = await peer.next((m) => m.id === null && m.error !== undefined);
      expect(refused.error).toMatchObject({
        code: -32003,
        message: expect.stringMatching(pattern),
        data: { toolCallId: "c1", reason: expect.any(String) },
      });
      expect(refused.error.message).toMatch(/still pending/);
      // A fresh copy, saying again what this person may choose (nothing).
      expect((await peer.next(isMethod("session/request_permission"))).params._meta.acpGateway.answerable.optionIds).toEqual([]);
    }
    // A cancelled outcome from an observer is refused too: declining is answering.
    const again = olga.unclaimed().find((m) => m.method === "session/request_permission");
    expect(again).toBeUndefined();
    await barrier(mia, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === asked)).toEqual([]);
    // An approver attaches and answers: it wins.
    const ada = await attachClient(t, agent, sessionId, approver);
    const copy = await ada.next(isMethod("session/request_permission"));
    ada.respond(copy.id, { outcome: { outcome: "selected", optionId: "no" } });
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual({ outcome: "selected", optionId: "no" });
    const resolved = await mia.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params.decidedBy).toMatchObject({
      type: "person",
      user: "ada",
      role: "approver",
      person: { issuer: "key", subject: "ada" },
    });
    const rows = await waitFor(
      () => auditRows(t.tenantId),
      (r) => r.length >= 3,
    );
    expect(rows).toHaveLength(3);
    // Rows written in the same millisecond have no order between them: compared as a set.
    expect(rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          outcome: "refused",
          user: "olga",
          role: "observer",
          issuer: "key",
          subject: "olga",
          reason: expect.stringMatching(/observer/),
          connection: expect.any(String),
        }),
        expect.objectContaining({ outcome: "refused", user: "max", role: "member", reason: expect.stringMatching(/member/) }),
        expect.objectContaining({ outcome: "selected", optionId: "no", user: "ada", role: "approver", reason: null }),
      ]),
    );
  });

  it("a member answers their own turn's request", async () => {
    const { t, member } = await tenantWithPeople();
    const agent = await dialInAgent(t);
    const { client: mia, sessionId } = await clientWithSession(t, agent, member);
    await startTurn(mia, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "ls"), OPTIONS);
    const copy = await mia.next(isMethod("session/request_permission"));
    mia.respond(copy.id, { outcome: { outcome: "selected", optionId: "once" } });
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
  });

  it("a member's allow_always is applied once, no rule is stored, and every client is told why", async () => {
    const { t, member, approver } = await tenantWithPeople();
    const agent = await dialInAgent(t);
    const { client: mia, sessionId } = await clientWithSession(t, agent, member);
    const ada = await attachClient(t, agent, sessionId, approver);
    await startTurn(mia, agent, sessionId);
    const asked = agent.askPermission(sessionId, run("c1", "git status"), OPTIONS);
    const copy = await mia.next(isMethod("session/request_permission"));
    mia.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
    expect((await agent.peer.next(isResponseTo(asked))).result.outcome).toEqual({ outcome: "selected", optionId: "once" });
    for (const peer of [mia, ada]) {
      const told = await peer.next(isMethod("_acp_gateway/rule_not_created"));
      expect(told.params).toMatchObject({
        sessionId,
        toolCallId: "c1",
        reason: expect.stringMatching(/only approvers store rules.*member/),
      });
    }
    await barrier(mia, agent, sessionId);
    const rules = await env.DB.prepare("SELECT count(*) AS n FROM decision_rules WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(rules?.n).toBe(0);
    // The same command is asked again next time: nothing was remembered.
    agent.askPermission(sessionId, run("c2", "git status"), OPTIONS);
    expect((await mia.next(isMethod("session/request_permission"))).params.toolCall.toolCallId).toBe("c2");
  });

  it("an approver's allow_always still becomes a rule", async () => {
    const { t, approver } = await tenantWithPeople();
    const agent = await dialInAgent(t);
    const { client: ada, sessionId } = await clientWithSession(t, agent, approver);
    await startTurn(ada, agent, sessionId);
    agent.askPermission(sessionId, run("c1", "git status"), OPTIONS);
    const copy = await ada.next(isMethod("session/request_permission"));
    ada.respond(copy.id, { outcome: { outcome: "selected", optionId: "always" } });
    expect((await ada.next(isMethod("_acp_gateway/rule_created"))).params.rule.decision).toBe("allow");
  });
});
