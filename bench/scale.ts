// BENCH_SCALE=1 npm run bench: a tenant at scale, on this machine's workerd (issue 26).
// A. A rule change with N live sessions holding the tenant's rules (N = 1,000, 3,000, 10,000; each
//    session had a permission request answered by a rule, so it holds the rules and is one the
//    change must reach): how long the REST API takes to answer a new rule and a revocation, the
//    slope per session, and how long the first request after the change takes in every session at
//    once (they all need the new rules).
// B. The tenant's limits under many connections: the lease traffic per message.
// Figures are absolute (this is a capacity test, there is no baseline to pair with), reported with
// the machine's load. Sessions accumulate: 1,000 are made, measured, 2,000 more, measured, and so on.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalGateway } from "../scripts/local-gateway.ts";
import { type Json, type Peer, benchAgent, benchClient } from "./peer.ts";
import { round, summarize } from "./stats.ts";

const log = (s: string) => process.stdout.write(`${s}\n`);
const SIZES = (process.env.BENCH_SCALE_SIZES ?? "1000,3000,10000").split(",").map(Number);
/** Sessions per client connection (each attached session is one socket from the edge to its object). */
const PER_CONNECTION = 200;
/** Requests in flight at once while the sessions are set up. */
const CONCURRENCY = 64;
const started = Date.now();

const stateDir = mkdtempSync(join(tmpdir(), "acp-gateway-scale-"));
const gateway = await startLocalGateway({
  port: 8892,
  persistTo: join(stateDir, "gateway"),
  quiet: true,
  tenantSettings: {
    limits: {
      messagesPerSecondPerAgentConnection: 1_000_000,
      messagesPerSecondPerConnection: 1_000_000,
      messagesPerSecondPerTenant: 10_000_000,
      liveSessionsPerTenant: 1_000_000,
      connectionsPerKey: 10_000,
    },
  },
});
const ws = gateway.url.replace(/^http/, "ws");
const api = (path: string, init: RequestInit = {}) =>
  fetch(`${gateway.url}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${gateway.keys.admin}`, "Content-Type": "application/json", ...init.headers },
  });

const results: Json = { machine: { loadAtStart: loadavg().map((x) => round(x, 2)) }, ruleChange: [] as Json[] };

