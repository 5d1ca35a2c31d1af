// session/attach and session/detach (the draft RFD, agent-client-protocol PR #533; decision 0054)
// against the gateway as `npm start` runs it, with the SDK's own clients over Streamable HTTP and
// WebSocket and an SDK agent: a second client attaches to a live turn, gets the history and the
// waiting request, answers it first, and a third client that watches keeps working through the PR's
// updates (which the SDK's typed client does not know: it logs them as invalid params and goes on).
import { describe, expect, inject, it } from "vitest";
import { connectClient, dialInAgent, waitForAgent } from "./peers";

const url = inject("gatewayUrl");
const keys = inject("keys");

type Json = Record<string, any>;

const call = { toolCallId: "call-1", title: "Edit a.ts", kind: "edit", status: "pending", locations: [{ path: "/w/a.ts" }] };

async function askingAgent(name: string) {
  const agent = await dialInAgent({
    url,
    key: keys.agent,
    name,
    script: async (t) => {
      await t.say("Editing a.ts");
      await t.update({ sessionUpdate: "tool_call", ...call });
      const answer = await t.askPermission(call);
      await t.say(`answer: ${answer.outcome.optionId}`);
      return "end_turn";
    },
  });
  await waitForAgent(url, keys.client, name);
  return agent;
}

describe("session/attach with the SDK's clients", () => {
  for (const transport of ["http", "ws"] as const) {
    const other = transport === "http" ? "ws" : "http";
    it(`a ${transport} client attaches to a live turn, gets the history and the waiting request, and answers it first; a watching ${other} client keeps working`, async () => {
      const name = `e2e-attach-${transport}-${Date.now()}`;
      const agent = await askingAgent(name);
      const owner = await connectClient({ url, key: keys.client, agent: name });
      const { sessionId } = await owner.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
      const prompt = owner.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit a.ts" }] });
      const ownersAsk = await owner.permissions.waitFor(() => true);

      const watcher = await connectClient({ url, key: keys.client, agent: name, transport: other });
      const watching = await watcher.request<Json>("session/attach", { sessionId, role: "observer", historyPolicy: "none" });
      expect(watching).toMatchObject({ sessionId, role: "observer", historyPolicy: "none" });

      const second = await connectClient({ url, key: keys.client, agent: name, transport });
      const attached = await second.request<Json>("session/attach", {
        sessionId,
        historyPolicy: "full",
        clientId: `sdk-${transport}`,
        clientInfo: { name: "e2e-dashboard", version: "1.0.0" },
      });
      expect(attached).toMatchObject({
        sessionId,
        clientId: `sdk-${transport}`,
        role: "controller",
        // The PR's prompt item for the prompt the replay carried, then the waiting request (decision 0063).
        history: [
          { type: "prompt", content: "edit a.ts", timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
          { type: "permission_request", toolCallId: "call-1", status: "pending" },
        ],
      });
      expect(attached.connectedClients).toHaveLength(2);
      await second.updates.waitFor((u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content.text === "Editing a.ts");
      const ask = await second.permissions.waitFor((p) => p.params.toolCall.toolCallId === "call-1");
      ask.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });

      expect(await prompt).toEqual({ stopReason: "end_turn" });
      await expect(ownersAsk.answered).rejects.toBeDefined(); // withdrawn: the first answer won
      await watcher.notices.waitFor((n) => n.method === "_acp_gateway/permission_resolved" && n.params.outcome?.optionId === "allow-once");
      for (const client of [second, watcher])
        await client.updates.waitFor(
          (u) => u.update.sessionUpdate === "agent_message_chunk" && u.update.content.text === "answer: allow-once",
        );

      // Both were sent prompt_received and turn_complete (decision 0060), which the SDK's typed client
      // refuses as unknown kinds and goes on: each still answers, sends and receives after the turn.
      expect(await second.request<Json>("session/detach", { sessionId })).toEqual({ sessionId, status: "detached" });
      expect(await watcher.request<Json>("session/detach", { sessionId })).toEqual({ sessionId, status: "detached" });
      for (const c of [owner, watcher, second]) c.close();
      agent.close();
    });
  }
});
