// A remote agent hosted with the SDK's AcpServer on loopback: the gateway dials out to its /acp
// WebSocket with the registered headers when a client asks for it.
import { type IncomingMessage, createServer } from "node:http";
import { PROTOCOL_VERSION, agent } from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";
import { WebSocketServer } from "ws";
import { afterAll, describe, expect, inject, it } from "vitest";
import { connectClient } from "./peers";

const url = inject("gatewayUrl");
const keys = inject("keys");

function remoteAgent() {
  let n = 0;
  return agent({ name: "remote-agent" })
    .onRequest("initialize", () => ({
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "remote-agent", version: "1.0.0" },
      authMethods: [],
    }))
    .onRequest("session/new", () => ({ sessionId: `remote-${n++}` }))
    .onRequest("session/prompt", async ({ params, client }) => {
      await client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "from afar" } },
      });
      const answer = (await client.request("session/request_permission", {
        sessionId: params.sessionId,
        toolCall: { toolCallId: "far-1", title: "Fetch", kind: "fetch", rawInput: { url: "https://example.com" } },
        options: [
          { optionId: "yes", name: "Allow", kind: "allow_once" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      })) as { outcome: { optionId?: string } };
      await client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `answer ${answer.outcome.optionId}` } },
      });
      return { stopReason: "end_turn" };
    });
}

async function hostAgent() {
  const seen: IncomingMessage[] = [];
  const server = createServer();
  const acp = new AcpServer({ createAgent: remoteAgent });
  const upgrade = createNodeWebSocketUpgradeHandler(acp, new WebSocketServer({ noServer: true }));
  server.on("upgrade", (req, socket, head) => {
    seen.push(req);
    upgrade(req, socket, head);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    port,
    seen,
    close: async () => {
      await acp.close();
      server.close();
    },
  };
}

const api = (path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${keys.admin}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

describe("dial-out agents", () => {
  it("runs a turn with an AcpServer-hosted agent that the gateway dials, sending the registered headers", async () => {
    const host = await hostAgent();
    closers.push(host.close);
    const name = `remote-${Date.now()}`;
    const registered = await api("/v1/agents", {
      name,
      mode: "dial_out",
      url: `ws://127.0.0.1:${host.port}/acp`,
      headers: { "X-Agent-Token": "t0ken" },
    });
    expect(registered.status).toBe(201);

    const client = await connectClient({ url, key: keys.client, agent: name });
    const init = (await client.request("initialize", { protocolVersion: 1 })) as Record<string, any>;
    expect(init.agentInfo).toEqual({ name: "remote-agent", version: "1.0.0" });
    expect(host.seen[0]?.headers["x-agent-token"]).toBe("t0ken");
    const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
    const ask = await client.permissions.waitFor(() => true);
    expect(ask.params.toolCall.toolCallId).toBe("far-1");
    ask.answer({ outcome: { outcome: "selected", optionId: "yes" } });
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    await client.updates.waitFor((u) => u.update.content?.text === "answer yes");
    client.close();
  });

  it("tells the client clearly when the remote agent is unreachable", async () => {
    const name = `unreachable-${Date.now()}`;
    expect((await api("/v1/agents", { name, mode: "dial_out", url: "ws://127.0.0.1:1/acp" })).status).toBe(201);
    const client = await connectClient({ url, key: keys.client, agent: name });
    const init = (await client.request("initialize", { protocolVersion: 1 })) as Record<string, any>;
    expect(init._meta.acpGateway.agentConnected).toBe(false);
    expect(init._meta.acpGateway.agentUnreachable).toMatch(/dialling ws:\/\/127\.0\.0\.1:1\/acp failed/);
    await expect(client.request("session/new", { cwd: "/w", mcpServers: [] })).rejects.toMatchObject({
      message: expect.stringMatching(/unreachable/),
    });
    client.close();
  });
});
