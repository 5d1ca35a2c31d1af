// BENCHMARKS.md and bench/results/scaling.svg from a benchmark result (bench/results/latest.json).
// `node bench/report.ts` regenerates both from the committed JSON; `node bench/report.ts compare
// <label>=<result.json> …` prints stored results side by side against today's goals (bench/compare.ts).

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as prettier from "prettier";
import { ROOT } from "../scripts/local-gateway.ts";
import { compareTable } from "./compare.ts";
import { targets } from "./targets.ts";

type Json = Record<string, any>;

/** Written as prettier formats it, so a fresh run leaves the file `npm run format:check` accepts. */
export async function writeReport(r: Json): Promise<void> {
  writeFileSync(join(ROOT, "bench", "results", "scaling.svg"), chart(r));
  const file = join(ROOT, "BENCHMARKS.md");
  const options = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(file, await prettier.format(markdown(r), { ...options, filepath: file }));
}

function markdown(r: Json): string {
  const m = r.machine;
  const s = r.scenarios;
  const b = r.baseline;
  const rows = (xs: Json[], f: (x: Json) => string) => xs.map(f).join("\n");
  return `# Benchmarks

The latest committed run of \`npm run bench\` (${m.date.slice(0, 10)}, ${r.seconds} s). Every figure comes with its
ratio to a baseline measured **in the same run** on the same workerd: an echo Durable Object (one
hop), a relay client → Worker → Durable Object → Worker → client with no ACP logic, and the
**persisted relay** — the same relay with one SQLite insert per frame before it is sent on, the floor
for any relay that keeps a log. The targets are ratios to the persisted relay, and the latency ones
are **paired**: the gateway path and the persisted relay are measured in alternating blocks (ten of
each, the order swapped every block), so both see the same minutes of the machine; the baselines
table below is the run's first measurement of each. The machines are shared and noisy: read the
ratios, not the milliseconds. \`BENCH_QUICK=1 npm run bench\` is the
CI-sized version (about a minute; writes bench/results/quick.json only).

${r.load ?? ""}

Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; Node ${m.node}; workerd ${m.workerd}; everything on loopback.

## Targets

| target | measured | goal | |
|---|---|---|---|
${rows(targets(r), (t) => `| ${t.name} | ${t.value} | ${t.target} | ${t.pass ? "pass" : "**miss**"} |`)}

## Baselines

| | median | p99 | max |
|---|---|---|---|
| echo round trip | ${b.echoRtt.median} ms | ${b.echoRtt.p99} ms | ${b.echoRtt.max} ms |
| relay round trip (A → B → A) | ${b.relayRtt.median} ms | ${b.relayRtt.p99} ms | ${b.relayRtt.max} ms |
| relay one way, 100 B | ${b.relayOneWay.median} ms | ${b.relayOneWay.p99} ms | ${b.relayOneWay.max} ms |
| relay one way, 64 KiB | ${b.relayOneWayLarge.median} ms | ${b.relayOneWayLarge.p99} ms | ${b.relayOneWayLarge.max} ms |
| persisted relay round trip | ${b.persistedRtt.median} ms | ${b.persistedRtt.p99} ms | ${b.persistedRtt.max} ms |
| persisted relay one way, 100 B | ${b.persistedOneWay.median} ms | ${b.persistedOneWay.p99} ms | ${b.persistedOneWay.max} ms |
| persisted relay one way, 64 KiB | ${b.persistedOneWayLarge.median} ms | ${b.persistedOneWayLarge.p99} ms | ${b.persistedOneWayLarge.max} ms |
| relay one way with a second object, reached by RPC | ${b.hopByRpc?.median} ms | ${b.hopByRpc?.p99} ms | ${b.hopByRpc?.max} ms |
| relay one way with a second object, reached by WebSocket | ${b.hopByWebSocket?.median} ms | ${b.hopByWebSocket?.p99} ms | ${b.hopByWebSocket?.max} ms |
| persisted relay one way with a second object (WebSocket), the second one inserting | ${b.persistedTwoObjects?.median} ms | ${b.persistedTwoObjects?.p99} ms | ${b.persistedTwoObjects?.max} ms |

The "second object" rows are measured in alternating blocks: what one object-to-object hop costs by
each transport (the gateway's agent link, docs/decisions/0001-the-message-path.md), and the persisted relay with the
gateway's two objects, which is ${b.persistedTwoObjectsRatio}x the one-object persisted relay in the
same minutes: the floor for a stream that crosses two objects and commits once.

Throughput: relay ${b.relayThroughput} msg/s (100 B), ${b.relayThroughputLarge} msg/s (64 KiB); persisted relay
${b.persistedThroughput} msg/s (100 B), ${b.persistedThroughputLarge} msg/s (64 KiB).

## Where the time goes

${stageTimings(r)}

By difference between paths measured in this run, each adding one stage to the one before (medians).

| one update, agent → client | ms |
|---|---|
${rows(r.stages.update, (x) => `| ${x.stage} | ${x.ms} |`)}

| one permission request answered at once | ms |
|---|---|
${rows(r.stages.permission, (x) => `| ${x.stage} | ${x.ms} |`)}

## Cost

SQLite rows written are counted by the runtime (each statement's \`rowsWritten\`) in the real
SessionObject and AgentObject by test/workerd/compaction-cost.test.ts, which the bench runs. Object
calls and billed Durable Object requests are counted from the code path. Prices: Cloudflare Workers
Paid, read ${r.cost.prices.read} from developers.cloudflare.com/durable-objects/platform/pricing — Durable Object
requests $${r.cost.prices.doRequestPerM}/million (each RPC call is one; incoming WebSocket messages, the agent link's included, are billed 20:1),
duration $${r.cost.prices.durationPerMGbS}/million GB-s, SQLite rows written $${r.cost.prices.rowWrittenPerM}/million; before the
included monthly allowances, and with duration estimated at 1 ms per object per event at 128 MB.
The requests are for a busy session of a dial-in agent: its updates go from the edge over the
session's open edge link (a Worker's WebSocket messages are not billed as requests, and the edge's
CPU time, about 0.1 ms an update at $0.02 per million CPU-ms, is left out); the first update after
10 s without a link goes by RPC while the link opens (2.05 requests for that update). D1's audit rows,
the unseen-change calls and the bill at 10,000 sessions: "The bill at 10,000 sessions" below.

| | SQLite rows written | object-to-object hops (link messages) | billed DO requests | $ per million |
|---|---|---|---|---|
| one update (agent_message_chunk) | ${r.cost.perUpdate.rowsWritten} | ${r.cost.perUpdate.objectCalls} | ${r.cost.perUpdate.doRequests} | $${r.cost.perUpdate.dollarsPerMillion} |
| one permission request, answered by a client | ${r.cost.perPermission.rowsWritten} | ${r.cost.perPermission.objectCalls} | ${r.cost.perPermission.doRequests} | $${r.cost.perPermission.dollarsPerMillion} |

Rows by object: ${JSON.stringify(r.cost.rows)}.

## 1. session/update, agent → one client

| update | median | p99 | max | vs relay | vs persisted | throughput | vs relay | vs persisted |
|---|---|---|---|---|---|---|---|---|
| 100 B | ${s.relay.small.latency.median} ms | ${s.relay.small.latency.p99} ms | ${s.relay.small.latency.max} ms | ${s.relay.small.latencyRatio}x | ${s.relay.small.latencyRatioPersisted}x | ${s.relay.small.throughput} msg/s | ${s.relay.small.throughputRatio}x | ${s.relay.small.throughputRatioPersisted}x |
| 64 KiB | ${s.relay.large.latency.median} ms | ${s.relay.large.latency.p99} ms | ${s.relay.large.latency.max} ms | ${s.relay.large.latencyRatio}x | ${s.relay.large.latencyRatioPersisted}x | ${s.relay.large.throughput} msg/s | ${s.relay.large.throughputRatio}x | ${s.relay.large.throughputRatioPersisted}x |

## 2. Fan-out: one update to every attached client

| clients | median (all received) | p99 | per client |
|---|---|---|---|
${rows(s.fanout.rows, (x) => `| ${x.clients} | ${x.total.median} ms | ${x.total.p99} ms | ${x.perClient} ms |`)}

## 3. Permission round trip (agent asks → answer reaches the agent)

| answered by | median | p99 | vs relay round trip | vs persisted relay round trip |
|---|---|---|---|---|
| a client, at once (tenant with no rules) | ${s.permission.person.latency.median} ms | ${s.permission.person.latency.p99} ms | ${s.permission.person.ratioToRelayRtt}x | ${s.permission.person.ratioToPersistedRtt}x |
${rows(s.permission.auto, (x) => `| a rule, ${x.rules} rules in the tenant | ${x.latency.median} ms | ${x.latency.p99} ms | ${x.ratioToRelayRtt}x | ${x.ratioToPersistedRtt}x |`)}

## 4. Concurrent sessions running turns (10 updates a turn)

| sessions | turns/s |
|---|---|
${rows(s.concurrency.rows, (x) => `| ${x.sessions} | ${x.turnsPerSecond} |`)}

## 5. Attach and replay (session/load of a logged session)

Chunks of text with a tool call every 100 events, as an agent streams them; the log is compacted
(see docs/decisions/0008-performance.md, "Log compaction"), so the client receives fewer, larger frames.

| events | time to the load answer | updates received | workerd RSS before → after |
|---|---|---|---|
${rows(s.replay.rows, (x) => `| ${x.events} | ${x.ms} ms | ${x.replayed} | ${x.rssBeforeMiB} → ${x.rssAfterMiB} MiB |`)}
${s.replaySeeded ? `| ${s.replaySeeded.events} (log written in the object, workerd test harness) | ${s.replaySeeded.ms} ms | ${s.replaySeeded.frames} | |\n` : ""}
Each streamed size is the median of several attaches by fresh clients (the first attach of a run is
also the first use of paths that are cold). 100,000 events take the gateway far longer to log than
the bench may run, so that size is written into the SessionObject by the session's own compaction
functions and attached to in the workerd test harness (test/workerd/compaction-replay.test.ts).

## 6. tool_call_update as the tool-call table grows

| tool calls in the session | ms per update |
|---|---|
${rows(s.toolCalls.rows, (x) => `| ${x.tableSize} | ${x.msPerUpdate} |`)}

![scaling](bench/results/scaling.svg)

${notes()}
`;
}

