// npm run soak: the gateway started as `npm start` starts it (wrangler dev on loopback), with many
// sessions, agents and clients running turns for SOAK_SECONDS (default 120) while clients and agents
// drop and reconnect at random. At the end every count must balance: prompts sent = answered once,
// permission requests sent = answered once, updates sent = logged (a fresh client's replay) =
// delivered to every client attached at the time (no gap, no duplicate), zero stuck turns.
// Prints the counts, the connections and messages per second held, and workerd's RSS before and after;
// writes them to .ci/soak.json; exits 1 if anything is unbalanced.
//
// A history long enough to be folded by log compaction replays folded frames that say how many
// updates they stand for; the logged count adds those. Peers are plain JSON-RPC over `ws` (like the benchmark's) so every frame can be counted; the
// objects are not restarted at random here: wrangler dev offers no way to evict one object from
// outside, and killing workerd restarts everything at once. The workerd fault tests restart objects.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { CLOSE } from "../core/close-codes.ts";
import { ROOT, startLocalGateway } from "../scripts/local-gateway.ts";

type Json = Record<string, any>;

const SECONDS = Number(process.env.SOAK_SECONDS ?? 120);
const SESSIONS = Number(process.env.SOAK_SESSIONS ?? 6);
const MAX_CLIENTS = 3;
const TURN_TIMEOUT_MS = 30_000;

const stats = { framesIn: 0, framesOut: 0, opened: 0, open: 0, maxOpen: 0 };
const counts = {
  promptsSent: 0,
  promptsAnsweredOnce: 0,
  promptAnswersMissing: 0,
  promptAnswersDuplicated: 0,
  permissionsSent: 0,
  permissionsAnsweredOnce: 0,
  permissionAnswersMissing: 0,
  permissionAnswersDuplicated: 0,
  updatesSent: 0,
  updatesLogged: 0,
  clientStreamsChecked: 0,
  clientStreamsWithGapOrDuplicate: 0,
  clientDrops: 0,
  agentDrops: 0,
  stuckTurns: 0,
};

const rand = (n: number) => Math.floor(Math.random() * n);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One JSON-RPC connection: handlers see every frame; `wait` resolves on the first match. */
class Conn {
  private readonly waiters: { match: (m: Json) => boolean; resolve: (m: Json) => void }[] = [];
  onMessage: (m: Json) => void = () => undefined;
  readonly ws: WebSocket;
  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data) => {
      stats.framesIn++;
      const m = JSON.parse(String(data)) as Json;
      const i = this.waiters.findIndex((w) => w.match(m));
      if (i >= 0) this.waiters.splice(i, 1)[0]?.resolve(m);
      this.onMessage(m);
    });
    ws.on("close", () => stats.open--);
  }
  static open(url: string, key: string): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${key}` } });
      ws.once("open", () => {
        stats.opened++;
        stats.open++;
        stats.maxOpen = Math.max(stats.maxOpen, stats.open);
        resolve(new Conn(ws));
      });
      ws.once("error", reject);
    });
  }
  send(m: Json): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    stats.framesOut++;
    this.ws.send(JSON.stringify(m));
  }
  wait(match: (m: Json) => boolean, timeoutMs = TURN_TIMEOUT_MS): Promise<Json | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(undefined), timeoutMs);
      this.waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }
  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.ws.readyState === WebSocket.CLOSED) return resolve();
      this.ws.once("close", () => resolve());
      this.ws.close(CLOSE.normal, "soak");
    });
  }
}

/** A scripted agent for one session: a turn streams updates, sometimes asks permission, then ends. */
class SoakAgent {
  conn?: Conn;
  sessionId = "";
  updates = 0;
  readonly permAnswers = new Map<string, number>();
  readonly base: string;
  readonly key: string;
  readonly name: string;
  constructor(base: string, key: string, name: string) {
    this.base = base;
    this.key = key;
    this.name = name;
  }

  async dial(): Promise<void> {
    const conn = await Conn.open(`${this.base}/agents/${this.name}/connect`, this.key);
    conn.onMessage = (m) => {
      if (m.method === "initialize") conn.send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1, agentCapabilities: {} } });
      else if (m.method === "session/new") conn.send({ jsonrpc: "2.0", id: m.id, result: { sessionId: `${this.name}-session` } });
      else if (m.method === "session/prompt") void this.turn(conn, m.id);
      else if (!("method" in m) && typeof m.id === "string" && this.permAnswers.has(m.id)) {
        this.permAnswers.set(m.id, (this.permAnswers.get(m.id) ?? 0) + 1);
      }
    };
    this.conn = conn;
  }

  private async turn(conn: Conn, promptId: unknown): Promise<void> {
    const chunks = 1 + rand(20);
    for (let i = 0; i < chunks; i++) {
      const n = ++this.updates;
      counts.updatesSent++;
      const update =
        i % 3 === 0
          ? { sessionUpdate: "tool_call_update", toolCallId: `t${rand(4)}`, status: "in_progress", rawOutput: n }
          : { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${n}` } };
      conn.send({ jsonrpc: "2.0", method: "session/update", params: { sessionId: this.sessionId, update, _meta: { soak: n } } });
      if (i === 2 && Math.random() < 0.4) {
        const id = `perm-${this.name}-${counts.permissionsSent++}`;
        this.permAnswers.set(id, 0);
        const options = [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ];
        const toolCall = { toolCallId: `p${n}`, title: "Run", kind: "execute", rawInput: { command: `echo ${n}` } };
        conn.send({ jsonrpc: "2.0", id, method: "session/request_permission", params: { sessionId: this.sessionId, toolCall, options } });
        await conn.wait((m) => m.id === id && !("method" in m));
      }
      if (rand(4) === 0) await pause(rand(20));
    }
    conn.send({ jsonrpc: "2.0", id: promptId, result: { stopReason: "end_turn" } });
  }
}

