// `npm run bench:profile`: where a client-answered permission request spends the gateway's CPU.
// Starts the gateway as the bench does (port 8890), sends PROFILE_REQUESTS requests that a client
// answers at once (as scenario 3's person path), and reads two things over the same requests: the
// CPU the gateway's processes used per request (bench/cpu.ts), and a CPU profile of the gateway's
// JavaScript taken through workerd's inspector (V8's sampling profiler): self time by function, and
// time under each of the gateway's own functions (inclusive). PROFILE_COMMAND=<command> asks another
// command (`npm test` is answered by a rule once PROFILE_RULE=1 made one). The profile's own sampling
// costs CPU too: read the functions' shares, not the totals, against an unprofiled run's.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WebSocket } from "ws";
import { startLocalGateway } from "../scripts/local-gateway.ts";
import { cpuNs } from "./cpu.ts";
import { type Json, benchAgent, benchClient, newSession, startTurn } from "./peer.ts";

/** A minimal Chrome DevTools Protocol client over workerd's inspector. */
class Inspector {
  private next = 1;
  private readonly waiting = new Map<number, (result: unknown) => void>();
  private readonly socket: WebSocket;
  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as Json;
      if (typeof message.id === "number") this.waiting.get(message.id)?.(message.result);
    });
  }

  static async open(port: number): Promise<Inspector> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as Json[];
    // The gateway's own script (not wrangler's internal workers).
    const target = targets.find((t) => !String(t.title).startsWith("__")) ?? targets[0];
    const socket = new WebSocket(String(target?.webSocketDebuggerUrl));
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    return new Inspector(socket);
  }

  call(method: string, params: Json = {}): Promise<unknown> {
    const id = this.next++;
    this.socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve) => this.waiting.set(id, resolve));
  }

  close(): void {
    this.socket.close();
  }
}

const REQUESTS = Number(process.env.PROFILE_REQUESTS ?? 600);
const COMMAND = process.env.PROFILE_COMMAND ?? "make target";
const stateDir = mkdtempSync(join(tmpdir(), "acp-gateway-profile-"));
const gateway = await startLocalGateway({
  port: 8890,
  persistTo: join(stateDir, "gateway"),
  quiet: true,
  tenantSettings: {
    limits: {
      messagesPerSecondPerAgentConnection: 100_000,
      messagesPerSecondPerConnection: 100_000,
      messagesPerSecondPerTenant: 1_000_000,
    },
  },
});
try {
  const ws = gateway.url.replace(/^http/, "ws");
  if (process.env.PROFILE_RULE === "1") {
    const made = await fetch(`${gateway.url}/v1/rules`, {
      method: "POST",
      headers: { Authorization: `Bearer ${gateway.keys.admin}`, "Content-Type": "application/json" },
      body: JSON.stringify({ decision: "allow", matcher: { type: "command", prefix: COMMAND.split(" ") } }),
    });
    if (made.status !== 201) throw new Error(`creating the rule failed: ${made.status}`);
  }
  const agent = await benchAgent(ws, gateway.keys.agent, "profile");
  const client = await benchClient(ws, gateway.keys.client, "profile");
  const sessionId = await newSession(client, "/bench/profile");
  await startTurn(client, agent, sessionId, "profile-turn");
  client.onMessage = (m) => {
    if (m.method !== "session/request_permission") return;
    client.send({ jsonrpc: "2.0", id: m.id, result: { outcome: { outcome: "selected", optionId: "ok" } } });
  };
  const options = [
    { optionId: "ok", name: "Allow", kind: "allow_once" },
    { optionId: "no", name: "Reject", kind: "reject_once" },
  ];
  const ask = async (i: number) => {
    const id = `q${i}`;
    const answered = agent.next((m) => m.id === id);
    agent.send({
      jsonrpc: "2.0",
      id,
      method: "session/request_permission",
      params: { sessionId, toolCall: { toolCallId: id, kind: "execute", rawInput: { command: `${COMMAND}${i}` } }, options },
    });
    await answered;
  };
  for (let i = 0; i < 50; i++) await ask(-1 - i);

  const inspector = await Inspector.open(9229);
  await inspector.call("Profiler.enable");
  await inspector.call("Profiler.setSamplingInterval", { interval: 50 });
  const before = cpuNs(gateway.pid);
  const t0 = performance.now();
  await inspector.call("Profiler.start");
  for (let i = 0; i < REQUESTS; i++) await ask(i);
  const { profile } = (await inspector.call("Profiler.stop")) as { profile: Profile };
  const ms = performance.now() - t0;
  const cpu = (cpuNs(gateway.pid) - before) / 1000 / REQUESTS;
  inspector.close();
  agent.close();
  client.close();
  const out = process.env.PROFILE_OUT;
  if (out) writeFileSync(out, JSON.stringify(profile));
  console.log(`${REQUESTS} requests (${COMMAND}…): ${(ms / REQUESTS).toFixed(3)} ms each, ${cpu.toFixed(0)} µs of the gateway's CPU each`);
  report(profile, REQUESTS);
} finally {
  await gateway.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
process.exit(0);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time by function, and inclusive time of the gateway's own functions, in µs per request. */
function report(profile: Profile, requests: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, k) => {
    const dt = profile.timeDeltas[k + 1] ?? 0;
    total += dt;
    const node = byId.get(id);
    if (!node) return;
    const name = nameOf(node);
    self.set(name, (self.get(name) ?? 0) + dt);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at);
      if (!n) break;
      const key = nameOf(n);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + dt);
    }
  });
  const top = (m: Map<string, number>, count: number, keep: (k: string) => boolean) =>
    [...m]
      .filter(([k]) => keep(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([k, v]) => `  ${(v / requests).toFixed(1).padStart(8)} µs  ${k}`)
      .join("\n");
  console.log(`profiled: ${(total / requests).toFixed(1)} µs a request (idle included)`);
  console.log(`self time, top 40:\n${top(self, 40, () => true)}`);
  console.log(
    `inclusive, the gateway's functions, top 60:\n${top(inclusive, 60, (k) => !k.startsWith("(") && !k.includes("node_modules"))}`,
  );
}

function nameOf(n: ProfileNode): string {
  const file = n.callFrame.url.split("/").slice(-2).join("/");
  return `${n.callFrame.functionName || "(anonymous)"} ${file}:${n.callFrame.lineNumber + 1}`;
}
