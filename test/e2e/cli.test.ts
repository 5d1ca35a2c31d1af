// The acp-gateway command with real programs: the SDK 1.9.0 example agent (stdio) through
// `acp-gateway agent`, and an SDK client driving `acp-gateway client` as its agent subprocess,
// as an editor such as Zed would.
import { client } from "@agentclientprotocol/sdk";
import { afterAll, describe, expect, inject, it } from "vitest";
import { Recorder, dialInAgent, waitForAgent } from "./peers";
import { tcpProxy } from "./tcp-proxy";
import { EXAMPLE_AGENT, NODE, exitOf, killAll, startCli, stdioStream } from "./processes";

const url = inject("gatewayUrl");
const keys = inject("keys");
afterAll(killAll);

type Json = Record<string, any>;

/** An SDK client over the stdio of `acp-gateway client`; permission requests are answered by `answer`. */
function editorThrough(args: string[], answer: (params: Json) => Json | Promise<Json>, env: Record<string, string> = {}) {
  const bridge = startCli(["client", ...args], { ACP_GATEWAY_KEY: keys.client, ...env });
  const updates = new Recorder<Json>();
  const permissions = new Recorder<{ params: Json; signal: AbortSignal }>();
  const connection = client({ name: "e2e-editor" })
    .onNotification("session/update", ({ params }) => updates.push(params as Json))
    .onRequest("session/request_permission", async ({ params, signal }) => {
      permissions.push({ params: params as Json, signal });
      return (await answer(params as Json)) as never;
    })
    .connect(stdioStream(bridge));
  return { bridge, updates, permissions, ctx: connection.agent, close: () => connection.close() };
}

