// W3C trace context end to end (issue 13): a client's `_meta.traceparent` reaches the agent exactly
// as sent, and the gateway's log line for that request carries its trace id — against the gateway
// as `npm start` runs it, with the SDK's own client (WebSocket and Streamable HTTP) and agent.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { GATEWAY_LOG } from "./global-setup";
import { connectClient, dialInAgent, waitForAgent } from "./peers";

const url = inject("gatewayUrl");
const keys = inject("keys");
const logFile = join(inject("stateDir"), GATEWAY_LOG);

/** The gateway's structured log line for a traced request, once wrangler has printed it (bounded wait). */
async function loggedLine(traceId: string, method: string, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lines = readFileSync(logFile, "utf8").split("\n");
    for (const line of lines) {
      const start = line.indexOf("{");
      if (start < 0 || !line.includes(traceId)) continue;
      const entry = JSON.parse(line.slice(start)) as Record<string, unknown>;
      if (entry.method === method) return entry;
    }
    if (Date.now() > deadline) throw new Error(`no log line with trace id ${traceId} for ${method} in ${logFile}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function traceparent(): { header: string; traceId: string } {
  const hex = (bytes: number) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
  const traceId = hex(16);
  return { header: `00-${traceId}-${hex(8)}-01`, traceId };
}

describe("trace context end to end", () => {
  for (const transport of ["ws", "http"] as const) {
    it(`over ${transport}: the agent receives _meta.traceparent unchanged and the gateway logs the request with its trace id`, async () => {
      const name = `e2e-trace-${transport}-${Date.now()}`;
      const agent = await dialInAgent({ url, key: keys.agent, name, script: async () => "end_turn" });
      await waitForAgent(url, keys.client, name);
      const client = await connectClient({ url, key: keys.client, agent: name, transport });
      const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
      const trace = traceparent();
      const meta = { traceparent: trace.header, tracestate: "vendor=opaque" };
      await client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "traced" }], _meta: meta });
      const prompt = await agent.prompts.waitFor((p) => p.sessionId === sessionId);
      expect(prompt._meta).toEqual(meta);
      const line = await loggedLine(trace.traceId, "session/prompt");
      expect(line).toMatchObject({
        event: "acp.client_request",
        method: "session/prompt",
        traceId: trace.traceId,
        tenantId: expect.any(String),
      });
      client.close();
      agent.close();
    });
  }
});
