// A turn that can no longer make progress ends after the tenant's turnIdleMs, with
// _acp_gateway/turn_ended and a reason; a turn waiting on a person is not idle.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { restartObject } from "./fuzz-faults";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { objects } from "../../durable-objects/objects";

/** When the session's idle timer would fire (its test seam). */
const idleAtOf = (instance: SessionObject) => sessionTesting(instance).idleAt();

/** A running turn whose agent asked a person (the client holds the copy), with the tenant's turnIdleMs. */
async function turnAskingAPerson(turnIdleMs: number) {
  const t = await seedTenant({ limits: { turnIdleMs } });
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  const session = objects.session(env, t.tenantId, sessionId);
  await startTurn(client, agent, sessionId);
  const agentReqId = agent.askPermission(sessionId, { toolCallId: "human", kind: "edit" });
  const copy = await client.next(isMethod("session/request_permission"));
  return { agent, client, session, agentReqId, copy };
}

describe("reliability: a turn whose agent never answers", () => {
  it("ends after turnIdleMs of silence: the prompt fails naming why, clients get turn_ended, the agent gets session/cancel", async () => {
    const t = await seedTenant({ limits: { turnIdleMs: 1000 } });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const started = Date.now();
    await startTurn(client, agent, sessionId);
    const failed = await client.next(isResponseTo("turn"), 10_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(failed.error).toMatchObject({ code: -32603, data: { reason: "turn_idle" } });
    expect(failed.error.message).toMatch(/made no progress for 1 s/);
    const ended = await client.next(isMethod("_acp_gateway/turn_ended"));
    expect(ended.params).toMatchObject({ sessionId, reason: "turn_idle" });
    await agent.peer.next(isMethod("session/cancel"));
    // The session takes a new prompt.
    client.send({ jsonrpc: "2.0", id: "next", method: "session/prompt", params: { sessionId, prompt: [] } });
    const next = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(next.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("next"))).result.stopReason).toBe("end_turn");
  });

  it("is not idle while a permission request waits on a person; the idle clock starts again at the answer", async () => {
    const { agent, client, session, agentReqId, copy } = await turnAskingAPerson(1000);
    expect(await runInDurableObject(session, idleAtOf)).toBeUndefined();
    const answeredAt = Date.now();
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(agentReqId));
    const idleAt = await runInDurableObject(session, idleAtOf);
    expect(idleAt).toBeGreaterThanOrEqual(answeredAt + 1000);
    const ended = await client.next(isMethod("_acp_gateway/turn_ended"), 10_000);
    expect(ended.params.reason).toBe("turn_idle");
  });

  it("after a restart, the idle clock still starts at a person's answer (its resolution's time, not a row of its own)", async () => {
    const { agent, client, session, agentReqId, copy } = await turnAskingAPerson(60_000);
    // The person takes a while: the answer is well after the log's newest entry (the request).
    await scheduler.wait(600);
    const answeredAt = Date.now();
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(agentReqId));
    await restartObject(session);
    expect(await runInDurableObject(session, idleAtOf)).toBeGreaterThanOrEqual(answeredAt + 60_000);
  });
});
