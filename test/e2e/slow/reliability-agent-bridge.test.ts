// acp-gateway agent while its socket to the gateway is down, with the SDK 1.9.0 example agent as the
// stdio process and a loopback proxy the test can cut (and keep refusing) between bridge and gateway.
// Slow (the example agent works at its own pace, about 15 s): `npm run test:slow`.
import { afterAll, describe, expect, inject, it } from "vitest";
import { connectClient, waitForAgent } from "../peers";
import { EXAMPLE_AGENT, NODE, killAll, startCli } from "../processes";
import { tcpProxy } from "../tcp-proxy";

const url = inject("gatewayUrl");
const keys = inject("keys");
afterAll(killAll);

type Json = Record<string, any>;

describe("reliability: the agent bridge across a dropped socket", () => {
  it("keeps the agent's output while down and sends it after reconnecting; answers the agent's open requests so it never hangs", async () => {
    const name = `outage-${Date.now()}`;
    const proxy = await tcpProxy(Number(new URL(url).port));
    const bridge = startCli(["agent", "--url", `http://127.0.0.1:${proxy.port}`, "--name", name, "--", NODE, EXAMPLE_AGENT], {
      ACP_GATEWAY_KEY: keys.agent,
    });
    const log = logWatcher(bridge);
    await waitForAgent(url, keys.client, name, 20_000).catch((e: Error) => {
      throw new Error(`${e.message}; bridge log: ${bridge.log.join("")}`);
    });
    const client = await connectClient({ url, key: keys.client, agent: name });
    const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/project", mcpServers: [] });

    // 1. The socket drops mid-turn and stays down: the agent goes on working and then asks for permission.
    const first = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "one" }] });
    first.catch(() => undefined);
    await client.updates.waitFor((u) => u.update.sessionUpdate === "agent_message_chunk", 15_000, "the first chunk");
    proxy.cut({ refuse: true });
    await expect(first).rejects.toMatchObject({ code: -32603 });
    // The request made while down is answered by the bridge (the agent's turn then ends by itself).
    await log.waitFor(/answered the agent's session\/request_permission \(\d+\) cancelled/, 20_000);
    expect(client.permissions.items).toHaveLength(0);
    proxy.resume();
    await log.waitFor(/sent \d+ message\(s\) of the agent kept while disconnected/, 30_000);
    // What the agent did while the socket was down reaches the session, once each.
    await client.updates.waitFor((u) => u.update.toolCallId === "call_1" && u.update.status === "completed", 10_000, "call_1 completed");
    await client.updates.waitFor((u) => u.update.toolCallId === "call_2" && u.update.sessionUpdate === "tool_call", 10_000, "call_2");
    const call1 = client.updates.items.filter((u) => u.update.toolCallId === "call_1");
    expect(call1.map((u) => u.update.sessionUpdate)).toEqual(["tool_call", "tool_call_update"]);

    // 2. The socket drops while a permission request is open at the client: the bridge answers it cancelled.
    await waitForAgent(url, keys.client, name, 20_000);
    const second = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "two" }] });
    second.catch(() => undefined);
    const asked = await client.permissions.waitFor(() => true, 20_000, "the permission request");
    proxy.cut({ refuse: true });
    await expect(second).rejects.toMatchObject({ code: -32603 });
    await expect(asked.answered).rejects.toBeDefined(); // withdrawn from the client
    await log.waitFor(/answered the agent's session\/request_permission \(\d+\) cancelled/, 20_000, 2);
    proxy.resume();

    // 3. The agent is not stuck: after reconnecting it runs a whole turn, permission answered.
    await waitForAgent(url, keys.client, name, 30_000);
    const third = client.request<Json>("session/prompt", { sessionId, prompt: [{ type: "text", text: "three" }] });
    const again = await client.permissions.waitFor((_, i = client.permissions.items.length) => i >= 2, 20_000, "a new permission request");
    again.answer({ outcome: { outcome: "selected", optionId: "allow" } });
    expect(await third).toEqual({ stopReason: "end_turn" });
    client.close();
    bridge.kill();
    proxy.close();
  }, 90_000);
});

/** Waits for lines of the bridge's stderr (the n-th match of a pattern). */
function logWatcher(child: { log: string[]; stderr: NodeJS.ReadableStream }) {
  return {
    waitFor(pattern: RegExp, timeoutMs: number, nth = 1): Promise<void> {
      const count = () => (child.log.join("").match(new RegExp(pattern.source, "g")) ?? []).length;
      if (count() >= nth) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          child.stderr.off("data", check);
          reject(new Error(`the bridge did not log ${pattern} (x${nth}) within ${timeoutMs} ms; log: ${child.log.join("")}`));
        }, timeoutMs);
        const check = () => {
          // the recorder in processes.ts pushes on the same event; read after it
          setImmediate(() => {
            if (count() < nth) return;
            clearTimeout(timer);
            child.stderr.off("data", check);
            resolve();
          });
        };
        child.stderr.on("data", check);
      });
    },
  };
}
