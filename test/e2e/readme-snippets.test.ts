// The README's snippets run as written: each code block a user would copy is taken from README.md's
// own text, pointed at the test gateway (only the host, the keys, the agent's name and the README's
// placeholders — ADMIN_KEY, KEY_ID, ID, path/to — change), and run the way a user runs it: the
// TypeScript and JavaScript with Node, the shell blocks with bash and curl, the Zed entry as the
// command Zed starts. Blocks that need a Cloudflare account (Deploy) are not run here.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { client } from "@agentclientprotocol/sdk";
import { afterAll, describe, expect, inject, it } from "vitest";
import { WebSocket } from "ws";
import { ROOT } from "../../scripts/local-gateway";
import { blocksAfter } from "./readme";
import { dialInAgent, waitForAgent } from "./peers";
import { EXAMPLE_AGENT, NODE, killAll, stdioStream } from "./processes";
import { operatorToken } from "./tenants";

const url = inject("gatewayUrl");
const keys = inject("keys");
afterAll(killAll);

type Json = Record<string, any>;
const README_HOST = "http://127.0.0.1:8787";

/** A shell block's commands: comments dropped, continued lines joined. */
function commandsOf(block: string): string[] {
  return block
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** Runs one README command with bash; curl's status code is appended so the test can read it. */
function run(command: string): { status: number; body: Json | null; text: string } {
  const withStatus = command.startsWith("curl ") ? `${command} -s -w '\\n%{http_code}'` : command;
  const out = spawnSync("bash", ["-c", withStatus], { encoding: "utf8", timeout: 30_000 });
  if (out.status !== 0) throw new Error(`${command}\nexited ${out.status}: ${out.stderr}`);
  const lines = out.stdout.trimEnd().split("\n");
  const status = Number(lines.pop());
  const text = lines.join("\n");
  const body = ((): Json | null => {
    try {
      return text ? (JSON.parse(text) as Json) : null;
    } catch {
      return null;
    }
  })();
  return { status, body, text };
}

async function status(path: string, key: string): Promise<number> {
  return (await fetch(`${url}${path}`, { headers: { Authorization: `Bearer ${key}` } })).status;
}

/** Writes a snippet inside the checkout (so its imports resolve from node_modules; test-results/ is untracked). */
function snippetFile(name: string, code: string): string {
  const dir = join(ROOT, "test-results");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, name);
  writeFileSync(file, code);
  return file;
}

