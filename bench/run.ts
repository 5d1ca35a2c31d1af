// npm run bench: the gateway's cost over the raw platform, measured in one run on this machine.
// Starts the gateway as `npm start` does and, beside it, the baselines in bench/baseline (an echo
// Durable Object; a relay client → Worker → Durable Object → Worker → client with no ACP logic).
// Every gateway figure is also given as a ratio to the matching baseline of the same run.
// BENCH_QUICK=1 runs a small version (under a minute) to check that the harness works.
// Over 400 lines, knowingly: a script read top to bottom, one scenario after another, each short;
// the report is bench/report.ts, the peers bench/peer.ts, the statistics bench/stats.ts.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { ROOT, WRANGLER, startLocalGateway, stopProcessGroup, waitForHealth, wrangler, wranglerEnv } from "../scripts/local-gateway.ts";
import { type Json, Peer, benchAgent, benchClient, loadSession, newSession, startTurn } from "./peer.ts";
import { writeReport } from "./report.ts";
import { cpuNs } from "./cpu.ts";
import { measureStages } from "./stages.ts";
import { targets } from "./targets.ts";
import { now, ratio, round, summarize } from "./stats.ts";

// BENCH_SCALE=1 is the tenant at scale (bench/scale.ts), a run of its own.
if (process.env.BENCH_SCALE === "1") {
  await import("./scale.ts");
  process.exit(0);
}
const QUICK = process.env.BENCH_QUICK === "1";
// BENCH_REPEAT=k runs every scenario k times as long (more samples).
const n = (full: number, quick: number) => Number(process.env.BENCH_REPEAT ?? 1) * (QUICK ? quick : full);
const SMALL = "x".repeat(60); // a ~100-byte update frame with its envelope
const LARGE = "y".repeat(64 * 1024);
const started = Date.now();
const results: Json = { quick: QUICK, machine: machine(), scenarios: {} };
const loadAtStart = loadavg().map((x) => round(x, 2));
const log = (s: string) => process.stdout.write(`${s}\n`);
// BENCH_ONLY=3,5 runs only those scenarios (after the baselines), for profiling one path; it writes no results file
// but BENCH_OUT=<file>, which any run also writes its results to (a before/after kept in bench/results/issue-40/).
const ONLY = process.env.BENCH_ONLY?.split(",").map(Number);
const wants = (scenario: number) => !ONLY || ONLY.includes(scenario);

const stateDir = mkdtempSync(join(tmpdir(), "acp-gateway-bench-"));
// The bench measures the gateway's capacity, not its limits: it streams far faster than an agent does
// (thousands of updates at once), so its tenant's message rates are raised out of the way.
const gateway = await startLocalGateway({
  port: 8890,
  persistTo: join(stateDir, "gateway"),
  quiet: true,
  // Stage timing (scenario 7): the gateway logs when the bench's marked probe frames cross each stage.
  stageTiming: true,
  logFile: join(stateDir, "gateway.log"),
  tenantSettings: {
    limits: {
      messagesPerSecondPerAgentConnection: 100_000,
      messagesPerSecondPerConnection: 100_000,
      messagesPerSecondPerTenant: 1_000_000,
      // Scenario 3 seeds 10,000 rules: the stored-data limits (decision 0041) raised to their hard maximum.
      rulesPerTenant: 25_000,
      ruleBytesPerTenant: 16 * 1024 * 1024,
    },
  },
});
const baseline = await startBaseline(8891, join(stateDir, "baseline"));
const [gatewayPid, baselinePid] = [gateway.pid, baseline.pid];
const ws = gateway.url.replace(/^http/, "ws");
const bws = baseline.url.replace(/^http/, "ws");
const { client: clientKey, agent: agentKey } = gateway.keys;
log(`gateway ${gateway.url}, baseline ${baseline.url}${QUICK ? " (quick)" : ""}`);

