// Several bench results side by side in one Markdown table, read against today's goals
// (bench/targets.ts): the before/after tables of BENCHMARKS.md. `node bench/report.ts compare <label>=<result.json> …`.

import { streamP99Ratio, targets } from "./targets.ts";

type Json = Record<string, any>;

export interface LabelledRun {
  label: string;
  r: Json;
}

const rule = (r: Json, rules: number) => (r.scenarios?.permission?.auto ?? []).find((x: Json) => x.rules === rules);
const msAndRatio = (ms: number | undefined, x: number | undefined) => (ms === undefined ? "—" : `${ms} ms (${x}x)`);
const ROWS: [string, (r: Json) => string][] = [
  ["load at start → end (1 min)", (r) => loadOf(r)],
  [
    "stream latency, 100 B (vs paired persisted)",
    (r) => msAndRatio(r.scenarios?.relay?.small?.latency?.median, r.scenarios?.relay?.small?.latencyRatioPersisted),
  ],
  ["stream p99 (vs paired persisted p99)", (r) => msAndRatio(r.scenarios?.relay?.small?.latency?.p99, streamP99Ratio(r))],
  [
    "stream throughput (vs persisted)",
    (r) => `${r.scenarios?.relay?.small?.throughput} msg/s (${r.scenarios?.relay?.small?.throughputRatioPersisted}x)`,
  ],
  ["permission by a rule, 10 rules", (r) => msAndRatio(rule(r, 10)?.latency?.median, rule(r, 10)?.ratioToPersistedRtt)],
  ["permission by a rule, 10,000 rules", (r) => msAndRatio(rule(r, 10_000)?.latency?.median, rule(r, 10_000)?.ratioToPersistedRtt)],
  [
    "permission answered by a client at once",
    (r) => msAndRatio(r.scenarios?.permission?.person?.latency?.median, r.scenarios?.permission?.person?.ratioToPersistedRtt),
  ],
  ["persisted relay round trip (paired with the client's)", (r) => `${r.scenarios?.permission?.person?.persistedPaired?.median} ms`],
  [
    "rows per update / client-answered / rule-answered request",
    (r) => `${r.cost?.rows?.perUpdate?.session} / ${r.cost?.rows?.perPermission?.session} / ${r.cost?.rows?.perRuleAnswered?.session}`,
  ],
  ["replay of 10k events", (r) => `${(r.scenarios?.replay?.rows ?? []).find((x: Json) => x.events === 10_000)?.ms} ms`],
  ["goals met (issue 40)", (r) => `${targets(r).filter((t) => t.pass).length} of ${targets(r).length}`],
];

export function compareTable(runs: LabelledRun[]): string {
  const head = `| | ${runs.map((x) => x.label).join(" | ")} |\n|---|${runs.map(() => "---").join("|")}|\n`;
  return head + ROWS.map(([name, cell]) => `| ${name} | ${runs.map((x) => cell(x.r)).join(" | ")} |\n`).join("");
}

/** The 1-minute load average at the start and the end, from the run's load sentence. */
function loadOf(r: Json): string {
  const figures = /: ([\d.]+) \/ [\d.]+ \/ [\d.]+ at the start, ([\d.]+) \//.exec(String(r.load ?? ""));
  return figures ? `${figures[1]} → ${figures[2]}` : "—";
}
