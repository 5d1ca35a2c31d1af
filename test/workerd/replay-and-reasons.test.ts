// Replayed history says who and what answered, as the live path did (decision 0048): a client that
// attaches later (session/load: a reload, a reconnect, a teammate opening the link) gets each resolved
// permission request as the `_acp_gateway/permission_resolved` the clients attached then got, with the
// request's tool call and options, and the gateway's notices that are history. A person's answer may
// carry a reason (`_meta.acpGateway.reason`): bounded, display-safe, on every client's resolution, in
// the audit, and handed to the agent under the gateway's `_meta`; a client's own `_meta.acpGateway`
// never reaches the agent.

import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import {
  type Peer,
  type ScriptedAgent,
  type SeededTenant,
  ALLOW,
  DEFAULT_OPTIONS,
  allowNpmTest,
  api,
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

type Json = Record<string, any>;

const run = (id: string, command: string) => ({ toolCallId: id, title: "Run it", kind: "execute", rawInput: { command } });
const RESOLVED = "_acp_gateway/permission_resolved";

/** A client's answer choosing "allow", with `_meta` as given. */
const allowWith = (meta: Json) => ({ ...ALLOW, _meta: meta });

/** Asks permission for `command` in a running turn; returns the agent's request id and the client's copy. */
async function asked(client: Peer, agent: ScriptedAgent, sessionId: string, toolCallId: string, command: string) {
  agent.update(sessionId, { sessionUpdate: "tool_call", ...run(toolCallId, command), status: "pending" });
  const agentReqId = agent.askPermission(sessionId, run(toolCallId, command));
  const copy = await client.next((m) => m.method === "session/request_permission" && m.params.toolCall.toolCallId === toolCallId);
  return { agentReqId, copy };
}

/** What a client attaching now with session/load is replayed, up to the load's answer. */
async function replayed(t: SeededTenant, agent: ScriptedAgent, sessionId: string): Promise<Json[]> {
  const late = await attachClient(t, agent, sessionId);
  const frames = late.unclaimed();
  late.close();
  return frames;
}

async function auditReasons(tenantId: string, sessionId: string, n: number): Promise<{ tool_call_id: string; reason: string | null }[]> {
  return vi.waitFor(
    async () => {
      const { results } = await env.DB.prepare(
        "SELECT tool_call_id, reason FROM decision_audit WHERE tenant_id = ? AND session_id = ? AND outcome = 'selected' ORDER BY at, id",
      )
        .bind(tenantId, sessionId)
        .all<{ tool_call_id: string; reason: string | null }>();
      expect(results).toHaveLength(n);
      return results;
    },
    { timeout: 5000, interval: 20 },
  );
}

describe("replayed history says who and what answered", () => {
  it("a person's answer with a reason: the agent gets it under _meta.acpGateway, every client's resolution names it, the audit keeps it, and a later session/load replays the same resolution with the request", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const watcher = await attachClient(t, agent, sessionId);
    await startTurn(client, agent, sessionId);
    const { agentReqId, copy } = await asked(client, agent, sessionId, "t1", "npm test");
    await watcher.next(isMethod("session/request_permission"));
    client.respond(copy.id, allowWith({ acpGateway: { reason: "  Tests only, \u202eno network  " }, editor: "zed" }));

    const got = await agent.peer.next(isResponseTo(agentReqId));
    // The outcome is the person's; the reason rides in the gateway's own namespace, display-safe; the client's other _meta is kept.
    expect(got.result).toEqual({
      outcome: { outcome: "selected", optionId: "allow" },
      _meta: { editor: "zed", acpGateway: { reason: "Tests only, ⟨U+202E⟩no network" } },
    });
    const live = await watcher.next(isMethod(RESOLVED));
    expect(live.params.decidedBy).toMatchObject({ type: "person", user: "alice", reason: "Tests only, ⟨U+202E⟩no network" });
    expect(await auditReasons(t.tenantId, sessionId, 1)).toEqual([{ tool_call_id: "t1", reason: "Tests only, ⟨U+202E⟩no network" }]);

    const frames = await replayed(t, agent, sessionId);
    const again = frames.filter(isMethod(RESOLVED));
    expect(again).toHaveLength(1);
    // The same resolution as told live; each stream stamps its own cursor on it (decision 0050).
    const { replayed: mark, request, ...said } = withoutCursor({ params: again[0]!.params }).params;
    expect(said).toEqual(withoutCursor({ params: live.params }).params);
    expect(mark).toBe(true);
    expect(request).toEqual({ toolCall: run("t1", "npm test"), options: DEFAULT_OPTIONS });
    // At its place in the history: after the tool call it answers.
    const toolAt = frames.findIndex((m) => m.params?.update?.toolCallId === "t1");
    expect(toolAt).toBeGreaterThanOrEqual(0);
    expect(toolAt).toBeLessThan(frames.indexOf(again[0]!));
  });

  it("a rule's answer, a cancel and the gateway's own answer outside a turn replay as they were told live", async () => {
    const t = await seedTenant();
    await allowNpmTest(t);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const byRule = agent.askPermission(sessionId, run("r1", "npm test"));
    await agent.peer.next(isResponseTo(byRule));
    const ruled = await client.next(isMethod(RESOLVED));
    await asked(client, agent, sessionId, "c1", "rm -rf dist");
    client.notify("session/cancel", { sessionId });
    const cancelled = await client.next(isMethod(RESOLVED));
    const late = agent.askPermission(sessionId, run("late-1", "curl example.com"));
    await agent.peer.next(isResponseTo(late));
    const byGateway = await client.next(isMethod("_acp_gateway/answered_by_gateway"));

    const frames = await replayed(t, agent, sessionId);
    const resolutions = frames.filter(isMethod(RESOLVED)).map((m) => m.params);
    expect(resolutions.map((p) => p.decidedBy)).toEqual([ruled.params.decidedBy, cancelled.params.decidedBy]);
    expect(ruled.params.decidedBy).toMatchObject({ type: "rule" });
    expect(cancelled.params.decidedBy).toMatchObject({ type: "cancel", user: "alice" });
    expect(frames.filter(isMethod("_acp_gateway/answered_by_gateway")).map((m) => withoutCursor(m).params)).toEqual([
      withoutCursor(byGateway).params,
    ]);
  });

  it("a request withdrawn (the agent withdrew it) replays no resolution, and a request still waiting is sent as a copy after the history", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const { agentReqId } = await asked(client, agent, sessionId, "w1", "make deploy");
    agent.peer.notify("$/cancel_request", { requestId: agentReqId });
    await client.next(isMethod("$/cancel_request"));
    await asked(client, agent, sessionId, "p1", "make build");
    const late = await attachClient(t, agent, sessionId);
    expect(late.unclaimed().filter(isMethod(RESOLVED))).toEqual([]);
    expect((await late.next(isMethod("session/request_permission"))).params.toolCall.toolCallId).toBe("p1");
    await barrier(late, agent, sessionId);
    expect(late.unclaimed().filter(isMethod("session/request_permission"))).toEqual([]);
  });

  it("the echo of a prompt names the key that sent it as GET /v1/me names it, so a console knows its own person's prompts on replay", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "p", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "hello" }] } });
    await agent.peer.next(isMethod("session/prompt"));
    const frames = await replayed(t, agent, sessionId);
    const echo = frames.find((m) => m.params?.update?.sessionUpdate === "user_message_chunk");
    const me = (await (await api("/v1/me", t.clientKey)).json()) as { keyId: string };
    const other = (await (await api("/v1/me", t.clientKey2)).json()) as { keyId: string };
    expect(echo?.params._meta.acpGateway).toMatchObject({ synthesized: true, user: "alice", keyId: me.keyId });
    expect(other.keyId).not.toBe(me.keyId);
  });
});