try {
  const agent = await benchAgent(ws, gateway.keys.agent, "scale");
  const options = [
    { optionId: "ok", name: "Allow", kind: "allow_once" },
    { optionId: "no", name: "Reject", kind: "reject_once" },
  ];
  // The rule every session's first request is answered by, so every session holds the rules.
  const first = await api("/v1/rules", {
    method: "POST",
    body: JSON.stringify({ decision: "allow", matcher: { type: "command", prefix: ["npm", "test"] } }),
  });
  if (first.status !== 201) throw new Error(`creating the scale rule failed: ${first.status} ${await first.text()}`);

  // The agent's side: it answers prompts never (turns stay running), and counts answers to its permission requests.
  const answered = new Map<string, (m: Json) => void>();
  const prompts = new Map<string, () => void>();
  const auto = agent.onMessage;
  agent.onMessage = (m, raw) => {
    if (typeof m.id === "string" && answered.has(m.id) && !m.method) {
      answered.get(m.id)?.(m);
      answered.delete(m.id);
      return;
    }
    if (m.method === "session/prompt") {
      prompts.get(m.params.sessionId)?.();
      prompts.delete(m.params.sessionId);
      return;
    }
    auto(m, raw);
  };
  let asked = 0;
  const ask = (sessionId: string, command: string): Promise<Json> => {
    const id = `perm-${asked++}`;
    const done = new Promise<Json>((resolve) => answered.set(id, resolve));
    agent.send({
      jsonrpc: "2.0",
      id,
      method: "session/request_permission",
      params: { sessionId, toolCall: { toolCallId: id, kind: "execute", rawInput: { command } }, options },
    });
    return done;
  };

  const sessions: string[] = [];
  const clients: Peer[] = [];
  /** Answers awaited by id, across every client (Peer.next serves one waiter at a time). */
  const awaiting = new Map<string, (m: Json) => void>();
  const request = (client: Peer, id: string, method: string, params: Json): Promise<Json> => {
    const answer = new Promise<Json>((resolve) => awaiting.set(id, resolve));
    client.send({ jsonrpc: "2.0", id, method, params });
    return answer;
  };
  const newClient = async () => {
    const client = await benchClient(ws, gateway.keys.client, "scale");
    client.onMessage = (m) => {
      if (typeof m.id === "string" && !m.method) {
        awaiting.get(m.id)?.(m);
        awaiting.delete(m.id);
      }
    };
    return client;
  };
  let madeIn = 0;
  /** One more live session: made by a client, its turn started, one request answered by the rule. */
  const grow = async (client: Peer, index: number) => {
    const answer = await request(client, `new-${index}`, "session/new", { cwd: "/bench/scale", mcpServers: [] });
    const sessionId = answer.result?.sessionId as string;
    if (typeof sessionId !== "string") throw new Error(`session/new failed: ${JSON.stringify(answer)}`);
    const prompted = new Promise<void>((resolve) => prompts.set(sessionId, resolve));
    client.send({
      jsonrpc: "2.0",
      id: `prompt-${index}`,
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "go" }] },
    });
    await prompted;
    const result = await ask(sessionId, "npm test");
    if (result.result?.outcome?.optionId !== "ok") throw new Error(`the rule did not answer: ${JSON.stringify(result)}`);
    sessions.push(sessionId);
  };

  for (const size of SIZES) {
    const t0 = Date.now();
    while (sessions.length < size) {
      const batch: Promise<void>[] = [];
      for (let i = 0; i < CONCURRENCY && sessions.length + batch.length < size; i++) {
        const index = madeIn++;
        const c = Math.floor(index / PER_CONNECTION);
        while (clients.length <= c) clients.push(await newClient());
        batch.push(grow(clients[c] as Peer, index));
      }
      await Promise.all(batch);
    }
    log(`scale: ${size} live sessions holding the rules (${round((Date.now() - t0) / 1000)} s to add them)`);

    // A new rule, then its revocation: the API's answer time.
    const creates: number[] = [];
    const revokes: number[] = [];
    for (let r = 0; r < 3; r++) {
      let t = performance.now();
      const made = await api("/v1/rules", {
        method: "POST",
        body: JSON.stringify({ decision: "allow", matcher: { type: "command", prefix: ["make", `scale${size}-${r}`] } }),
      });
      creates.push(performance.now() - t);
      if (made.status !== 201) throw new Error(`POST /v1/rules: ${made.status} ${await made.text()}`);
      const rule = ((await made.json()) as Json).rule as Json;
      t = performance.now();
      const gone = await api(`/v1/rules/${rule.id}`, { method: "DELETE" });
      revokes.push(performance.now() - t);
      if (gone.status >= 300) throw new Error(`DELETE /v1/rules: ${gone.status} ${await gone.text()}`);
    }
    // The first request after the change, in every session at once: each needs the new rules.
    const t1 = performance.now();
    const all = await Promise.all(sessions.map((s) => ask(s, "npm test")));
    const herdMs = performance.now() - t1;
    if (all.some((m) => m.result?.outcome?.optionId !== "ok")) throw new Error("a request after the change was not answered by the rule");
    const row = {
      sessions: size,
      createMs: summarize(creates),
      revokeMs: summarize(revokes),
      firstRequestEverySessionMs: round(herdMs),
      firstRequestPerSessionMs: round(herdMs / size, 3),
      load: loadavg().map((x) => round(x, 2)),
    };
    results.ruleChange.push(row);
    log(
      `scale: ${size} sessions: POST /v1/rules ${row.createMs.median} ms, DELETE ${row.revokeMs.median} ms; the first request in every session at once ${row.firstRequestEverySessionMs} ms`,
    );
  }
  const rows = results.ruleChange as Json[];
  if (rows.length > 1) {
    const a = rows[0] as Json;
    const b = rows.at(-1) as Json;
    results.slopeMsPerSession = {
      create: round((b.createMs.median - a.createMs.median) / (b.sessions - a.sessions), 4),
      revoke: round((b.revokeMs.median - a.revokeMs.median) / (b.sessions - a.sessions), 4),
    };
    log(`scale: slope per session: create ${results.slopeMsPerSession.create} ms, revoke ${results.slopeMsPerSession.revoke} ms`);
  }
  for (const c of clients) c.close();
  agent.close();
  results.seconds = Math.round((Date.now() - started) / 1000);
  const out = join(import.meta.dirname, "results", "scale.json");
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  log(`scale: results in ${out} (${results.seconds} s)`);
} finally {
  await gateway.stop();
  rmSync(stateDir, { recursive: true, force: true });
}
