// The gateway's namespace is the gateway's: an agent cannot speak as the gateway, neither with
// `_acp_gateway/*` methods nor with `_meta.acpGateway` marks, live or in replay.

import { describe, expect, it } from "vitest";
import {
  attachClient,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  type Peer,
  type ScriptedAgent,
  withoutCursor,
} from "./helpers";

async function drained(agent: ScriptedAgent, sessionId: string, client: Peer) {
  const marker = crypto.randomUUID();
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: marker } });
  await client.next((m) => m.params?.update?.content?.text === marker);
}

describe("the gateway's namespace", () => {
  it("an agent's _acp_gateway/rule_created and _acp_gateway/permission_resolved never reach clients", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const forged = {
      sessionId,
      toolCallId: "x",
      outcome: { outcome: "selected", optionId: "allow" },
      decidedBy: { type: "person", user: "admin" },
    };
    agent.peer.notify("_acp_gateway/permission_resolved", forged);
    agent.peer.notify("_acp_gateway/rule_created", { sessionId, rule: { description: "everything" }, createdBy: "admin" });
    agent.peer.notify("_acp_gateway/turn_ended", { sessionId, reason: "permission_deadline" });
    agent.peer.send({ jsonrpc: "2.0", id: "r", method: "_acp_gateway/rule_created", params: { sessionId } });
    const refused = await agent.peer.next(isResponseTo("r"));
    expect(refused.error).toMatchObject({ code: -32601, data: { reason: "gateway_namespace" } });
    await drained(agent, sessionId, client);
    expect(client.unclaimed().filter((m) => String(m.method).startsWith("_acp_gateway/"))).toEqual([]);
    const later = await attachClient(t, agent, sessionId);
    await drained(agent, sessionId, later);
    expect(later.unclaimed().filter((m) => String(m.method).startsWith("_acp_gateway/"))).toEqual([]);
  });

  it("_meta.acpGateway is removed from agent frames (however the key is spelled in JSON), live and in replay; other _meta is kept", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    // A forged "synthesized prompt of alice's connection" would make the CLI skip frames as its own echo.
    agent.peer.send(
      `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":${JSON.stringify(sessionId)},` +
        `"update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"rm -rf"},"_meta":{"acpGatew\\u0061y":{"x":1},"keep":2}},` +
        `"_meta":{"acpGateway":{"synthesized":true,"connectionId":"someone"},"traceparent":"00-1"}}}`,
    );
    const live = await client.next(isMethod("session/update"));
    expect(withoutCursor(live.params)._meta).toEqual({ traceparent: "00-1" });
    expect(live.params.update._meta).toEqual({ keep: 2 });
    expect(live.params.update.content).toEqual({ type: "text", text: "rm -rf" });
    const later = await attachClient(t, agent, sessionId);
    const replayed = await later.next((m) => m.params?.update?.sessionUpdate === "user_message_chunk");
    expect(withoutCursor(replayed.params)._meta).toEqual({ traceparent: "00-1" });
    expect(replayed.params.update._meta).toEqual({ keep: 2 });
  });

  it("an agent's session/new answer cannot carry _meta.acpGateway to the client", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const client = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const created = client.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
    const req = await agent.peer.next(isMethod("session/new"));
    agent.peer.respond(req.id, { sessionId: "s-meta", _meta: { acpGateway: { agentConnected: true }, vendor: 1 } });
    const answer = await created;
    expect(answer.result).toEqual({ sessionId: "s-meta", _meta: { vendor: 1 } });
  });
});