describe("a reason with an answer is bounded and never the client's word for the gateway's", () => {
  it("a reason over 500 characters is refused (-32602) naming the bound, and the request stays pending; 500 are accepted", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const { agentReqId, copy } = await asked(client, agent, sessionId, "b1", "npm test");
    client.respond(copy.id, allowWith({ acpGateway: { reason: "x".repeat(501) } }));
    const refused = await client.next((m) => m.error !== undefined);
    expect(refused.error.code).toBe(-32602);
    expect(refused.error.message).toContain("at most 500");
    const resent = await client.next(isMethod("session/request_permission"));
    client.respond(resent.id, allowWith({ acpGateway: { reason: 42 } }));
    expect((await client.next((m) => m.error !== undefined)).error.message).toContain("must be a string");
    const third = await client.next(isMethod("session/request_permission"));
    client.respond(third.id, allowWith({ acpGateway: { reason: "é".repeat(500) } }));
    const got = await agent.peer.next(isResponseTo(agentReqId));
    expect(got.result._meta.acpGateway.reason).toBe("é".repeat(500));
  });

  it("a client's own _meta.acpGateway (no reason) is not relayed to the agent; an answer without _meta is relayed as sent", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const first = await asked(client, agent, sessionId, "m1", "npm test");
    client.respond(first.copy.id, allowWith({ acpGateway: { decidedBy: { type: "rule" } }, trace: 1 }));
    expect((await agent.peer.next(isResponseTo(first.agentReqId))).result).toEqual({ ...ALLOW, _meta: { trace: 1 } });
    const second = await asked(client, agent, sessionId, "m2", "npm test");
    client.respond(second.copy.id, ALLOW);
    expect((await agent.peer.next(isResponseTo(second.agentReqId))).result).toEqual(ALLOW);
    await barrier(client, agent, sessionId);
  });
});
