// Where the time of one update and one permission request goes, measured inside the gateway (issue
// 15, "measure first"). The bench's gateway runs with STAGE_TIMING=1: its hooks (protocol/stage-timing.ts)
// log the time a frame carrying a probe mark (`stagemark-<n>`) crosses each boundary. Probes go one at
// a time, so nothing else is in flight, and the gateway prints its readings only after the last one;
// each stage is the interval between two boundaries, and its
// median over the probes is what the report shows. The two ends are the bench's own clock (the same
// wall clock as workerd's, on this machine). Local workerd's clock runs while code runs (whole
// milliseconds), so each stage holds its own JavaScript and SQLite time; on Cloudflare the clock
// stands still between I/O, and that time would land in the interval after it (docs/decisions/0008-performance.md, "Measuring the path").
// Unmarked probes alternate with the marked ones: their totals show what the hooks' log lines cost.

import { existsSync, readFileSync } from "node:fs";
import { STAGE_FLUSH, STAGE_LINE, STAGE_MARK } from "../protocol/stage-timing.ts";
import { type Json, type Peer, benchAgent, benchClient, newSession, startTurn } from "./peer.ts";
import { round } from "./stats.ts";

/** A path: its boundaries in order ("bench.*" are the bench's own readings), and the name of each interval between two. */
interface Path {
  boundaries: string[];
  stages: string[];
}

const UPDATE: Path = {
  boundaries: ["bench.send", "agent.in", "session.in", "session.out", "edge.in", "edge.out", "bench.client"],
  stages: [
    "agent's socket → edge (wrangler's proxy, workerd)",
    "edge: checks, hand-off → SessionObject (edge link, the session granted)",
    "SessionObject: parse, log append, fold, send (JavaScript and SQLite, no I/O)",
    "SessionObject → edge: the log commit (output gate) and the socket",
    "edge: id rewrite, send to the client (JavaScript, no I/O)",
    "edge → client's socket (workerd, wrangler's proxy)",
  ],
};

const RULE: Path = {
  boundaries: ["bench.send", "agent.in", "session.in", "session.toAgent", "edge.toAgent", "agent.out", "bench.agent"],
  stages: [
    "agent's socket → edge (wrangler's proxy, workerd)",
    "edge: checks, hand-off → SessionObject (edge link, the session granted; else through the AgentObject)",
    // Since decision 0058 a reader answered under the session's clean lease does no I/O here (before it, 0046: the request's row committed, then the root's gate).
    "SessionObject: log, tool call, rules decision, the unseen-changes gate (under the session's clean lease: no call; else the tenant root's, RPC and its commit); answer handed on",
    "SessionObject → edge: the commit (output gate) and the edge link",
    "edge: open request taken, send to the agent (JavaScript, no I/O)",
    "edge → agent's socket (workerd, wrangler's proxy)",
  ],
};

const CLIENT: Path = {
  boundaries: [
    "bench.send",
    "agent.in",
    "session.in",
    "session.out",
    "edge.in",
    "edge.out",
    "bench.client",
    "edge.answer",
    "session.answer",
    "session.toAgent",
    "edge.toAgent",
    "agent.out",
    "bench.agent",
  ],
  stages: [
    "agent's socket → edge (wrangler's proxy, workerd)",
    "edge: checks, hand-off → SessionObject (edge link, the session granted; else through the AgentObject)",
    "SessionObject: log, tool call, no rule applies, the request's log row, copy sent (JavaScript and SQLite, no I/O)",
    "SessionObject → edge: the commit (output gate) and the socket",
    "edge: id rewrite, send to the client (JavaScript, no I/O)",
    "edge → client's socket; the client answers at once",
    "client's answer → edge (wrangler's proxy, workerd)",
    "edge: id rewrite; socket → SessionObject",
    "SessionObject: answer judged, the request's row resolved, answer handed on (JavaScript and SQLite, no I/O)",
    "SessionObject → edge: the commit (output gate) and the edge link",
    "edge: open request taken, send to the agent (JavaScript, no I/O)",
    "edge → agent's socket (workerd, wrangler's proxy)",
  ],
};

const wall = () => performance.timeOrigin + performance.now();

