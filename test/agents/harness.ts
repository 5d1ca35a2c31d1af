// One real agent behind the gateway, as a team runs it: its scripted model on loopback, a throwaway
// home and project, and the agent started by `acp-gateway agent -- <its command>` against the gateway
// the e2e global setup started. Clients are the SDK's WebSocket client (test/e2e/peers.ts).

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications.ts";
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
  /** A client with the tenant's client key, or with `key` (a person's own). */
  client(key?: string): Promise<TestClient>;
  newSession(client: TestClient): Promise<string>;
  /** What the agent's own permission files hold now (absent: null). */
  remembered(): Record<string, string | null>;
  /** For a failed check: the model requests in order and the end of the bridge's stderr. */
  report(): string;
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
    async client(key = gateway.keys.client) {
      const c = await connectClient({ url: gateway.url, key, agent: name });
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
    report() {
      const requests = model.requests.map((r) => `  ${new Date(r.at).toISOString()} ${r.method} ${r.path} ${requestSummary(r.body)}`);
      const seen = clients.flatMap((c, i) => [
        `--- client ${i + 1}: ${c.permissions.items.length} permission requests; its other notices ${JSON.stringify(c.notices.items).slice(-1500)}`,
        ...c.permissions.items.map((p) => `  asked (withdrawn: ${p.signal.aborted}) ${JSON.stringify(p.params.toolCall).slice(0, 600)}`),
        ...c.updates.items.slice(-20).map((u) => `  update ${JSON.stringify(u.update).slice(0, 400)}`),
      ]);
      return [
        `${profile.pkg}: ${model.requests.length} model requests`,
        ...requests,
        ...seen,
        "--- its stderr (end) ---",
        log.join("").slice(-6000),
      ].join("\n");
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

/** One model request in a line: how many tools it offered and the end of its last message, whatever the wire format. */
function requestSummary(body: unknown): string {
  if (!body || typeof body !== "object") return "";
  const b = body as Json;
  const messages = (b.messages ?? b.input ?? b.contents) as unknown;
  const last = Array.isArray(messages) ? JSON.stringify(messages.at(-1)) : "";
  return `tools ${Array.isArray(b.tools) ? b.tools.length : 0}, stream ${b.stream === true}, last ${last.slice(-300)}`;
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
function optionOf(params: Json, kind: string): string {
  const option = (params.options as Json[]).find((o) => o.kind === kind);
  if (!option) throw new Error(`no ${kind} option among ${JSON.stringify(params.options)}`);
  return option.optionId as string;
}

/** An answer choosing the first offered option of a kind (or the option with this id: `{ id }`). */
export const choose =
  (option: string | { id: string }) =>
  (params: Json): Json => ({
    outcome: { outcome: "selected", optionId: typeof option === "string" ? optionOf(params, option) : option.id },
  });

/** The toolCall's id of a copy, and the frozen operation's digest the gateway sent with it. */
const toolCallIdOf = (p: PermissionCopy): unknown => p.params.toolCall?.toolCallId;
export const operationOf = (p: PermissionCopy): unknown => p.params._meta?.acpGateway?.operation?.hash;

/**
 * Answers a permission request as a person does, and resolves with the copy whose answer the gateway
 * took. When the agent changes a request's operation after it was asked, the gateway withdraws it,
 * refuses an answer to it, and asks again as a new request that names the old one
 * (`_meta.acpGateway.operation.replaces`; decision 0040). opencode sends its tool call's whole rawInput
 * (`tool_call_update`) and its request (with only `{command}`) in either order, so in some runs the copy
 * a person is answering is replaced: they answer the new request, and so does this — that case only,
 * for the same tool call, choosing again from the new copy's options. The answer was taken once the
 * gateway says the request was resolved (`_acp_gateway/permission_resolved`).
 */
export async function answer(c: TestClient, copy: PermissionCopy, chosen: (params: Json) => Json): Promise<PermissionCopy> {
  const answered = new Set<PermissionCopy>();
  for (let current = copy; ;) {
    current.answer(chosen(current.params));
    answered.add(current);
    const taken = c.notices.waitFor(
      (n) => n.method === GATEWAY_NOTIFICATIONS.permissionResolved && n.params.toolCallId === toolCallIdOf(copy),
      120_000,
      "the gateway to say the request was resolved",
    );
    const replaced = c.permissions.waitFor(
      (p) => !answered.has(p) && toolCallIdOf(p) === toolCallIdOf(copy) && p.params._meta?.acpGateway?.operation?.replaces !== undefined,
      120_000,
      "a request asked again in its place",
    );
    // The one that does not come would fail after its bound: nobody waits on it.
    taken.catch(() => undefined);
    replaced.catch(() => undefined);
    const next = await Promise.race([taken.then(() => null), replaced]);
    if (next === null) return current;
    current = next;
  }
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