try {
  // ── baselines ─────────────────────────────────────────────────────────────────────────────
  const echo = await Peer.open(`${bws}/echo`);
  const echoRtt = await sequential(n(2000, 300), async (i) => {
    echo.send({ i, d: SMALL });
    await echo.next((m) => m.i === i);
  });
  const relayA = await Peer.open(`${bws}/relay?room=r1&role=a`);
  const relayB = await Peer.open(`${bws}/relay?room=r1&role=b`);
  relayB.onMessage = (m) => relayB.send(m); // B answers at once: the round trip of a permission
  const relayRtt = await sequential(n(2000, 300), async (i) => {
    relayA.send({ i, d: SMALL });
    await relayA.next((m) => m.i === i);
  });
  relayB.onMessage = () => undefined;
  const relayOneWay = await oneWay(relayA, relayB, SMALL, n(2000, 300));
  const relayOneWayLarge = await oneWay(relayA, relayB, LARGE, n(200, 40));
  const relayThroughput = await throughput(relayA, relayB, SMALL, n(3000, 1000));
  const relayThroughputLarge = await throughput(relayA, relayB, LARGE, n(300, 50));
  // The persisted relay: the same topology, one SQLite insert per frame before it is sent on.
  const persistedA = await Peer.open(`${bws}/prelay?room=p1&role=a`);
  const persistedB = await Peer.open(`${bws}/prelay?room=p1&role=b`);
  persistedB.onMessage = (m) => persistedB.send(m);
  const persistedRtt = await sequential(n(2000, 300), async (i) => {
    persistedA.send({ i, d: SMALL });
    await persistedA.next((m) => m.i === i);
  });
  persistedB.onMessage = () => undefined;
  const persistedOneWay = await oneWay(persistedA, persistedB, SMALL, n(2000, 300));
  const persistedOneWayLarge = await oneWay(persistedA, persistedB, LARGE, n(200, 40));
  const persistedThroughput = await throughput(persistedA, persistedB, SMALL, n(3000, 1000));
  const persistedThroughputLarge = await throughput(persistedA, persistedB, LARGE, n(300, 50));
  // One object-to-object hop more, by RPC and by WebSocket, measured in alternating blocks (`paired`).
  const hopB = await Peer.open(`${bws}/hop?role=b`);
  const hopByRpc = await Peer.open(`${bws}/hop?role=a&via=rpc`);
  const hopByWs = await Peer.open(`${bws}/hop?role=a&via=ws`);
  let hopKey = 0;
  const hopStep = (a: Peer) => async () => {
    const w = `h${hopKey++}`;
    const arrived = hopB.next((m) => m.w === w);
    a.send({ w, d: SMALL });
    await arrived;
  };
  const hops = await paired(n(2000, 300), hopStep(hopByRpc), hopStep(hopByWs));
  log(
    `baseline: a second object by RPC ${hops.gateway.median} ms, by WebSocket ${hops.baseline.median} ms (one object: ${relayOneWay.median} ms)`,
  );

  // The persisted relay again, for the paired measurements of the scenarios (see `paired`).
  let pairedKey = 0;
  const persistedOneWayStep = (d: string) => async () => {
    const w = `pw${pairedKey++}`;
    const arrived = persistedB.next((m) => m.w === w);
    persistedA.send({ w, d });
    await arrived;
  };
  const persistedRttStep = async () => {
    const i = `pr${pairedKey++}`;
    persistedB.onMessage = (m) => persistedB.send(m);
    persistedA.send({ i, d: SMALL });
    await persistedA.next((m) => m.i === i);
    persistedB.onMessage = () => undefined;
  };
  // The persisted relay with the gateway's two objects (the second one inserts each frame), against
  // the one-object persisted relay of the targets: what a second object costs a persisted stream.
  const hopByWsPersisted = await Peer.open(`${bws}/hop?role=a&via=wsp`);
  const twoObjects = await paired(n(2000, 300), hopStep(hopByWsPersisted), persistedOneWayStep(SMALL));
  for (const p of [hopB, hopByRpc, hopByWs, hopByWsPersisted]) p.close();
  log(
    `baseline: persisted relay with a second object ${twoObjects.gateway.median} ms, ${ratio(twoObjects.gateway.median, twoObjects.baseline.median)}x the persisted relay (paired ${twoObjects.baseline.median} ms)`,
  );
  results.baseline = {
    persistedTwoObjects: twoObjects.gateway,
    persistedTwoObjectsRatio: ratio(twoObjects.gateway.median, twoObjects.baseline.median),
    hopByRpc: hops.gateway,
    hopByWebSocket: hops.baseline,
    echoRtt,
    relayRtt,
    relayOneWay,
    relayOneWayLarge,
    relayThroughput,
    relayThroughputLarge,
    persistedRtt,
    persistedOneWay,
    persistedOneWayLarge,
    persistedThroughput,
    persistedThroughputLarge,
  };
  log(
    `baseline: echo rtt ${echoRtt.median} ms, relay rtt ${relayRtt.median} ms, relay ${relayThroughput} msg/s; persisted relay rtt ${persistedRtt.median} ms, ${persistedThroughput} msg/s`,
  );

  // ── 1. relay agent → one client ───────────────────────────────────────────────────────────
  if (wants(1)) {
    const agent = await benchAgent(ws, agentKey, "relay");
    const client = await benchClient(ws, clientKey, "relay");
    const sessionId = await newSession(client);
    const send = (d: string, i: number) =>
      agent.send({
        jsonrpc: "2.0",
        method: "session/update",
        params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: d }, i } },
      });
    const updateStep = (d: string) => async (i: number) => {
      send(d, i);
      await client.next((m) => m.params?.update?.i === i);
    };
    const small = await paired(n(2000, 300), updateStep(SMALL), persistedOneWayStep(SMALL));
    const large = await paired(n(200, 40), updateStep(LARGE), persistedOneWayStep(LARGE));
    const latency = small.gateway;
    const latencyLarge = large.gateway;
    const rate = await pipelined(
      n(3000, 1000),
      (i) => send(SMALL, i),
      client,
      (m) => m.params?.update?.i,
    );
    const rateLarge = await pipelined(
      n(300, 50),
      (i) => send(LARGE, i),
      client,
      (m) => m.params?.update?.i,
    );
    results.scenarios.relay = {
      small: {
        latency,
        throughput: rate,
        latencyRatio: ratio(latency.median, relayOneWay.median),
        throughputRatio: ratio(rate, relayThroughput),
        latencyRatioPersisted: ratio(latency.median, small.baseline.median),
        persistedPaired: small.baseline,
        throughputRatioPersisted: ratio(rate, persistedThroughput),
      },
      large: {
        latency: latencyLarge,
        throughput: rateLarge,
        latencyRatio: ratio(latencyLarge.median, relayOneWayLarge.median),
        throughputRatio: ratio(rateLarge, relayThroughputLarge),
        latencyRatioPersisted: ratio(latencyLarge.median, large.baseline.median),
        persistedPaired: large.baseline,
        throughputRatioPersisted: ratio(rateLarge, persistedThroughputLarge),
      },
    };
    log(
      `1. relay: small ${latency.median} ms (${ratio(latency.median, small.baseline.median)}x persisted, paired ${small.baseline.median} ms), ${rate} msg/s (${ratio(rate, persistedThroughput)}x persisted); large ${latencyLarge.median} ms, ${rateLarge} msg/s`,
    );
    agent.close();
    client.close();
  }

  // ── 2. fan-out to 1, 10, 30 clients ───────────────────────────────────────────────────────
  if (wants(2)) {
    const agent = await benchAgent(ws, agentKey, "fanout");
    const owner = await benchClient(ws, clientKey, "fanout");
    const sessionId = await newSession(owner);
    const clients: Peer[] = [owner];
    const rows: Json[] = [];
    // 30 at most: a session takes at most 32 attached clients (attachedClientsPerSession's hard maximum, decision 0060).
    for (const count of [1, 10, 30]) {
      while (clients.length < count) {
        const c = await benchClient(ws, clientKey, "fanout");
        await loadSession(c, sessionId);
        clients.push(c);
      }
      let seq = 0;
      const total = await sequential(n(200, 40), async () => {
        const i = seq++;
        const all = clients.map((c) => c.next((m) => m.params?.update?.f === `${count}-${i}`));
        agent.send({
          jsonrpc: "2.0",
          method: "session/update",
          params: {
            sessionId,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: SMALL }, f: `${count}-${i}` },
          },
        });
        await Promise.all(all);
      });
      rows.push({ clients: count, total, perClient: round(total.median / count) });
      log(`2. fan-out to ${count}: ${total.median} ms for all (${round(total.median / count)} ms per client)`);
    }
    const first = rows[0]?.perClient ?? 0;
    const last = rows.at(-1);
    results.scenarios.fanout = { rows, perClientGrowth: ratio(last?.perClient ?? 0, first) };
    for (const c of clients) c.close();
    agent.close();
  }

  // ── 3. permission round trip: a person, and a remembered rule with 10 / 1k / 10k rules ───
  if (wants(3)) {
    const agent = await benchAgent(ws, agentKey, "perm");
    const client = await benchClient(ws, clientKey, "perm");
    const sessionId = await newSession(client, "/bench/perm");
    // Permission requests are asked only during a turn: one prompt, left running for the scenario.
    await startTurn(client, agent, sessionId, "perm-turn");
    // Copies a person was asked: a rule-answered figure is a rule's only if none reached the client.
    let askedPeople = 0;
    client.onMessage = (m) => {
      if (m.method !== "session/request_permission") return;
      askedPeople++;
      client.send({ jsonrpc: "2.0", id: m.id, result: { outcome: { outcome: "selected", optionId: "ok" } } });
    };
    const options = [
      { optionId: "ok", name: "Allow", kind: "allow_once" },
      { optionId: "no", name: "Reject", kind: "reject_once" },
    ];
    const ask = async (i: number, command: string) => {
      const id = `p${i}-${command.length}`;
      agent.send({
        jsonrpc: "2.0",
        id,
        method: "session/request_permission",
        params: { sessionId, toolCall: { toolCallId: id, kind: "execute", rawInput: { command } }, options },
      });
      await agent.next((m) => m.id === id);
    };
    const personPaired = await paired(n(1000, 300), (i) => ask(i, `make target${i}`), persistedRttStep, true);
    const person = personPaired.gateway;
    const auto: Json[] = [];
    for (const count of QUICK ? [10, 10_000] : [10, 1000, 10_000]) {
      await seedRules(count);
      askedPeople = 0;
      const rulePaired = await paired(n(1000, 300), (i) => ask(i, "npm test"), persistedRttStep, true);
      const rule = rulePaired.gateway;
      if (askedPeople > 0) log(`3. WARNING: ${askedPeople} of the rule's requests were asked of the client, not answered by the rule`);
      auto.push({
        rules: count,
        askedPeople,
        latency: rule,
        ratioToRelayRtt: ratio(rule.median, relayRtt.median),
        ratioToPersistedRtt: ratio(rule.median, rulePaired.baseline.median),
        persistedPaired: rulePaired.baseline,
        cpu: rulePaired.cpu,
        ratioToPerson: ratio(rule.median, person.median),
      });
      log(
        `3. permission auto-answered with ${count} rules: ${rule.median} ms (${ratio(rule.median, rulePaired.baseline.median)}x persisted rtt, paired ${rulePaired.baseline.median} ms)`,
      );
    }
    results.scenarios.permission = {
      person: {
        latency: person,
        ratioToRelayRtt: ratio(person.median, relayRtt.median),
        ratioToPersistedRtt: ratio(person.median, personPaired.baseline.median),
        persistedPaired: personPaired.baseline,
        cpu: personPaired.cpu,
        ratioToEchoRtt: ratio(person.median, echoRtt.median),
      },
      auto,
    };
    log(
      `3. permission answered by a client: ${person.median} ms (${ratio(person.median, personPaired.baseline.median)}x persisted rtt, paired ${personPaired.baseline.median} ms)`,
    );
    log(
      `3. CPU per request answered by a client: ${personPaired.cpu?.gatewayUs} µs in the gateway's processes, ${personPaired.cpu?.baselineUs} µs per persisted round trip (${personPaired.cpu?.ratio}x)`,
    );
    agent.close();
    client.close();
  }

  // ── 4. concurrency: 1, 10, 100 sessions running turns at once ─────────────────────────────
  if (wants(4)) {
    const rows: Json[] = [];
    for (const count of QUICK ? [1, 10] : [1, 10, 100]) {
      const agent = await benchAgent(ws, agentKey, `conc${count}`);
      const prompts = new Map<string, Json>();
      agent.onMessage = (m) => {
        if (m.method === "initialize") agent.send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1, agentCapabilities: {} } });
        else if (m.method === "session/new")
          agent.send({ jsonrpc: "2.0", id: m.id, result: { sessionId: `c${count}-${prompts.size}-${Math.random()}` } });
        else if (m.method === "session/prompt") {
          for (let k = 0; k < 10; k++)
            agent.send({
              jsonrpc: "2.0",
              method: "session/update",
              params: {
                sessionId: m.params.sessionId,
                update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: SMALL } },
              },
            });
          agent.send({ jsonrpc: "2.0", id: m.id, result: { stopReason: "end_turn" } });
        }
      };
      const clients = await Promise.all(Array.from({ length: count }, () => benchClient(ws, clientKey, `conc${count}`)));
      const sessions = await Promise.all(clients.map((c) => newSession(c)));
      const turns = Math.max(1, Math.round(n(5, 2)));
      const t0 = now();
      await Promise.all(
        clients.map(async (c, k) => {
          for (let t = 0; t < turns; t++) {
            const id = `t${t}`;
            c.send({
              jsonrpc: "2.0",
              id,
              method: "session/prompt",
              params: { sessionId: sessions[k], prompt: [{ type: "text", text: "go" }] },
            });
            await c.next((m) => m.id === id);
          }
        }),
      );
      const seconds = (now() - t0) / 1000;
      rows.push({ sessions: count, turnsPerSecond: round((count * turns) / seconds, 1), seconds: round(seconds, 2) });
      log(`4. ${count} sessions: ${round((count * turns) / seconds, 1)} turns/s`);
      for (const c of clients) c.close();
      agent.close();
    }
    results.scenarios.concurrency = { rows };
  }

  // ── 5. attach/replay of 1k, 10k, 100k logged events; memory of workerd ────────────────────
  if (wants(5)) {
    const rows: Json[] = [];
    // The chunks are what an agent streams: text and nothing else (the index rides in the text), so
    // the log compacts as it would for a real agent; a tool call every 100 chunks breaks the message.
    // BENCH_REPLAY_SIZES overrides. 100,000 events take the gateway far longer to log than the bench
    // may run (about 15 ms an event on a shared machine), so that size is measured on a log written in
    // the object by the session's own compaction functions (replaySeeded, below).
    const sizes = process.env.BENCH_REPLAY_SIZES?.split(",").map(Number) ?? [1000, 10_000];
    for (const events of sizes) {
      const agent = await benchAgent(ws, agentKey, `replay${events}`);
      const owner = await benchClient(ws, clientKey, `replay${events}`);
      const sessionId = await newSession(owner);
      const indexOf = (m: Json) => {
        const text = m.params?.update?.content?.text ?? m.params?.update?.title;
        return typeof text === "string" ? Number(text.slice(text.indexOf("#") + 1)) : undefined;
      };
      await pipelined(
        events,
        (i) =>
          agent.send({
            jsonrpc: "2.0",
            method: "session/update",
            params: {
              sessionId,
              update:
                i % 100 === 99
                  ? { sessionUpdate: "tool_call", toolCallId: `r${i}`, title: `read #${i}`, kind: "read", status: "completed" }
                  : { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `${SMALL}#${i}` } },
            },
          }),
        owner,
        indexOf,
      );
      const rssBefore = workerdRss(gateway.pid);
      // Several attaches, each by a fresh client: the median is the figure (one load is one sample).
      const samples: number[] = [];
      let replayed = 0;
      for (let k = 0; k < n(5, 3); k++) {
        const late = await benchClient(ws, clientKey, `replay${events}`);
        replayed = 0;
        late.onMessage = (m) => {
          if (m.method === "session/update") replayed++;
        };
        const t0 = now();
        await loadSession(late, sessionId);
        samples.push(round(now() - t0, 1));
        late.close();
      }
      const ms = summarize(samples).median;
      const rssAfter = workerdRss(gateway.pid);
      rows.push({ events, replayed, ms, samples, rssBeforeMiB: rssBefore, rssAfterMiB: rssAfter });
      log(
        `5. replay of ${events} events: ${ms} ms median of ${samples.join(", ")} (${replayed} updates), workerd RSS ${rssBefore} → ${rssAfter} MiB`,
      );
      owner.close();
      agent.close();
    }
    results.scenarios.replay = { rows };
    // 100,000 events: the log is written inside the SessionObject by appendUpdate/maybeFold (what the
    // session runs on every update), then a client attaches with session/load (workerd test harness).
    // Full mode only (about 40 s); BENCH_REPLAY_SEEDED=<events> sets the size, or asks for it in quick mode.
    const seededEvents = process.env.BENCH_REPLAY_SEEDED ?? (QUICK ? "" : "100000");
    const seeded = seededEvents
      ? await vitestLine("test/workerd/compaction-replay.test.ts", "REPLAY", { REPLAY_EVENTS: seededEvents }, "replays a long")
      : undefined;
    results.scenarios.replaySeeded = seeded;
    if (seeded) log(`5. replay of ${seeded.events} events (log written in the object): ${seeded.ms} ms (${seeded.frames} updates)`);
  }

  // ── 6. tool-call reduction as the table grows ─────────────────────────────────────────────
  if (wants(6)) {
    const agent = await benchAgent(ws, agentKey, "toolcalls");
    const client = await benchClient(ws, clientKey, "toolcalls");
    const sessionId = await newSession(client);
    const rows: Json[] = [];
    let size = 0;
    const batch = 200;
    for (const target of QUICK ? [100, 2000] : [100, 1000, 10_000]) {
      // Grow the table to the target size with new tool calls...
      const grow = target - size;
      if (grow > 0) {
        const from = size;
        await pipelined(
          grow,
          (i) =>
            agent.send({
              jsonrpc: "2.0",
              method: "session/update",
              params: {
                sessionId,
                update: { sessionUpdate: "tool_call", toolCallId: `tc${from + i}`, title: "t", kind: "read", g: from + i },
              },
            }),
          client,
          (m) => m.params?.update?.g - from,
        );
        size = target;
      }
      // ...then time updates to existing rows, spread over the table. The first batch after the bulk
      // growth pays for its aftermath (WAL checkpoints, GC), whatever the table size; it is a warm-up.
      const updateBatch = (pass: number) =>
        pipelined(
          batch,
          (i) =>
            agent.send({
              jsonrpc: "2.0",
              method: "session/update",
              params: {
                sessionId,
                update: {
                  sessionUpdate: "tool_call_update",
                  toolCallId: `tc${(i * 7919) % size}`,
                  status: "in_progress",
                  u: `${pass}-${i}`,
                },
              },
            }),
          client,
          (m) => (m.params?.update?.u === `${pass}-${batch - 1}` ? batch - 1 : undefined),
        );
      await updateBatch(0);
      const t0 = now();
      await updateBatch(1);
      const perUpdate = round((now() - t0) / batch, 4);
      rows.push({ tableSize: size, msPerUpdate: perUpdate });
      log(`6. tool_call_update with ${size} tool calls: ${perUpdate} ms per update`);
    }
    results.scenarios.toolCalls = { rows, growth: ratio(rows.at(-1)?.msPerUpdate ?? 0, rows[0]?.msPerUpdate ?? 0) };
    agent.close();
    client.close();
  }

  // ── 7. stages inside the gateway: one update, one permission request (rule, client) ───────
  if (wants(7)) {
    const timings = await measureStages({
      ws,
      gatewayUrl: gateway.url,
      keys: gateway.keys,
      logFile: join(stateDir, "gateway.log"),
      count: n(200, 60),
    });
    results.stageTimings = timings;
    for (const [kind, path] of Object.entries(timings) as [string, Json][]) {
      log(
        `7. stages of ${kind} (${path.probes} probes, ${path.missing} incomplete): total ${path.total.median} ms median (unmarked probes: ${path.unmarked.median} ms)`,
      );
      for (const st of path.stages)
        log(`     ${String(st.median).padStart(6)} ms median, ${String(st.mean).padStart(6)} mean  ${st.stage}`);
    }
  }
} finally {
  await gateway.stop();
  await baseline.stop();
  rmSync(stateDir, { recursive: true, force: true });
}

