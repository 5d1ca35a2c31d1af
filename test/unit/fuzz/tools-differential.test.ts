// The proof that a prefix rule covers only harmless argv, with the real tools as the judge: commands
// generated from each tool's real option grammar — full names, abbreviations, short clusters,
// `=` and separate values, `--` passthrough, extra positionals, config keys, paths inside and outside
// — are decided under an "always allow" of `<tool> <subcommand>` scoped to a throwaway project;
// every one the engine allows is run for real under strace (tools-sandbox.ts) and must run no
// program but the tool, its helpers and the project's scripts, and read or write nothing outside.
// FUZZ_RUNS sets the cases per tool (1,000 in `npm test`, 20,000 in `npm run test:fuzz`); every
// counterexample ever found is kept in test/fixtures/tools-differential-cases.json and run first.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fixed from "../../fixtures/tools-differential-cases.json" with { type: "json" };
import { type Rule, compileRules, decide } from "../../../protocol/rules";
import { TOOLS } from "../../../protocol/rules/tools";
import { ToolsSandbox, installed } from "./tools-sandbox";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
/** cargo compiles: its distinct allowed commands are run up to this many times per run of the suite. */
const CARGO_REAL_RUNS = RUNS > 1000 ? 60 : 12;
const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

let sandbox: ToolsSandbox;
beforeAll(() => {
  for (const tool of ["strace", "git", "make", "npm", "cargo"])
    if (!installed(tool))
      throw new Error(
        `the real-tool differential needs ${tool}: apt-get install -y ${tool} (npm test's set-up step, scripts/test-setup.ts, does it as root)`,
      );
  sandbox = new ToolsSandbox();
});
afterAll(() => sandbox?.dispose());

/** Whether the engine allows argv under an always-allow of `prefix` made in the sandbox's project. */
function engineAllows(prefix: string[], argv: string[]): boolean {
  const rule: Rule = { id: "r", decision: "allow", matcher: { type: "command", prefix }, scope: { project: sandbox.project } };
  const toolCall = { toolCallId: "t", kind: "execute", rawInput: { command: argv, cwd: sandbox.project } };
  return decide(compileRules([rule]), { toolCall, options: OPTIONS, cwd: sandbox.project, agent: "a", now: 1 }).decision === "allow";
}

/** The words a generator can put after `<tool> <sub>`, built once the sandbox's paths are known. */
interface ToolGen {
  subs: string[];
  /** Long options of the real tool (harmless and not), without values. */
  long: string[];
  /** Long options that take a value. */
  valued: string[];
  /** Letters of the real tool's short options. */
  short: string;
  /** Words that stand alone: positionals, config forms, targets. */
  words: () => string[];
}

const values = () => [
  `${sandbox.outside}/secret`,
  `${sandbox.outside}/evil.sh`,
  `${sandbox.outside}/evil.mk`,
  `${sandbox.outside}/other`,
  `${sandbox.outside}/npmrc`,
  `--require=${sandbox.outside}/evil.js`,
  "../outside/secret",
  `${sandbox.home}/.ssh/id_rsa`,
  "src/a.txt",
  "src",
  "HEAD",
  "1",
  "4",
];