export interface StageProbeOptions {
  ws: string;
  gatewayUrl: string;
  keys: { client: string; agent: string; admin: string };
  /** The gateway's output (startLocalGateway's logFile), where the stage lines are. */
  logFile: string;
  /** Probes of each kind. */
  count: number;
}

/** Sends `count` probes of each kind, one at a time, and returns the median of each stage. */
export async function measureStages(o: StageProbeOptions): Promise<Json> {
  // A rule for the rule-answered probes; the client-answered probes ask for a command no rule matches.
  const created = await fetch(`${o.gatewayUrl}/v1/rules`, {
    method: "POST",
    headers: { Authorization: `Bearer ${o.keys.admin}`, "Content-Type": "application/json" },
    // A form the table understands (npm run <script>): it reads the project, so the rule path includes the
    // unseen-changes check (decision 0046) as a real rule's does, and notes nothing, so every probe is the rule's.
    body: JSON.stringify({ decision: "allow", matcher: { type: "command", prefix: ["npm", "run", "stageprobe"] } }),
  });
  if (created.status !== 201) throw new Error(`creating the stage probes' rule failed: ${created.status}`);
  const agent = await benchAgent(o.ws, o.keys.agent, "stages");
  const client = await benchClient(o.ws, o.keys.client, "stages");
  const sessionId = await newSession(client, "/bench/stages");
  await startTurn(client, agent, sessionId, "stage-turn");

  const bench = new Map<string, Record<string, number>>(); // mark → the bench's readings
  let next = 1;
  /** One probe, marked or not; returns its time at the bench, from the agent's send to the arrival at the far end. */
  const probe = async (kind: "update" | "rule" | "client", measured: boolean): Promise<number> => {
    const n = next++;
    const mark = measured ? `${STAGE_MARK}${n}` : `warm-${n}`;
    const readings: Record<string, number> = {};
    if (measured) bench.set(String(n), readings);
    if (kind === "update") {
      const arrived = client.next((m) => m.params?.update?.content?.text === mark);
      readings["bench.send"] = wall();
      agent.send({
        jsonrpc: "2.0",
        method: "session/update",
        params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: mark } } },
      });
      await arrived;
      readings["bench.client"] = wall();
      return wall() - (readings["bench.send"] ?? 0);
    }
    if (kind === "client") answerAtOnce(client, mark, readings);
    const id = `stage-${n}`;
    const answered = agent.next((m) => m.id === id);
    readings["bench.send"] = wall();
    agent.send({
      jsonrpc: "2.0",
      id,
      method: "session/request_permission",
      params: {
        sessionId,
        toolCall: { toolCallId: mark, kind: "execute", rawInput: { command: kind === "rule" ? "npm run stageprobe" : "make stageprobe" } },
        options: [
          { optionId: `ok-${mark}`, name: "Allow", kind: "allow_once" },
          { optionId: `no-${mark}`, name: "Reject", kind: "reject_once" },
        ],
      },
    });
    await answered;
    readings["bench.agent"] = wall();
    return (readings["bench.agent"] ?? 0) - (readings["bench.send"] ?? 0);
  };

  const results: Json = {};
  for (const [kind, path] of [
    ["update", UPDATE],
    ["rule", RULE],
    ["client", CLIENT],
  ] as const) {
    for (let i = 0; i < 5; i++) await probe(kind, false);
    // Marked and unmarked probes alternate: the unmarked ones show what the hooks' log lines cost.
    const first = next;
    const unmarked: number[] = [];
    for (let i = 0; i < o.count; i++) {
      await probe(kind, true);
      unmarked.push(await probe(kind, false));
    }
    results[kind] = { path, first, last: next - 1, unmarked };
  }
  // The gateway holds its readings until this update: it crosses the edge and the SessionObject,
  // which share the isolate with the AgentObject in local workerd, and prints what all of them recorded.
  const flushed = client.next((m) => m.params?.update?.content?.text === STAGE_FLUSH);
  agent.send({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: STAGE_FLUSH } } },
  });
  await flushed;
  agent.close();
  client.close();

  const gateway = await stageLines(o.logFile, String(next - 1), "agent.out");
  const out: Json = {};
  for (const [kind, r] of Object.entries(results) as [string, { path: Path; first: number; last: number; unmarked: number[] }][]) {
    out[kind] = {
      ...summarizePath(r.path, r.first, r.last, bench, gateway),
      unmarked: { median: median(r.unmarked), mean: mean(r.unmarked) },
    };
  }
  return out;
}