/** A client: records the agent's updates it receives, answers every permission copy after a moment. */
class SoakClient {
  readonly stream: number[] = [];
  readonly answers = new Map<string, number>();
  /** Updates a compacted history frame stands for (log compaction folds a long session's log). */
  compacted = 0;
  private nextId = 0;
  readonly conn: Conn;
  private constructor(conn: Conn) {
    this.conn = conn;
    conn.onMessage = (m) => {
      const n = m.params?._meta?.soak;
      const compacted = m.params?._meta?.acpGateway?.compacted;
      if (m.method === "session/update" && typeof n === "number") this.stream.push(n);
      else if (m.method === "session/update" && compacted) this.compacted += (compacted.chunks ?? 0) + (compacted.toolCallUpdates ?? 0);
      else if (m.method === "session/request_permission") {
        const optionId = Math.random() < 0.8 ? "allow" : "reject";
        setTimeout(() => conn.send({ jsonrpc: "2.0", id: m.id, result: { outcome: { outcome: "selected", optionId } } }), rand(30));
      } else if (!("method" in m) && typeof m.id === "string" && this.answers.has(m.id)) {
        this.answers.set(m.id, (this.answers.get(m.id) ?? 0) + 1);
      }
    };
  }

  static async join(base: string, key: string, agent: SoakAgent): Promise<SoakClient> {
    const conn = await Conn.open(`${base}/acp?agent=${agent.name}`, key);
    conn.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
    await conn.wait((m) => m.id === "init");
    const client = new SoakClient(conn);
    if (agent.sessionId === "") {
      conn.send({ jsonrpc: "2.0", id: "new", method: "session/new", params: { cwd: "/soak", mcpServers: [] } });
      agent.sessionId = String((await conn.wait((m) => m.id === "new"))?.result?.sessionId);
    } else {
      conn.send({
        jsonrpc: "2.0",
        id: "load",
        method: "session/load",
        params: { sessionId: agent.sessionId, cwd: "/soak", mcpServers: [] },
      });
      const loaded = await conn.wait((m) => m.id === "load");
      if (!loaded || loaded.error) throw new Error(`session/load failed: ${JSON.stringify(loaded)}`);
    }
    return client;
  }

  async prompt(sessionId: string): Promise<void> {
    const id = `prompt-${this.nextId++}`;
    this.answers.set(id, 0);
    counts.promptsSent++;
    this.conn.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
    await this.conn.wait((m) => m.id === id && !("method" in m));
  }
}

/** Checks a client's stream: 1..k with no gap and no duplicate (history, then live). */
function checkStream(stream: number[], expectAll?: number, folded = false): void {
  counts.clientStreamsChecked++;
  const ok = folded
    ? stream.every((n, i) => i === 0 || n > (stream[i - 1] ?? 0)) && (expectAll === undefined || stream.at(-1) === expectAll)
    : stream.every((n, i) => n === i + 1) && (expectAll === undefined || stream.length === expectAll);
  if (!ok) {
    counts.clientStreamsWithGapOrDuplicate++;
    console.error(`stream with a gap or duplicate (expected 1..${expectAll ?? "k"}): ${stream.slice(0, 50).join(",")}…`);
  }
}

function tally(answers: Map<string, number>, kind: "prompt" | "permission"): void {
  for (const n of answers.values()) {
    if (n === 1) counts[kind === "prompt" ? "promptsAnsweredOnce" : "permissionsAnsweredOnce"]++;
    else if (n === 0) counts[kind === "prompt" ? "promptAnswersMissing" : "permissionAnswersMissing"]++;
    else counts[kind === "prompt" ? "promptAnswersDuplicated" : "permissionAnswersDuplicated"]++;
  }
}