const GENERATORS: Record<string, ToolGen> = {
  git: {
    subs: ["status", "diff", "log", "show", "blame", "ls-files", "rev-parse", "shortlog", "branch"],
    long: [
      "short",
      "branch",
      "porcelain",
      "stat",
      "cached",
      "name-only",
      "oneline",
      "graph",
      "all",
      "patch",
      "ext-diff",
      "no-index",
      "textconv",
      "no-ext-diff",
      "list",
      "show-toplevel",
      "paginate",
      "others",
      "exclude-standard",
      "porcelain",
      "root",
      "follow",
      "summary",
      "numbered",
      "ignored",
      "verbose",
      "delete",
      "force",
      "move",
    ],
    valued: [
      "output",
      "contents",
      "ignore-revs-file",
      "exclude-from",
      "exclude-per-directory",
      "git-dir",
      "work-tree",
      "format",
      "max-count",
      "unified",
      "color",
      "sort",
      "points-at",
      "date",
      "since",
      "author",
      "untracked-files",
      "set-upstream-to",
      "config",
    ],
    short: "sbvzpnSXxCcLMDdmuaorlw",
    words: () => [
      "src/a.txt",
      "src",
      "HEAD",
      "HEAD~0",
      "..",
      `${sandbox.outside}/secret`,
      "../outside/secret",
      "-5",
      "-uno",
      "-c",
      "core.pager=true",
    ],
  },
  make: {
    subs: ["test", "check", "lint"],
    long: [
      "silent",
      "quiet",
      "keep-going",
      "no-print-directory",
      "environment-overrides",
      "always-make",
      "dry-run",
      "ignore-errors",
      "print-data-base",
    ],
    valued: ["eval", "file", "makefile", "directory", "include-dir", "jobs", "what-if", "old-file", "assume-new"],
    short: "sknjefCEIiBWo",
    words: () => ["deploy", `SHELL=${sandbox.outside}/evil.sh`, `X:=$(shell touch ${sandbox.outside}/RAN)`, "test", "check"],
  },
  npm: {
    subs: ["test", "run"],
    long: ["silent", "if-present", "ignore-scripts", "global", "workspaces", "include-workspace-root", "foreground-scripts"],
    valued: ["node-options", "prefix", "userconfig", "globalconfig", "script-shell", "workspace", "loglevel", "call", "cache"],
    short: "sdqwgCc",
    words: () => ["build", "test", "extra", `${sandbox.outside}/evil.sh`],
  },
  cargo: {
    subs: ["test", "check", "build", "clippy"],
    long: ["release", "workspace", "lib", "tests", "quiet", "verbose", "offline", "frozen", "locked", "no-fail-fast", "all-targets"],
    valued: ["config", "manifest-path", "target-dir", "package", "features", "jobs", "message-format", "profile"],
    short: "qvrpjFZC",
    words: () => ["it_is_one", "proj", `${sandbox.outside}/secret`, "-Zunstable-options", "+stable"],
  },
};

/** A word's abbreviations as getopt_long and nopt take them: a prefix of at least two letters. */
const abbreviated = (name: string) => fc.integer({ min: Math.min(2, name.length), max: name.length }).map((n) => name.slice(0, n));

/** The options the engine's table lists for the tool: generated often, so that allowed commands vary. */
function tableOptions(tool: string): string[] {
  const entry = TOOLS[tool];
  if (!entry) return [];
  const forms = "plain" in entry ? [entry.plain] : Object.values(entry.subcommands);
  return [...new Set(forms.flatMap((f) => Object.keys(f.grammar.options)))];
}

function wordsOf(tool: string, gen: ToolGen): fc.Arbitrary<string[]> {
  const value = fc.constantFrom(...values());
  const listed = tableOptions(tool);
  const atom: fc.Arbitrary<string[]> = fc.oneof(
    // The table's own options, whole (often allowed) and with every value form (rarely).
    { arbitrary: fc.constantFrom(...listed).map((o) => [o]), weight: 4 },
    fc.tuple(fc.constantFrom(...listed), value).map(([o, v]) => (o.startsWith("--") ? [`${o}=${v}`] : [`${o}${v}`])),
    fc.tuple(fc.constantFrom(...listed), value).map(([o, v]) => [o, v]),
    fc.constantFrom(...gen.long).chain((l) => abbreviated(l).map((n) => [`--${n}`])),
    fc.tuple(fc.constantFrom(...gen.valued).chain(abbreviated), value).map(([n, v]) => [`--${n}=${v}`]),
    fc.tuple(fc.constantFrom(...gen.valued).chain(abbreviated), value).map(([n, v]) => [`--${n}`, v]),
    fc.array(fc.constantFrom(...gen.short), { minLength: 1, maxLength: 3 }).map((ls) => [`-${ls.join("")}`]),
    fc.tuple(fc.constantFrom(...gen.short), value).map(([l, v]) => [`-${l}`, v]),
    fc.tuple(fc.constantFrom(...gen.short), value).map(([l, v]) => [`-${l}${v}`]),
    fc.constantFrom(...gen.words()).map((w) => [w]),
    fc.constant<string[]>(["--"]),
    fc.constantFrom("config.node-options", "config.script-shell").map((k) => [`--${k}=${sandbox.outside}/evil.sh`]),
  );
  return fc.array(atom, { maxLength: 5 }).map((atoms) => atoms.flat());
}

