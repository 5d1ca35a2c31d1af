// The goals a bench result is read against, computed from the result alone: the run prints them, and
// BENCHMARKS.md (bench/report.ts) and a before/after table (bench/compare.ts) recompute them from
// any stored result, so an older run is read against today's goals.

type Json = Record<string, any>;

export type Target = { name: string; value: string; target: string; pass: boolean };

/**
 * Issue 40's goals: every guarantee at the cost of a bare persisted relay, each a ratio to a baseline
 * measured in the same run (the latency ones paired, see `paired` in bench/run.ts). The replay, rows
 * and flatness goals are the project's first ones (docs/decisions/0008-performance.md).
 */
export function targets(r: Json): Target[] {
  const relay = r.scenarios?.relay ?? {};
  const fanout = r.scenarios?.fanout ?? {};
  const replayAt = (events: number) => (r.scenarios?.replay?.rows ?? []).find((x: Json) => x.events === events);
  const replay10k = replayAt(10_000);
  const replay100k = replayAt(100_000) ?? r.scenarios?.replaySeeded;
  const ruleAt = (rules: number) => (r.scenarios?.permission?.auto ?? []).find((x: Json) => x.rules === rules);
  const person = r.scenarios?.permission?.person;
  return [
    atLeast("stream throughput vs persisted relay", relay.small?.throughputRatioPersisted, 1.0),
    atMost("stream latency median vs persisted relay", relay.small?.latencyRatioPersisted, 1.1),
    atMost("stream latency p99 vs persisted relay's p99", streamP99Ratio(r), 2),
    ...[10, 10_000].map((rules) =>
      atMost(`permission answered by a rule, ${rules} rules, vs persisted relay round trip`, ruleAt(rules)?.ratioToPersistedRtt, 0.8),
    ),
    atMost("permission answered by a client at once vs persisted relay round trip", person?.ratioToPersistedRtt, 1.1),
    { name: "attach with replay of 10k events", value: `${replay10k?.ms} ms`, target: "≤ 150 ms", pass: (replay10k?.ms ?? 1e9) <= 150 },
    ...(replay100k
      ? [
          {
            name: `attach with replay of 100k events${replayAt(100_000) ? "" : " (log written in the object, §5)"}`,
            value: `${replay100k.ms} ms`,
            target: "≤ 1000 ms",
            pass: replay100k.ms <= 1000,
          },
        ]
      : []),
    {
      name: "rows written per update (agent_message_chunk)",
      value: `${r.cost?.perUpdate?.rowsWritten}`,
      target: "≤ 1",
      pass: (r.cost?.perUpdate?.rowsWritten ?? 99) <= 1,
    },
    {
      name: "rows written per permission request (answered by a client)",
      value: `${r.cost?.perPermission?.rowsWritten}`,
      target: "≤ 3",
      pass: (r.cost?.perPermission?.rowsWritten ?? 99) <= 3,
    },
    atMost("fan-out per-client cost, largest vs 1 client", fanout.perClientGrowth, 1.5, " (flat)"),
    atMost("tool_call_update cost, largest table vs smallest", r.scenarios?.toolCalls?.growth, 1.5, " (flat)"),
  ];
}

/** The stream's p99 one way against the persisted relay's p99 measured in the same alternating blocks. */
export function streamP99Ratio(r: Json): number | undefined {
  const small = r.scenarios?.relay?.small;
  const own = small?.latency?.p99;
  const floor = small?.persistedPaired?.p99;
  return typeof own === "number" && typeof floor === "number" && floor > 0 ? Math.round((own / floor) * 100) / 100 : undefined;
}

function atMost(name: string, value: number | null | undefined, goal: number, note = ""): Target {
  return { name, value: `${value}x`, target: `≤ ${goal}x${note}`, pass: typeof value === "number" && value <= goal };
}

function atLeast(name: string, value: number | null | undefined, goal: number): Target {
  return { name, value: `${value}x`, target: `≥ ${goal}x`, pass: typeof value === "number" && value >= goal };
}
