// npm run test:reliability: runs the model-based fuzz and the fault tests in workerd, sums the
// counters each test file prints (a `RELIABILITY {json}` line) and prints one summary. Exits non-zero
// if a test failed or any request was lost, answered twice, or any turn was left stuck.
// FUZZ_RUNS sets the fuzz sequences (default 100). The last soak result (.ci/soak.json), if any, is
// shown beside it.

import { spawn } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

interface Counters {
  suite: string;
  sequences: number;
  steps: number;
  invariantsChecked: number;
  faults: Record<string, number>;
  requestsAnswered: number;
  requestsLostOrTwice: number;
  stuckTurns: number;
}

const ROOT = join(import.meta.dirname, "..");
const runs = process.env.FUZZ_RUNS ?? "100";
const faultFiles = readdirSync(join(ROOT, "test", "workerd"))
  .filter((f) => f.startsWith("faults-") && f.endsWith(".test.ts"))
  .map((f) => `test/workerd/${f}`);
const files = ["test/workerd/model-fuzz.test.ts", ...faultFiles];

const vitest = spawn(join(ROOT, "node_modules", ".bin", "vitest"), ["run", "--project", "workerd", ...files], {
  cwd: ROOT,
  env: { ...process.env, FUZZ_RUNS: runs },
  stdio: ["ignore", "pipe", "inherit"],
});
let output = "";
vitest.stdout.on("data", (chunk: Buffer) => {
  output += chunk.toString();
  process.stdout.write(chunk);
});
const code = await new Promise<number>((resolve) => vitest.on("close", (c) => resolve(c ?? 1)));

// eslint-disable-next-line no-control-regex -- vitest colours its output
const plain = output.replace(/\u001b\[[0-9;]*m/g, "");
const lines = [...plain.matchAll(/RELIABILITY (\{.*\})/g)].map((m) => JSON.parse(m[1] ?? "{}") as Counters);
const total = (key: "sequences" | "steps" | "invariantsChecked" | "requestsAnswered" | "requestsLostOrTwice" | "stuckTurns") =>
  lines.reduce((sum, l) => sum + (l[key] ?? 0), 0);
const faults: Record<string, number> = {};
for (const l of lines) for (const [kind, n] of Object.entries(l.faults ?? {})) faults[kind] = (faults[kind] ?? 0) + n;
const fuzz = lines.filter((l) => l.suite === "model-fuzz");
const count = (pattern: RegExp) => Number(pattern.exec(plain)?.[1] ?? 0);
const tests = {
  passed: count(/Tests\s.*?(\d+) passed/),
  failed: count(/Tests\s.*?(\d+) failed/),
  knownBugs: count(/Tests\s.*?(\d+) expected fail/),
  skipped: count(/Tests\s.*?(\d+) skipped/),
};
const lost = total("requestsLostOrTwice");
const stuck = total("stuckTurns");

const out = [
  "",
  "Reliability summary",
  `  model-based fuzz      ${fuzz.reduce((s, l) => s + l.sequences, 0)} sequences, ${fuzz.reduce((s, l) => s + l.steps, 0)} steps (FUZZ_RUNS=${runs}, plus the fixed sequences)`,
  `  fault scenarios       ${lines.filter((l) => l.suite !== "model-fuzz").reduce((s, l) => s + l.sequences, 0)} sessions in ${faultFiles.length} files`,
  `  faults injected       ${Object.entries(faults)
    .sort(([, a], [, b]) => b - a)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ")}`,
  `  invariants checked    ${total("invariantsChecked")}`,
  `  requests answered     ${total("requestsAnswered")} (each checked to be answered exactly once)`,
  `  lost or answered twice ${lost}`,
  `  stuck turns           ${stuck}`,
  `  tests                 ${tests.passed} passed, ${tests.failed} failed, ${tests.knownBugs} known bugs kept as failing cases, ${tests.skipped} skipped`,
];
const soakFile = join(ROOT, ".ci", "soak.json");
if (existsSync(soakFile)) out.push(`  last soak             ${readFileSync(soakFile, "utf8").trim()}`);
process.stdout.write(`${out.join("\n")}\n`);
process.exit(code !== 0 || lost > 0 || stuck > 0 ? 1 : 0);