const tally: Record<string, { tried: number; allowed: number; ran: number }> = {};
const results = new Map<string, string[]>();

/** Null when the argv is not allowed or ran harmlessly; else what it did. */
function check(tool: string, argv: string[]): string[] | null {
  const t = (tally[tool] ??= { tried: 0, allowed: 0, ran: 0 });
  t.tried += 1;
  const prefix = argv[1] === "run" ? argv.slice(0, 3) : argv.slice(0, 2);
  if (!engineAllows(prefix, argv)) return null;
  t.allowed += 1;
  const key = JSON.stringify(argv);
  let violations = results.get(key);
  if (violations === undefined) {
    if (tool === "cargo" && t.ran >= CARGO_REAL_RUNS) return null;
    t.ran += 1;
    violations = sandbox.run(argv).violations;
    results.set(key, violations);
  }
  return violations.length > 0 ? violations : null;
}

describe("real-tool differential: a prefix rule allows only what the real tool runs harmlessly", { timeout: 600_000 }, () => {
  it("preconditions: the sandbox sees a tool run a program, read a canary or leave the project", () => {
    const O = sandbox.outside;
    expect(sandbox.run(["make", "test"]).status, "make test runs in the project").toBe(0);
    expect(sandbox.run(["make", "test"]).violations).toEqual([]);
    expect(sandbox.run(["git", "status", "--short"]).violations).toEqual([]);
    expect(sandbox.run(["npm", "test", "--silent"]).violations).toEqual([]);
    expect(sandbox.run(["make", "test", `--ev=$(shell touch ${O}/RAN)`]).violations.join("\n")).toMatch(/ran .*touch/);
    expect(sandbox.run(["make", "test", "-kf", `${O}/evil.mk`]).violations.join("\n")).toMatch(/evil\.mk/);
    expect(sandbox.run(["git", "blame", "--contents", `${O}/secret`, "src/a.txt"]).violations.join("\n")).toMatch(/opened .*secret/);
    expect(sandbox.run(["npm", "test", `--script-sh=${O}/evil.sh`]).violations.join("\n")).toMatch(/evil\.sh/);
    expect(sandbox.run(["npm", "test", `--prefi=${O}/other`]).violations.join("\n")).toMatch(/outside/);
    expect(sandbox.run(["make", "test", "deploy"]).violations.join("\n")).toMatch(/ran .*touch/);
  });

  it(`every kept counterexample and issue-22 example (${fixed.commands.length}) is asked or harmless`, () => {
    const failures = fixed.commands
      .map((argv) => argv.map((w) => w.replaceAll("$OUTSIDE", sandbox.outside).replaceAll("$HOME", sandbox.home)))
      .map((argv) => [argv, check(argv[0] as string, argv)] as const)
      .filter(([, v]) => v !== null);
    expect(failures).toEqual([]);
  });

  for (const [tool, gen] of Object.entries(GENERATORS)) {
    it(`${tool}: ${RUNS} generated commands, each allowed one run for real${tool === "cargo" ? ` (the first ${CARGO_REAL_RUNS} distinct: each compiles)` : ""}`, () => {
      const runs = RUNS;
      fc.assert(
        fc.property(fc.constantFrom(...gen.subs), wordsOf(tool, gen), (sub, words) => {
          const argv = sub === "run" ? [tool, "run", "build", ...words] : [tool, sub, ...words];
          const violations = check(tool, argv);
          if (violations) throw new Error(`${JSON.stringify(argv)} was allowed and ${violations.join("; ")}`);
        }),
        { numRuns: runs },
      );
      const t = tally[tool];
      expect(t?.tried).toBeGreaterThanOrEqual(runs);
      expect(t?.allowed, `${tool}: some generated commands are allowed, so the real runs prove something`).toBeGreaterThan(0);
      console.log(`tools differential ${tool}: ${t?.tried} tried, ${t?.allowed} allowed, ${t?.ran} distinct run under strace`);
    });
  }
});
