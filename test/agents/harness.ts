// One real agent behind the gateway, as a team runs it: its scripted model on loopback, a throwaway
// home and project, and the agent started by `acp-gateway agent -- <its command>` against the gateway
// the e2e global setup started. Clients are the SDK's WebSocket client (test/e2e/peers.ts).

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestClient, connectClient, waitForAgent } from "../e2e/peers.ts";
import { ROOT } from "../../scripts/local-gateway.ts";
import type { AgentProfile } from "./agents.ts";
import { type ModelServer, startModelServer } from "./models/server.ts";

type Json = Record<string, any>;

export interface RunningAgent {
  name: string;
  project: string;
  home: string;
  model: ModelServer;
  /** The bridge's stderr (the agent's own stderr among it), for failure messages. */
  log: string[];
  client(): Promise<TestClient>;
  newSession(client: TestClient): Promise<string>;
  /** What the agent's own permission files hold now (absent: null). */
  remembered(): Record<string, string | null>;
  stop(): Promise<void>;
}

export async function startAgent(
  profile: AgentProfile,
  gateway: { url: string; keys: { client: string; agent: string } },
): Promise<RunningAgent> {
  const home = mkdtempSync(join(tmpdir(), `acp-agents-${profile.id}-home-`));
  const project = mkdtempSync(join(tmpdir(), `acp-agents-${profile.id}-project-`));
  const model = await startModelServer(profile.model(profile.tools, project));
  const { argv, env } = profile.prepare(home, model.url);
  const name = `real-${profile.id}-${Date.now()}`;
  // Started in the project, as a person starts an agent there: an agent that reads its process's
  // directory (Gemini CLI names it in every shell request) sees the project, never this checkout.
  const bridge = spawn(
    process.execPath,
    [join(ROOT, "cli", "acp-gateway.ts"), "agent", "--url", gateway.url, "--name", name, "--", ...argv],
    {
      cwd: project,
      env: { ...process.env, ...env, ACP_GATEWAY_KEY: gateway.keys.agent },
      stdio: ["ignore", "ignore", "pipe"],
      // Its own process group: the agent and what the agent starts (qwen a second node, Claude Code
      // its binary) end with it, and stop() can wait until all of them have.
      detached: true,
    },
  );
  const group = (signal: NodeJS.Signals | 0) => {
    try {
      process.kill(-(bridge.pid ?? 0), signal);
      return true;
    } catch {
      return false; // ESRCH: no process of the group is left
    }
  };
  // Never outlive the test process (a failed run must not leave agents running).
  const orphaned = () => group("SIGKILL");
  process.once("exit", orphaned);
  bridge.once("exit", () => process.off("exit", orphaned));
  const log: string[] = [];
  bridge.stderr.on("data", (d: Buffer) => log.push(d.toString()));
  try {
    await waitForAgent(gateway.url, gateway.keys.client, name, 60_000);
  } catch (error) {
    group("SIGKILL");
    throw new Error(`${profile.pkg} did not connect: ${(error as Error).message}\n--- its output ---\n${log.join("").slice(-4000)}`, {
      cause: error,
    });
  }
  const clients: TestClient[] = [];
  return {
    name,
    project,
    home,
    model,
    log,
    async client() {
      const c = await connectClient({ url: gateway.url, key: gateway.keys.client, agent: name });
      clients.push(c);
      return c;
    },
    async newSession(c) {
      const { sessionId } = await c.request<{ sessionId: string }>("session/new", { cwd: project, mcpServers: [] });
      return sessionId;
    },
    remembered() {
      return Object.fromEntries(profile.remembered(home, project).map((f) => [f, existsSync(f) ? readFileSync(f, "utf8") : null]));
    },
    async stop() {
      for (const c of clients) c.close();
      await endGroup(group);
      await model.close();
      rmSync(home, { recursive: true, force: true });
      rmSync(project, { recursive: true, force: true });
    },
  };
}

/**
 * Ends the agent's process group: SIGTERM, then SIGKILL for whatever is left after 10 s. Resolves
 * when no process of the group is left (or 15 s have passed), so nothing writes into the home it is
 * about to lose.
 */
async function endGroup(group: (signal: NodeJS.Signals | 0) => boolean): Promise<void> {
  group("SIGTERM");
  const start = Date.now();
  // Bounded: a process left as a zombie (no init reaping in some containers) still answers signal 0.
  while (group(0) && Date.now() - start < 15_000) {
    if (Date.now() - start > 10_000) group("SIGKILL");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The option of a kind among those a client was offered (the agent's ids differ: match on kinds). */
export function optionOf(params: Json, kind: string): string {
  const option = (params.options as Json[]).find((o) => o.kind === kind);
  if (!option) throw new Error(`no ${kind} option among ${JSON.stringify(params.options)}`);
  return option.optionId as string;
}

/**
 * The next permission request this client is sent during `turn`; a turn that ends first fails the
 * test at once with its stop reason and what the agent said (not after a timeout).
 */
export async function askedDuring(
  c: TestClient,
  turn: Promise<{ stopReason: string }>,
  match: (p: PermissionCopy) => boolean = () => true,
) {
  const ended = turn.then((r) => {
    const said = c.updates.items
      .map((u) => u.update as Json)
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content?.text);
    throw new Error(`the turn ended ${r.stopReason} before the person was asked; the agent said ${JSON.stringify(said)}`);
  });
  ended.catch(() => undefined);
  return Promise.race([c.permissions.waitFor(match, 120_000, "a permission request"), ended]);
}

/**
 * The turn's result, when no new permission request reaches this client during it. One that does
 * fails the test at once: the turn is cancelled (so the agent is free for the next test) and the
 * request is named.
 */
export async function unasked(c: TestClient, sessionId: string, turn: Promise<{ stopReason: string }>) {
  const seen = new Set(c.permissions.items);
  const asked = c.permissions
    .waitFor((p) => !seen.has(p), 600_000, "an unexpected request")
    .then(async (p) => {
      // Best effort: the request is the failure to report, whatever became of the connection.
      await c.notify("session/cancel", { sessionId }).catch(() => undefined);
      throw new Error(`the person was asked: ${JSON.stringify(p.params.toolCall).slice(0, 1500)}`);
    });
  asked.catch(() => undefined);
  return Promise.race([turn, asked]);
}

type PermissionCopy = TestClient["permissions"]["items"][number];

export const prompt = (c: TestClient, sessionId: string, text: string) =>
  c.request<{ stopReason: string }>("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