describe("the README's snippets", () => {
  it("the WebSocket and Streamable HTTP client snippet initializes over both transports, as written", async () => {
    const name = `readme-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await dialInAgent({ url, key: keys.agent, name, script: async () => "end_turn" });
    try {
      await waitForAgent(url, keys.client, name);
      const [block] = blocksAfter("### Connect over WebSocket or Streamable HTTP", "ts");
      const code = block!
        .replaceAll("wss://gateway.example.com", url.replace(/^http/, "ws"))
        .replaceAll("https://gateway.example.com", url)
        .replaceAll("agent=demo", `agent=${name}`);
      expect(code, "precondition: the snippet names both transports").toMatch(/createWebSocketStream[\s\S]*createHttpStream/);
      const file = snippetFile(`readme-snippet-${name}.mts`, code);
      const out = spawnSync(NODE, [file], { env: { ...process.env, ACP_GATEWAY_KEY: keys.client }, encoding: "utf8", timeout: 60_000 });
      expect(out.stderr).not.toMatch(/Error/);
      expect(out.stdout.match(/initialized, protocol version 1/g)).toHaveLength(2);
      expect(out.status).toBe(0);
    } finally {
      agent.close();
    }
  });

  it("the browser's ticket snippet opens /acp with the acp.v1 subprotocol (Node's own fetch and WebSocket, as a page has them)", async () => {
    const name = `readme-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await dialInAgent({ url, key: keys.agent, name, script: async () => "end_turn" });
    try {
      await waitForAgent(url, keys.client, name);
      const [block] = blocksAfter("## Endpoints", "js");
      expect(block, "precondition: the snippet is the ticket one").toContain("/v1/tickets");
      // A page's relative fetch is resolved against its origin; here the origin is the test gateway.
      const code = block!
        .replaceAll('fetch("/v1/tickets"', `fetch(${JSON.stringify(`${url}/v1/tickets`)}`)
        .replaceAll("wss://gateway.example.com", url.replace(/^http/, "ws"))
        .replace("agent=demo", `agent=${name}`)
        .replace(/^new WebSocket/m, "const socket = new WebSocket");
      const page = `const key = process.env.ACP_GATEWAY_KEY;\n${code}\nsocket.onopen = () => { console.log("open", socket.protocol); socket.close(); };\nsocket.onerror = (e) => { console.error("Error", e.message ?? e); process.exit(1); };\n`;
      const file = snippetFile(`readme-ticket-${name}.mjs`, page);
      const out = spawnSync(NODE, [file], { env: { ...process.env, ACP_GATEWAY_KEY: keys.client }, encoding: "utf8", timeout: 30_000 });
      expect(out.stderr).toBe("");
      expect(out.stdout.trim()).toBe("open acp.v1");
    } finally {
      agent.close();
    }
  });

  it("a page on another origin: /v1/tickets grants it no CORS, as the README says; a ticket its backend asked for opens /acp from that origin", async () => {
    const prose = readFileSync(join(ROOT, "README.md"), "utf8").replace(/\s+/g, " ");
    expect(prose).toContain("The snippet runs on the gateway's own origin");
    const preflight = await fetch(`${url}/v1/tickets`, {
      method: "OPTIONS",
      headers: {
        Origin: "https://page.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization",
      },
    });
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
    // The backend's POST (no browser, no CORS), then the page's WebSocket with the ticket only.
    const name = `readme-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await dialInAgent({ url, key: keys.agent, name, script: async () => "end_turn" });
    try {
      await waitForAgent(url, keys.client, name);
      const issued = await fetch(`${url}/v1/tickets`, { method: "POST", headers: { Authorization: `Bearer ${keys.client}` } });
      expect(issued.status).toBe(201);
      const { subprotocol } = (await issued.json()) as { subprotocol: string };
      const socket = new WebSocket(`${url.replace(/^http/, "ws")}/acp?agent=${name}`, ["acp.v1", subprotocol], {
        origin: "https://page.example",
      });
      const opened = await new Promise<string>((resolve, reject) => {
        socket.once("open", () => resolve(socket.protocol));
        socket.once("error", reject);
      });
      socket.close();
      expect(opened).toBe("acp.v1");
    } finally {
      agent.close();
    }
  });

  it("Tenants and keys: the tenant, a teammate's client key, an agent key for one name, and the revoked key refused", async () => {
    const [block] = blocksAfter("## Tenants and keys", "sh");
    const [createTenant, clientKey, agentKey, revoke, ...more] = commandsOf(block!).map((c) => c.replaceAll(README_HOST, url));
    expect(more, "precondition: the block is the four commands this test runs").toEqual([]);
    const tenant = run(createTenant!.replace("dev-operator-token", operatorToken()));
    expect(tenant.status, tenant.text).toBe(201);
    const admin = tenant.body?.adminKey?.key as string;
    expect(admin).toMatch(/^acp_admin_/);
    const alice = run(clientKey!.replace("ADMIN_KEY", admin));
    expect(alice.status, alice.text).toBe(201);
    expect(alice.body).toMatchObject({ kind: "client", label: "alice" });
    const builder = run(agentKey!.replace("ADMIN_KEY", admin));
    expect(builder.status, builder.text).toBe(201);
    expect(builder.body).toMatchObject({ kind: "agent", agent: "builder" });
    expect(await status("/v1/sessions", alice.body!.key as string), "precondition: the new key works").toBe(200);
    const revoked = run(revoke!.replace("ADMIN_KEY", admin).replace("KEY_ID", alice.body!.id as string));
    expect(revoked.status, revoked.text).toBeLessThan(300);
    expect(await status("/v1/sessions", alice.body!.key as string)).toBe(401);
  });

  it("Roles: groups mapped to roles and the four-eyes operations set as written (decision 0028)", async () => {
    const [block] = blocksAfter("## Roles, and approvals that need a second person", "sh");
    const [roles, fourEyes, ...more] = commandsOf(block!).map((c) => c.replaceAll(README_HOST, url));
    expect(more, "precondition: the block is the two commands this test runs").toEqual([]);
    const slug = `readme-roles-${crypto.randomUUID().slice(0, 8)}`;
    const created = await fetch(`${url}/v1/tenants`, {
      method: "POST",
      headers: { Authorization: `Bearer ${operatorToken()}`, "Content-Type": "application/json" },
      body: JSON.stringify({ slug, name: "Readme roles" }),
    });
    expect(created.status).toBe(201);
    const admin = ((await created.json()) as Json).adminKey.key as string;
    const mapped = run(roles!.replace("ADMIN_KEY", admin));
    expect(mapped.status, mapped.text).toBe(200);
    expect(mapped.body?.settings.roles).toEqual({ groups: { eng: "member", leads: "approver" }, defaultPersonRole: "observer" });
    const held = run(fourEyes!.replace("ADMIN_KEY", admin));
    expect(held.status, held.text).toBe(200);
    expect(held.body?.settings).toMatchObject({
      roles: mapped.body?.settings.roles,
      fourEyes: { operations: [{ program: "rm" }, { prefix: ["git", "push"], require: "two_approvals" }, { path: "/srv/prod/**" }] },
    });
  });

  it("Notifications: a webhook target registered, listed without its secret, and deleted", () => {
    const [block] = blocksAfter("## Notifications: approvals that reach the person", "sh");
    const [create, list, remove, ...more] = commandsOf(block!).map((c) =>
      c.replaceAll(README_HOST, url).replaceAll("ADMIN_KEY", keys.admin),
    );
    expect(more, "precondition: three commands").toEqual([]);
    const created = run(create!);
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ name: "ops pager", url: "https://hooks.example.com/acp" });
    expect(typeof created.body?.secret, "the secret is shown once, at creation").toBe("string");
    const listed = run(list!);
    expect(listed.status).toBe(200);
    const mine = (listed.body?.items as Json[]).find((t) => t.id === created.body!.id);
    expect(mine).toBeDefined();
    expect(mine).not.toHaveProperty("secret");
    const deleted = run(remove!.replace("/ID ", `/${created.body!.id as string} `));
    expect(deleted.status, deleted.text).toBeLessThan(300);
    expect((run(list!).body?.items as Json[]).some((t) => t.id === created.body!.id)).toBe(false);
  });

  it("Register a remote agent: the dial-out agent is created, and its header values are never returned", () => {
    const [block] = blocksAfter("## Register a remote agent", "sh");
    const [register, ...more] = commandsOf(block!).map((c) => c.replaceAll(README_HOST, url).replaceAll("dev-admin-key", keys.admin));
    expect(more).toEqual([]);
    const created = run(register!);
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ agent: { name: "remote", mode: "dial_out" } });
    expect(created.text).not.toContain("agent-secret");
  });

  it("Connect a stdio agent: the command dials in the SDK's example agent under its name", async () => {
    const [block] = blocksAfter("## Connect a stdio agent", "sh");
    const [command, ...more] = commandsOf(block!);
    expect(more).toEqual([]);
    const name = `readme-${crypto.randomUUID().slice(0, 8)}`;
    const line = command!
      .replaceAll(README_HOST, url)
      .replace("dev-agent-key", keys.agent)
      .replace("--name my-agent", `--name ${name}`)
      .replace("path/to/agent.js", EXAMPLE_AGENT);
    // Its own process group, so the bridge and the agent it starts are stopped together.
    const bridge = spawn("bash", ["-c", line], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], detached: true });
    const stderr: string[] = [];
    bridge.stderr.on("data", (d: Buffer) => stderr.push(d.toString()));
    try {
      await waitForAgent(url, keys.client, name, 20_000).catch((e: Error) => {
        throw new Error(`${e.message}; the command printed: ${stderr.join("")}`);
      });
    } finally {
      process.kill(-bridge.pid!, "SIGTERM");
    }
  });

  it("Connect Zed: the settings entry's command is an ACP agent over stdio that reaches the gateway", async () => {
    const [block] = blocksAfter("## Connect Zed", "json");
    const name = `readme-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await dialInAgent({ url, key: keys.agent, name, script: async () => "end_turn" });
    try {
      await waitForAgent(url, keys.client, name);
      const settings = JSON.parse(`{${block!}}`) as {
        agent_servers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
      };
      const entry = settings.agent_servers["Gateway demo"]!;
      const path = (p: string) => p.replace("/path/to/acp-gateway", ROOT);
      const args = entry.args.map((a) => path(a).replace(README_HOST, url)).map((a) => (a === "demo" ? name : a));
      const env = { ...entry.env, ACP_GATEWAY_KEY: entry.env.ACP_GATEWAY_KEY === "dev-client-key" ? keys.client : "" };
      const zed = spawn(path(entry.command), args, { env: { ...process.env, ...env } });
      try {
        const connection = client({ name: "zed-as-configured" }).connect(stdioStream(zed));
        const answer = (await connection.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} })) as Json;
        expect(answer.protocolVersion).toBe(1);
        const { sessionId } = (await connection.agent.request("session/new", { cwd: "/projects/demo", mcpServers: [] })) as Json;
        expect(typeof sessionId).toBe("string");
        connection.close();
      } finally {
        zed.kill();
      }
    } finally {
      agent.close();
    }
  });
});