describe("acp-gateway agent and acp-gateway client", () => {
  it("runs a full turn of the SDK 1.9.0 example agent through both bridges, permission answered", async () => {
    const name = `example-${Date.now()}`;
    const agentBridge = startCli(["agent", "--url", url, "--name", name, "--", NODE, EXAMPLE_AGENT], { ACP_GATEWAY_KEY: keys.agent });
    await waitForAgent(url, keys.client, name, 20_000);
    const editor = editorThrough(["--url", url, "--agent", name], (params) => ({
      outcome: { outcome: "selected", optionId: params.options[0].optionId },
    }));
    await editor.ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = (await editor.ctx.request("session/new", { cwd: "/projects/demo", mcpServers: [] })) as { sessionId: string };
    const result = await editor.ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Hello, agent!" }] });
    expect(result).toEqual({ stopReason: "end_turn" });
    expect(editor.permissions.items).toHaveLength(1);
    const kinds = editor.updates.items.map((u) => u.update.sessionUpdate);
    expect(kinds).toContain("tool_call");
    expect(kinds).toContain("tool_call_update");
    expect(editor.updates.items.some((u) => u.update.sessionUpdate === "tool_call_update" && u.update.status === "completed")).toBe(true);
    editor.close();
    editor.bridge.kill();
    agentBridge.kill();
  }, 60_000);

  it("reconnects after the socket drops mid-turn and resumes the session's stream: no replay, the pending request again, the prompt's own answer, nothing twice", async () => {
    const name = `reconnect-${Date.now()}`;
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        await turn.say("one");
        const answer = await turn.askPermission({ toolCallId: "r1", title: "Write", kind: "edit", locations: [{ path: "/w/x" }] });
        await turn.say(`three: ${answer.outcome.optionId}`);
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const proxy = await tcpProxy(Number(new URL(url).port));
    let answers = 0;
    const editor = editorThrough(["--url", `http://127.0.0.1:${proxy.port}`, "--agent", name], async () => {
      answers += 1;
      if (answers === 1) return new Promise<Json>(() => undefined); // the first copy is never answered: the socket drops
      return { outcome: { outcome: "selected", optionId: "allow-once" } };
    });
    await editor.ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = (await editor.ctx.request("session/new", { cwd: "/w", mcpServers: [] })) as { sessionId: string };
    const prompt = editor.ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
    prompt.catch(() => undefined);
    const first = await editor.permissions.waitFor(() => true);
    await editor.updates.waitFor((u) => u.update.content?.text === "one");

    proxy.cut();
    // The old dialog is withdrawn (its id was the dropped socket's).
    await new Promise<void>((resolve) => (first.signal.aborted ? resolve() : first.signal.addEventListener("abort", () => resolve())));
    // After reconnecting, the stream resumes (decision 0050): the pending request comes again, the
    // rest of the turn follows, and the prompt in flight gets its own answer instead of failing.
    await editor.permissions.waitFor((_, i = editor.permissions.items.length) => i >= 2, 20_000, "the re-sent permission request");
    await editor.updates.waitFor((u) => u.update.content?.text === "three: allow-once", 20_000);
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    const texts = editor.updates.items.map((u) => u.update.content?.text).filter(Boolean);
    expect(texts.filter((t) => t === "one")).toHaveLength(1);
    expect(editor.bridge.log.join("")).toMatch(/connected to .* again/);
    expect(editor.bridge.log.join("")).toMatch(/resumed 1 session stream without a replay/);
    editor.close();
    editor.bridge.kill();
    agent.close();
    proxy.close();
  }, 60_000);

  // An unreachable gateway (exit 1) and a URL that is not one (exit 2) need no gateway: they are checked
  // in test/unit/cli-exit-codes.test.ts, beside the other tests rather than in this serial phase.
  it("exits 2 with a clear message for a refused key", async () => {
    const refused = startCli(["client", "--url", url, "--agent", "x"], { ACP_GATEWAY_KEY: "wrong-key" });
    expect(await exitOf(refused)).toBe(2);
    expect(refused.log.join("")).toMatch(/refused the key \(HTTP 401\)/);
  }, 60_000);

  it("a refused key: the bridge answers the editor's initialize with an error naming it, then exits 2", async () => {
    const editor = editorThrough(["--url", url, "--agent", "x"], () => ({ outcome: { outcome: "cancelled" } }), {
      ACP_GATEWAY_KEY: "wrong-key",
    });
    const answer = editor.ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} }).then(
      () => null,
      (error: unknown) => error as { code: number; message: string },
    );
    await expect(answer).resolves.toMatchObject({ code: -32000, message: expect.stringMatching(/refused the key \(HTTP 401\)/) });
    expect(await exitOf(editor.bridge)).toBe(2);
  }, 60_000);

  it("a mistyped agent name is told apart from an offline agent: no such agent, with the tenant's agent names", async () => {
    const name = `cli-offline-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await dialInAgent({ url, key: keys.agent, name, script: async () => "end_turn" });
    await waitForAgent(url, keys.client, name);
    agent.close();
    const refusal = async (agentName: string) => {
      const editor = editorThrough(["--url", url, "--agent", agentName], () => ({ outcome: { outcome: "cancelled" } }));
      try {
        await editor.ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
        return await editor.ctx.request("session/new", { cwd: "/tmp", mcpServers: [] }).then(
          () => null,
          (error: unknown) => error as { message: string; data?: Json },
        );
      } finally {
        editor.close();
        editor.bridge.kill("SIGTERM");
      }
    };
    const typo = await refusal(`${name}-typo`);
    expect(typo?.message).toMatch(new RegExp(`There is no agent named "${name}-typo" in this tenant \\(its agents: .*"${name}"`));
    expect(typo?.data).toMatchObject({ reason: "agent_unknown" });
    // The registered one, gone: offline, with the gateway's own words (start it).
    await expect.poll(() => refusal(name), { timeout: 15_000 }).toMatchObject({ data: { reason: "agent_not_connected" } });
  }, 90_000);

  it("an agent process that keeps exiting at once is reported as a crash loop and given up on (exit 1), not left 'connected'", async () => {
    const name = `cli-crash-${crypto.randomUUID().slice(0, 8)}`;
    const bridge = startCli(["agent", "--url", url, "--name", name, "--", NODE, "-e", "process.exit(3)"], { ACP_GATEWAY_KEY: keys.agent });
    expect(await exitOf(bridge, 60_000)).toBe(1);
    const log = bridge.log.join("");
    expect(log).toMatch(/the agent process keeps exiting within 10 s of starting \(3 times in a row, last 3\)/);
    expect(log).toMatch(/stopping after 5 quick exits in a row/);
    // The gateway no longer has it connected.
    const connected = async () => {
      const response = await fetch(`${url}/v1/agents?status=1&limit=100`, { headers: { Authorization: `Bearer ${keys.client}` } });
      const page = (await response.json()) as { items: Array<{ name: string; connected: boolean | null }> };
      return page.items.find((a) => a.name === name)?.connected;
    };
    await expect.poll(connected, { timeout: 15_000 }).toBe(false);
  }, 90_000);
});