/** One session for the whole soak: turns back to back, with clients and the agent churning. */
async function runSession(base: string, keys: { client: string; agent: string }, index: number, until: number) {
  const agent = new SoakAgent(base, keys.agent, `soak-${index}-${process.pid}`);
  await agent.dial();
  const clients = [await SoakClient.join(base, keys.client, agent)];
  const gone: SoakClient[] = [];
  while (Date.now() < until) {
    const prompter = clients[rand(clients.length)] ?? clients[0];
    if (!prompter) break;
    // Churn during the turn: other clients leave and new ones attach while updates stream.
    const churn = (async () => {
      await pause(rand(40));
      if (clients.length > 1 && Math.random() < 0.3) {
        const victim = clients.find((c) => c !== prompter);
        if (victim) {
          clients.splice(clients.indexOf(victim), 1);
          gone.push(victim);
          counts.clientDrops++;
          await victim.conn.close();
        }
      }
      if (clients.length < MAX_CLIENTS && Math.random() < 0.4) clients.push(await SoakClient.join(base, keys.client, agent));
    })();
    const started = Date.now();
    await prompter.prompt(agent.sessionId);
    if (Date.now() - started >= TURN_TIMEOUT_MS) counts.stuckTurns++;
    await churn;
    // Between turns, sometimes the agent drops and dials back in.
    if (Math.random() < 0.1) {
      counts.agentDrops++;
      await agent.conn?.close();
      await agent.dial();
    }
  }
  return { agent, clients, gone };
}

function workerdRssKb(rootPid: number): number {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,rss=,comm="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .map(([pid, ppid, rss, comm]) => ({ pid: Number(pid), ppid: Number(ppid), rss: Number(rss), comm: comm ?? "" }));
  const family = new Set([rootPid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const r of rows) if (family.has(r.ppid) && !family.has(r.pid)) grew = family.add(r.pid) !== undefined;
  }
  return rows.filter((r) => family.has(r.pid) && r.comm.includes("workerd")).reduce((s, r) => s + r.rss, 0);
}

const stateDir = mkdtempSync(join(tmpdir(), "acp-soak-"));
const gateway = await startLocalGateway({ port: Number(process.env.SOAK_PORT ?? 8897), persistTo: stateDir, quiet: true });
const base = gateway.url.replace(/^http/, "ws");
let exitCode: number;
try {
  const rssBefore = workerdRssKb(gateway.pid);
  const started = Date.now();
  process.stdout.write(`soak: ${SESSIONS} sessions for ${SECONDS} s against ${gateway.url}\n`);
  const sessions = await Promise.all(
    Array.from({ length: SESSIONS }, (_, i) => runSession(base, gateway.keys, i, started + SECONDS * 1000)),
  );
  const elapsed = (Date.now() - started) / 1000;
  const rssAfter = workerdRssKb(gateway.pid);

  for (const { agent, clients, gone } of sessions) {
    for (const c of [...clients, ...gone]) tally(c.answers, "prompt");
    tally(agent.permAnswers, "permission");
    // A client whose history was folded saw fewer, merged frames: only order and no duplicate apply.
    for (const c of gone) checkStream(c.stream, undefined, c.compacted > 0);
    // The prompter's answer can overtake the last updates on another client's socket: let them land.
    for (let waited = 0; waited < 5000 && clients.some((c) => (c.stream.at(-1) ?? 0) < agent.updates); waited += 50) await pause(50);
    for (const c of clients) checkStream(c.stream, agent.updates, c.compacted > 0);
    // Logged: a fresh client's replay holds every update the agent sent, once, in order.
    const fresh = await SoakClient.join(base, gateway.keys.client, agent);
    await fresh.conn.close();
    counts.updatesLogged += fresh.stream.length + fresh.compacted;
    if (fresh.compacted === 0) checkStream(fresh.stream, agent.updates);
    const snapshot = (await (
      await fetch(`${gateway.url}/v1/sessions/${encodeURIComponent(agent.sessionId)}`, {
        headers: { Authorization: `Bearer ${gateway.keys.client}` },
      })
    ).json()) as Json;
    if (snapshot.turn?.state !== "idle") counts.stuckTurns++;
    for (const c of clients) await c.conn.close();
    await agent.conn?.close();
  }

  const balanced =
    counts.promptsAnsweredOnce === counts.promptsSent &&
    counts.permissionsAnsweredOnce === counts.permissionsSent &&
    counts.updatesLogged === counts.updatesSent &&
    counts.clientStreamsWithGapOrDuplicate === 0 &&
    counts.stuckTurns === 0;
  const result = {
    at: new Date().toISOString(),
    seconds: Math.round(elapsed),
    sessions: SESSIONS,
    ...counts,
    connectionsOpened: stats.opened,
    connectionsHeldMax: stats.maxOpen,
    messagesPerSecond: Math.round((stats.framesIn + stats.framesOut) / elapsed),
    workerdRssMbBefore: Math.round(rssBefore / 1024),
    workerdRssMbAfter: Math.round(rssAfter / 1024),
    balanced,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(balanced ? "soak: every count balances\n" : "soak: UNBALANCED (see above)\n");
  mkdirSync(join(ROOT, ".ci"), { recursive: true });
  writeFileSync(join(ROOT, ".ci", "soak.json"), JSON.stringify(result));
  exitCode = balanced ? 0 : 1;
} finally {
  await gateway.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
process.exit(exitCode);
