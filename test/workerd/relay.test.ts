import { describe, expect, it } from "vitest";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";

describe("relay between a client and a dial-in agent", () => {
  it("creates a session through the agent and relays a prompt turn", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);

    client.send({ jsonrpc: "2.0", id: 7, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "hi" }] } });
    const prompt = await agent.peer.next(isMethod("session/prompt"));
    expect(prompt.params).toEqual({ sessionId, prompt: [{ type: "text", text: "hi" }] });
    agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hello" } });
    const update = await client.next(isMethod("session/update"));
    expect(update.params.update.content.text).toBe("hello");
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    const result = await client.next(isResponseTo(7));
    expect(result.result).toEqual({ stopReason: "end_turn" });
  });
});
