// Hostile payloads never break a session: frames too large or nested too deeply are refused at the
// edge (client frames in the edge Worker, agent frames in the AgentObject) with -32600 before they
// are parsed, and whatever they would have answered or started is left consistent.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MAX_FRAME_BYTES } from "../../protocol/limits";
import { attachClient, clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { objects } from "../../durable-objects/objects";

const nestedArrays = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const snapshotOf = (tenantId: string, sessionId: string) => objects.session(env, tenantId, sessionId).snapshot();

describe("hostile payloads", () => {
  it("a prompt nested 20,000 arrays deep gets -32600 and the session stays usable: cancel, reconnect and later prompts work", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send(
      `{"jsonrpc":"2.0","id":"deep","method":"session/prompt","params":{"sessionId":"${sessionId}","prompt":[{"type":"text","text":"x","_meta":${nestedArrays(20_000)}}]}}`,
    );
    const refused = await client.next(isResponseTo("deep"));
    expect(refused.error).toMatchObject({ code: -32600, data: { reason: "too_deep", limit: 64 } });
    expect((await snapshotOf(t.tenantId, sessionId))?.turn).toEqual({ state: "idle" });
    client.notify("session/cancel", { sessionId });
    await agent.peer.next(isMethod("session/cancel"));
    client.close();
    const back = await attachClient(t, agent, sessionId, t.clientKey);
    back.send({ jsonrpc: "2.0", id: "next", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "hi" }] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await back.next(isResponseTo("next"))).result.stopReason).toBe("end_turn");
  });

  it("a permission answer with deeply nested _meta is refused, not announced as resolved, and a proper answer still reaches the agent", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client: alice, sessionId } = await clientWithSession(t, agent);
    const bob = await attachClient(t, agent, sessionId);
    alice.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    const agentReqId = agent.askPermission(sessionId, { toolCallId: "t1", kind: "execute", rawInput: { command: "make" } });
    const copy = await alice.next(isMethod("session/request_permission"));
    await bob.next(isMethod("session/request_permission"));
    alice.send(
      `{"jsonrpc":"2.0","id":${copy.id},"result":{"outcome":{"outcome":"selected","optionId":"allow"},"_meta":${nestedArrays(5_000)}}}`,
    );
    const refused = await alice.next((m) => m.id === null && m.error);
    expect(refused.error).toMatchObject({ code: -32600, data: { reason: "too_deep", requestId: copy.id } });
    expect((await snapshotOf(t.tenantId, sessionId))?.pendingPermissions).toHaveLength(1);
    alice.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(agentReqId))).result.outcome.optionId).toBe("allow");
    const resolved = await bob.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    expect(bob.unclaimed().filter((m) => m.method === "_acp_gateway/permission_resolved")).toEqual([]);
  });

  it("a client frame over the size limit is refused with -32600 and its id; the turn never starts", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const text = "x".repeat(MAX_FRAME_BYTES);
    client.send({ jsonrpc: "2.0", id: "big", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text }] } });
    const refused = await client.next(isResponseTo("big"));
    expect(refused.error).toMatchObject({ code: -32600, data: { reason: "frame_too_large", limit: MAX_FRAME_BYTES } });
    expect((await snapshotOf(t.tenantId, sessionId))?.turn).toEqual({ state: "idle" });
  });

  it("agent frames too deep or too large are refused at the AgentObject, and an answer it refused does not leave the turn running", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    agent.peer.send(
      `{"jsonrpc":"2.0","id":"deep-req","method":"session/request_permission","params":{"sessionId":"${sessionId}","toolCall":${nestedArrays(100)}}}`,
    );
    expect((await agent.peer.next(isResponseTo("deep-req"))).error).toMatchObject({ code: -32600, data: { reason: "too_deep" } });
    client.send({ jsonrpc: "2.0", id: "p1", method: "session/prompt", params: { sessionId, prompt: [] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn", _meta: { pad: "y".repeat(MAX_FRAME_BYTES) } });
    const failed = await client.next(isResponseTo("p1"));
    expect(failed.error.message).toMatch(/answer was refused by the gateway: Frame too large/);
    expect((await snapshotOf(t.tenantId, sessionId))?.turn).toEqual({ state: "idle" });
    client.send({ jsonrpc: "2.0", id: "p2", method: "session/prompt", params: { sessionId, prompt: [] } });
    const again = await agent.peer.next(isMethod("session/prompt"));
    agent.peer.respond(again.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("p2"))).result.stopReason).toBe("end_turn");
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
  });
});