/** The stages of one update and one permission request, timed inside the gateway (bench/stages.ts, scenario 7). */
function stageTimings(r: Json): string {
  const t = r.stageTimings;
  if (!t)
    return "Measured inside the gateway (scenario 7, bench/stages.ts): not in this run's results; the notes below may have quick-run figures.";
  const table = (title: string, p: Json) => `| ${title} (${p.probes} probes) | median | mean |
|---|---|---|
${p.stages.map((x: Json) => `| ${x.stage} | ${x.median} ms | ${x.mean} ms |`).join("\n")}
| **total** (unmarked probes: ${p.unmarked.median} ms median) | ${p.total.median} ms | ${p.total.mean} ms |`;
  return `Measured inside the gateway: the bench's gateway runs with STAGE_TIMING=1, and probe frames sent
one at a time log the time they cross each boundary (protocol/stage-timing.ts; docs/decisions/0008-performance.md,
"Measuring the path"). The clock is workerd's, in whole milliseconds, so a stage under a millisecond
reads 0 or 1: the mean is the better figure for those. "Send" in an object is not "left": a send
after a write is held by the output gate until the write commits, so the commit is in the stage
after the send. The two ends are the bench's own clock; unmarked probes alternating with the marked
ones give the same path without the hooks' log lines.

${table("one update, agent → client", t.update)}

${table("one permission request answered by a rule", t.rule)}

${table("one permission request answered by a client at once", t.client)}`;
}