results.load = `Machine load (1/5/15-minute load average on ${cpus().length} cores, shared with other work): ${loadAtStart.join(" / ")} at the start, ${loadavg()
  .map((x) => round(x, 2))
  .join(" / ")} at the end.`;
results.stages = stages(results);
results.cost = ONLY ? {} : await cost();
results.seconds = round((Date.now() - started) / 1000, 1);
results.targets = targets(results);
if (!ONLY) writeFileSync(join(ROOT, "bench", "results", QUICK ? "quick.json" : "latest.json"), `${JSON.stringify(results, null, 2)}\n`);
if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${JSON.stringify(results, null, 2)}\n`);
if (!QUICK && !ONLY) await writeReport(results);
log(`\nTargets:`);
for (const t of results.targets as Json[]) log(`  ${t.pass ? "PASS" : "MISS"}  ${t.name}: ${t.value} (target ${t.target})`);
log(`done in ${results.seconds} s`);
process.exit(0);

// ── helpers ─────────────────────────────────────────────────────────────────────────────────────
async function sequential(count: number, step: (i: number) => Promise<void>) {
  return summarize(await samplesOf(count, step));
}

async function samplesOf(count: number, step: (i: number) => Promise<void>, first = 0): Promise<number[]> {
  const warmup = Math.min(20, Math.floor(count / 10));
  for (let i = 0; i < warmup; i++) await step(-1 - first - i);
  const samples: number[] = [];
  for (let i = first; i < first + count; i++) {
    const t0 = now();
    await step(i);
    samples.push(now() - t0);
  }
  return samples;
}

/**
 * A gateway path and its baseline measured in alternating blocks (PAIRED_ROUNDS of each, the order
 * swapped every round), so both see the same minutes of a shared machine: a baseline measured once
 * at the start can be 40% off by the time a scenario runs. The targets read the ratio of these two.
 * `cpu`: also the CPU each side's server processes used per step (bench/cpu.ts), which the load does not move.
 */
async function paired(count: number, gateway: (i: number) => Promise<void>, baseline: (i: number) => Promise<void>, cpu = false) {
  const PAIRED_ROUNDS = 10;
  const per = Math.max(1, Math.round(count / PAIRED_ROUNDS));
  const steps = per + Math.min(20, Math.floor(per / 10)); // samplesOf's warm-up steps count too
  const g: number[] = [];
  const b: number[] = [];
  const used = { gateway: 0, baseline: 0 };
  const block = async (side: "gateway" | "baseline", first: number) => {
    const pid = side === "gateway" ? gatewayPid : baselinePid;
    const before = cpu ? cpuNs(pid) : 0;
    const samples = await samplesOf(per, side === "gateway" ? gateway : baseline, first);
    if (cpu) used[side] += cpuNs(pid) - before;
    (side === "gateway" ? g : b).push(...samples);
  };
  for (let k = 0; k < PAIRED_ROUNDS; k++) {
    const first = k * per;
    const order = k % 2 === 0 ? (["gateway", "baseline"] as const) : (["baseline", "gateway"] as const);
    for (const side of order) await block(side, first);
  }
  const perStep = (ns: number) => round(ns / 1000 / (steps * PAIRED_ROUNDS), 1);
  const cpuUsed = cpu
    ? { gatewayUs: perStep(used.gateway), baselineUs: perStep(used.baseline), ratio: ratio(used.gateway, used.baseline) }
    : undefined;
  return { gateway: summarize(g), baseline: summarize(b), cpu: cpuUsed };
}

/** Sends `count` messages without waiting and returns messages per second until the last arrives. */
async function pipelined(count: number, send: (i: number) => void, receiver: Peer, indexOf: (m: Json) => unknown): Promise<number> {
  const last = receiver.next((m) => indexOf(m) === count - 1, 300_000);
  const t0 = now();
  for (let i = 0; i < count; i++) send(i);
  await last;
  return round(count / ((now() - t0) / 1000), 0);
}

async function oneWay(a: Peer, b: Peer, d: string, count: number) {
  return sequential(count, async (i) => {
    const arrived = b.next((m) => m.w === i);
    a.send({ w: i, d });
    await arrived;
  });
}

async function throughput(a: Peer, b: Peer, d: string, count: number) {
  return pipelined(
    count,
    (i) => a.send({ t: i, d }),
    b,
    (m) => m.t,
  );
}

/** Filler rules that never match, and one that does; then the rules object reloads. */
async function seedRules(total: number) {
  const values: string[] = [];
  for (let i = 0; i < total - 1; i++) {
    values.push(
      `('rule_bench_${String(i).padStart(6, "0")}', 't_dev', 'allow', '{"type":"command","prefix":["tool${i}","run"]}', 'command tool${i} run', 'filler', ${Date.now()})`,
    );
  }
  const sql = ["DELETE FROM decision_rules WHERE tenant_id = 't_dev';"];
  for (let i = 0; i < values.length; i += 500) {
    sql.push(
      `INSERT INTO decision_rules (id, tenant_id, decision, matcher, matcher_text, description, created_at) VALUES ${values.slice(i, i + 500).join(",")};`,
    );
  }
  const file = join(stateDir, "rules.sql");
  writeFileSync(file, sql.join("\n"));
  await wrangler(["d1", "execute", "DB", "--local", "--persist-to", join(stateDir, "gateway"), "--file", file], "seeding the bench rules");
  const response = await fetch(`${gateway.url}/v1/rules`, {
    method: "POST",
    headers: { Authorization: `Bearer ${gateway.keys.admin}`, "Content-Type": "application/json" },
    body: JSON.stringify({ decision: "allow", matcher: { type: "command", prefix: ["npm", "test"] } }),
  });
  if (response.status !== 201) throw new Error(`creating the bench rule failed: ${response.status}`);
}

async function startBaseline(port: number, persistTo: string) {
  const config = join(ROOT, "bench", "baseline", "wrangler.toml");
  const args = ["dev", "--config", config, "--ip", "127.0.0.1", "--port", String(port), "--persist-to", persistTo];
  const child = spawn(WRANGLER, args, { cwd: ROOT, env: wranglerEnv(), stdio: "ignore", detached: true });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, child, 60_000);
  return { url, pid: child.pid ?? 0, stop: () => stopProcessGroup(child) };
}

/** Resident memory (MiB) of the workerd processes under the gateway's wrangler. */
function workerdRss(rootPid: number): number {
  let kib = 0;
  const children = (pid: number): number[] => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    stack.push(...children(pid));
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      if (/^Name:\s+workerd/m.test(status)) kib += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      // exited
    }
  }
  return round(kib / 1024, 1);
}

function machine(): Json {
  const cpu = cpus()[0]?.model ?? "unknown";
  let workerd = "unknown";
  try {
    const dir = readdirSync(join(ROOT, "node_modules", "@cloudflare")).find((d) => d.startsWith("workerd-"));
    workerd = dir
      ? (JSON.parse(readFileSync(join(ROOT, "node_modules", "@cloudflare", dir, "package.json"), "utf8")) as Json).version
      : workerd;
  } catch {
    // unknown
  }
  return {
    cpu,
    cores: cpus().length,
    memoryGiB: round(totalmem() / 1024 ** 3, 1),
    node: process.version,
    workerd,
    date: new Date().toISOString(),
  };
}

/**
 * Where the time of one update and one permission request goes, by difference between paths
 * measured in this run: each path adds one stage to the one before it.
 */
function stages(r: Json): Json {
  const b = r.baseline;
  const s = r.scenarios;
  const rule10 = (s.permission?.auto ?? []).find((x: Json) => x.rules === 10)?.latency.median ?? 0;
  const person = s.permission?.person?.latency.median ?? 0;
  const update = s.relay?.small?.latency.median ?? 0;
  return {
    update: [
      { stage: "edge Worker + one object hop, both ways of the socket (relay one way)", ms: b.relayOneWay.median },
      { stage: "one SQLite commit before the send (persisted − plain relay)", ms: round(b.persistedOneWay.median - b.relayOneWay.median) },
      { stage: "the edge's checks and routing + session logic (gateway − persisted relay)", ms: round(update - b.persistedOneWay.median) },
    ],
    permission: [
      { stage: "edge + object hop, there and back (relay round trip)", ms: b.relayRtt.median },
      { stage: "SQLite commits (persisted − plain relay round trip)", ms: round(b.persistedRtt.median - b.relayRtt.median) },
      {
        stage: "the edge's checks + SessionObject, decided from the session's rules cache (rule, 10 rules − persisted rtt)",
        ms: round(rule10 - b.persistedRtt.median),
      },
      { stage: "asking a client instead: copy out, answer back (client − rule)", ms: round(person - rule10) },
    ],
  };
}

/** Rows written per update and per permission request, counted by the runtime in the real objects (test/workerd/compaction-cost.test.ts). */
/** Runs one workerd test file and returns the JSON it printed after `mark` (or undefined). */
async function vitestLine(file: string, mark: string, env: Record<string, string> = {}, test?: string): Promise<Json | undefined> {
  const out = await new Promise<string>((resolve) => {
    const child = spawn(join(ROOT, "node_modules", ".bin", "vitest"), ["run", file, ...(test ? ["-t", test] : [])], {
      cwd: ROOT,
      env: { ...wranglerEnv(), ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    child.stdout.on("data", (d) => (text += String(d)));
    child.on("close", () => resolve(text));
  });
  // vitest colours its output: the figures are whatever follows the mark on its line.
  const line = out.split("\n").find((l) => l.includes(`${mark} {`));
  return line ? (JSON.parse(line.slice(line.indexOf(`${mark} {`) + mark.length + 1)) as Json) : undefined;
}

async function cost(): Promise<Json> {
  const rows: Json = (await vitestLine("test/workerd/compaction-cost.test.ts", "COST")) ?? {};
  // Platform prices (Workers Paid), developers.cloudflare.com/durable-objects/platform/pricing: DO requests
  // $0.15/M (RPC call = 1 request, incoming WebSocket messages billed 20:1) and duration $12.50/M GB-s,
  // read again 2026-12-07 (unchanged since 2026-12-03); SQLite rows written $1.00/M as read 2026-12-03.
  // Workers requests $0.30/M (one per connection). D1 and the bill at scale: bench/scale-cost.ts.
  const prices = { doRequestPerM: 0.15, rowWrittenPerM: 1.0, durationPerMGbS: 12.5, read: "2026-12-07" };
  // Per update (a dial-in agent, the session granted to the edge): the agent's frame arrives at the
  // edge Worker, whose invocation holds the connection (one Workers request per connection, and
  // CPU time, $0.02/M CPU-ms: about 0.1 ms an update, $0.002/M, left out); the edge's batch is one
  // incoming WebSocket message at the SessionObject (1/20 of a request); its ack and the send to the
  // client's edge are outgoing and not billed as requests. No object-to-object call. An edge link is
  // opened at a session's first direct batch after 10 s without one (one request, and that batch
  // goes by RPC: one more). Duration: the session awake ~1 ms at 128 MB.
  const update = rows.perUpdate ? round(rows.perUpdate.session + rows.perUpdate.agent, 3) : null;
  const permission = rows.perPermission ? round(rows.perPermission.session + rows.perPermission.agent, 3) : null;
  const perMillion = (rowsEach: number, requestsEach: number, objects: number) =>
    round(rowsEach * prices.rowWrittenPerM + requestsEach * prices.doRequestPerM + objects * 0.001 * 0.125 * prices.durationPerMGbS, 3);
  return {
    prices,
    rows,
    perUpdate: {
      rowsWritten: update,
      objectCalls: 0,
      doRequests: 0.05,
      dollarsPerMillion: update === null ? null : perMillion(update, 0.05, 1),
    },
    // Per permission: the agent's request on the control socket at the AgentObject (1/20), its batch
    // on the link and the ack (2/20), the client's answer at the SessionObject (1/20), the answer on
    // the link to the AgentObject and its `sent` (2/20). No call to the RulesObject: the session decides from its cached rules (and a
    // tenant with no rules has none to decide).
    perPermission: {
      rowsWritten: permission,
      objectCalls: 2,
      doRequests: 0.3,
      dollarsPerMillion: permission === null ? null : perMillion(permission, 0.3, 2),
    },
  };
}