/** The client answers the probe's copy at once, with the option the agent offered. */
function answerAtOnce(client: Peer, mark: string, readings: Record<string, number>): void {
  void client
    .next((m) => m.method === "session/request_permission" && m.params?.toolCall?.toolCallId === mark)
    .then((copy) => {
      readings["bench.client"] = wall();
      client.send({ jsonrpc: "2.0", id: copy.id, result: { outcome: { outcome: "selected", optionId: `ok-${mark}` } } });
    });
}

/** The gateway's stage lines, by mark, in the order they were logged; waits (bounded) for the last probe's `lastStage`. */
async function stageLines(logFile: string, lastMark: string, lastStage: string): Promise<Map<string, { stage: string; t: number }[]>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const byMark = new Map<string, { stage: string; t: number }[]>();
    const text = existsSync(logFile) ? readFileSync(logFile, "utf8") : "";
    const line = new RegExp(`${STAGE_LINE}(\\{[^}]*\\})`, "g");
    for (const match of text.matchAll(line)) {
      const entry = parsedLine(match[1]);
      // workerd's own warnings can land in the middle of a line: such a reading is dropped, not guessed.
      if (!entry) continue;
      for (const mark of entry.marks) {
        const list = byMark.get(mark) ?? [];
        list.push({ stage: entry.stage, t: entry.t });
        byMark.set(mark, list);
      }
    }
    if (byMark.get(lastMark)?.some((e) => e.stage === lastStage) || Date.now() > deadline) return byMark;
    await new Promise((r) => setTimeout(r, 200));
  }
}

function parsedLine(text: string | undefined): { stage: string; marks: string[]; t: number } | undefined {
  try {
    const entry = JSON.parse(text ?? "") as { stage?: unknown; marks?: unknown; t?: unknown };
    const ok = typeof entry.stage === "string" && Array.isArray(entry.marks) && typeof entry.t === "number";
    return ok ? (entry as { stage: string; marks: string[]; t: number }) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Each probe's readings along the path: for each boundary, the first reading of it at or after the
 * previous one's (a stage may be crossed again later: the resolution notice after a copy).
 */
function summarizePath(
  path: Path,
  first: number,
  last: number,
  bench: Map<string, Record<string, number>>,
  gateway: Map<string, { stage: string; t: number }[]>,
): Json {
  const intervals: number[][] = path.stages.map(() => []);
  const totals: number[] = [];
  let missing = 0;
  for (let n = first; n <= last; n++) {
    const mark = String(n);
    const own = bench.get(mark);
    if (!own) continue; // an unmarked probe

    const logged = gateway.get(mark) ?? [];
    const times: number[] = [];
    for (const boundary of path.boundaries) {
      const previous = times.at(-1) ?? -Infinity;
      const fromBench = boundary.startsWith("bench.");
      const t = fromBench ? own[boundary] : logged.find((e) => e.stage === boundary && e.t >= Math.floor(previous))?.t;
      if (t === undefined) break;
      // workerd's reading is a whole millisecond, truncated: its middle is the unbiased guess (else a leg
      // from the bench's clock into the gateway reads half a millisecond short, the next one as long).
      times.push(fromBench ? t : t + 0.5);
    }
    if (times.length !== path.boundaries.length) {
      missing++;
      continue;
    }
    for (let k = 0; k < path.stages.length; k++) intervals[k]?.push((times[k + 1] ?? 0) - (times[k] ?? 0));
    totals.push((times.at(-1) ?? 0) - (times[0] ?? 0));
  }
  return {
    probes: totals.length,
    missing,
    total: { median: median(totals), mean: mean(totals) },
    stages: path.stages.map((stage, k) => ({
      stage,
      from: path.boundaries[k],
      to: path.boundaries[k + 1],
      median: median(intervals[k] ?? []),
      mean: mean(intervals[k] ?? []),
    })),
  };
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return round(sorted[Math.floor(sorted.length / 2)] ?? 0, 2);
}

function mean(xs: number[]): number {
  return xs.length === 0 ? 0 : round(xs.reduce((a, b) => a + b, 0) / xs.length, 2);
}