/** The hand-written analysis of the latest run: bench/results/notes.md. */
function notes(): string {
  try {
    return readFileSync(join(ROOT, "bench", "results", "notes.md"), "utf8");
  } catch {
    return "";
  }
}

function chart(r: Json): string {
  const series = [
    { name: "fan-out: ms per client", color: "#2563eb", points: r.scenarios.fanout.rows.map((x: Json) => [x.clients, x.perClient]) },
    {
      name: "replay: ms per 1k events",
      color: "#16a34a",
      points: r.scenarios.replay.rows.map((x: Json) => [x.events, (x.ms / x.events) * 1000]),
    },
    {
      name: "tool_call_update: ms each",
      color: "#dc2626",
      points: r.scenarios.toolCalls.rows.map((x: Json) => [x.tableSize, x.msPerUpdate]),
    },
  ];
  const W = 640;
  const H = 360;
  const pad = 50;
  const all = series.flatMap((s) => s.points as number[][]);
  const maxY = Math.max(...all.map((p) => p[1] ?? 0)) * 1.1 || 1;
  const x = (v: number) => pad + ((Math.log10(v) - 0) / 5) * (W - 2 * pad);
  const y = (v: number) => H - pad - (v / maxY) * (H - 2 * pad);
  const lines = series
    .map((s, i) => {
      const pts = (s.points as number[][]).map((p) => `${x(p[0] ?? 1).toFixed(1)},${y(p[1] ?? 0).toFixed(1)}`).join(" ");
      return `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts}"/>
<text x="${pad + 10}" y="${20 + i * 16}" fill="${s.color}" font-size="12">${s.name}</text>`;
    })
    .join("\n");
  const ticks = [1, 10, 100, 1000, 10_000, 100_000]
    .map((v) => `<text x="${x(v)}" y="${H - pad + 16}" font-size="10" text-anchor="middle">${v}</text>`)
    .join("");
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<line x1="${pad}" y1="${H - pad}" x2="${W - pad}" y2="${H - pad}" stroke="#888"/>
<line x1="${pad}" y1="${pad}" x2="${pad}" y2="${H - pad}" stroke="#888"/>
${ticks}
<text x="${W / 2}" y="${H - 10}" font-size="11" text-anchor="middle">clients / events / tool calls (log scale)</text>
<text x="12" y="${H / 2}" font-size="11" transform="rotate(-90 12 ${H / 2})" text-anchor="middle">ms (0 – ${maxY.toFixed(2)})</text>
${lines}
</svg>
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === "compare") {
    const runs = process.argv.slice(3).map((arg) => {
      const at = arg.indexOf("=");
      if (at < 1) throw new Error(`expected <label>=<result.json>, got ${arg}`);
      return { label: arg.slice(0, at), r: JSON.parse(readFileSync(arg.slice(at + 1), "utf8")) as Json };
    });
    process.stdout.write(compareTable(runs));
  } else await writeReport(JSON.parse(readFileSync(join(ROOT, "bench", "results", "latest.json"), "utf8")) as Json);
}
