// A permission request a WebSocket client held when its socket dropped (decision 0050, 0054): the
// new socket's edge never saw it, so its old id names nothing there. After `stream/resume` the session
// sends it again (under an id the new socket can answer) unless the replay carries it already.
import { describe, expect, it } from "vitest";
import { type Peer, clientWithSession, connect, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

type Json = Record<string, any>;

const cursorOf = (m: Json): string => m.params?._meta?.["acp/cursor"] ?? m._meta?.["acp/cursor"] ?? "";
const connectionIdOf = (peer: Peer): string => peer.response.headers.get("Acp-Connection-Id") ?? "";

describe("stream/resume and the requests open before the drop", () => {
  it("a request the client held before its socket dropped is sent again after the resume, and its answer reaches the agent", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const agentReq = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute", rawInput: { command: "make" } });
    const held = await client.next(isMethod("session/request_permission"));
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "after the ask" } });
    const last = await client.next(isMethod("session/update"));
    client.close(); // the network drops, the dialog still open

    const peer = await connect(`/acp?agent=${agent.name}`, t.clientKey);
    const answer = await peer.request(
      "stream/resume",
      { connectionId: connectionIdOf(client), streams: { [sessionId]: cursorOf(last) } },
      "resume",
    );
    expect(answer.result.resumed).toEqual([sessionId]);
    const again = await peer.next(isMethod("session/request_permission"));
    expect(again.params.toolCall.toolCallId).toBe(held.params.toolCall.toolCallId);
    peer.respond(again.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(agentReq))).result.outcome.optionId).toBe("allow");
  });
});
