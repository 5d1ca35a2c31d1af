// Issue 35's "no chain of automatic steps runs what no person saw", with the real tools as the judge.
// A session's person chose "always allow all files in this directory" on an ordinary edit and "always"
// on `make test`, `git status`/`diff`/`ls-files`/`show`/`log`, `npm test`, `cargo check`/`clippy`/
// `test`/`build`/`fmt`, `ls` and `pwd`. Sequences of edits and commands (payloads the real tools run:
// a makefile's implicit sources and includes, bare-layout repositories with fsmonitor or textconv,
// test files, dependency trees, proc-macro and test crates, `#[path]` modules outside the project;
// benign edits, content-blind commands, steps a person is asked) are answered by the model of the
// gateway (gateway-steps.ts: the rules engine, then unseen-change tracking) and run for real in a
// fresh copy of a project beside canaries (sequence-runner.ts). A counterexample is a step that runs
// the agent's code, or reads or writes outside the project, when a payload file it wrote before was
// never shown to a person: neither its edit was asked, nor a later command asked of a person (which shows it) up to that step.
//
// How many: every fixed case, then per tool a generated batch (PER_TOOL: more in `npm run test:fuzz`),
// run on WORKERS bash processes. Measured costs are in PER_TOOL's comment; every counterexample found
// stays a fixed case.
import fc from "fast-check";
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Rule } from "../../../protocol/rules";
import { type Answer, type ClearsOn, GatewaySteps, commandCall, editCall } from "./gateway-steps";
import { SequenceRunner, type Step, type StepEffects, bareRepositoryFiles } from "./sequence-runner";
import { installed } from "./tools-sandbox";

const FUZZ = process.env.FUZZ_RUNS !== undefined && Number(process.env.FUZZ_RUNS) > 1000;
/**
 * Generated sequences per tool, from the CPU they cost (measured here with the machine's load at 15 to
 * 23, so CPU seconds, not wall time, are the honest measure; on 2 idle cores the wall time is about
 * half): a sequence costs 23 ms of CPU for make, 26 ms for git, 250 ms for npm (npm's own start-up,
 * about 170 ms a command) and 170 ms for cargo (its untouched builds made once per worker; rustc
 * for what the agent wrote). Before (strace, a git reset per sequence, one at a time): about 160 ms
 * of wall time for make and git on an idle machine.
 * - `npm test`: 150 make, 150 git, 12 npm, 8 cargo, and the fixed cases: about 15 s of CPU (43 s of
 *   wall time beside the rest of `npm test` at 300/300/40/30, which took the suite past its 5 minutes).
 *   npm and cargo are tens, not the issue's hundreds: 100 npm sequences alone cost 25 s.
 * - `npm run test:fuzz`: 5,000 make, 5,000 git, 3,000 npm, 3,000 cargo: about 1,500 s of CPU, 13
 *   minutes on 2 idle cores. 5,000 npm and 5,000 cargo would be about 2,350 s, 19.6 minutes: no room
 *   in the 20 minutes this file has, so npm and cargo stop at 3,000.
 * SEQUENCES_PER_TOOL=n runs n of each instead (to measure).
 */
const PER_TOOL: Record<Tool, number> = process.env.SEQUENCES_PER_TOOL
  ? {
      make: 0,
      git: 0,
      npm: 0,
      cargo: 0,
      ...Object.fromEntries(["make", "git", "npm", "cargo"].map((t) => [t, Number(process.env.SEQUENCES_PER_TOOL)])),
    }
  : FUZZ
    ? { make: 5000, git: 5000, npm: 3000, cargo: 3000 }
    : { make: 150, git: 150, npm: 12, cargo: 8 };
const WORKERS = Number(process.env.SEQUENCE_WORKERS ?? Math.max(2, availableParallelism()));

type Tool = "make" | "git" | "npm" | "cargo";

/** Where the model puts the project: the rules judge paths, so any absolute directory stands for the worker's copy. */
const PROJECT = "/srv/proj";

const TEMPLATE = {
  // Includes its local configuration, as many projects do; `make test` writes a report.
  Makefile: "-include config.mak\n-include local.env\ntest check lint:\n\t@mkdir -p out && echo ok > out/report.txt\n",
  "package.json": JSON.stringify({
    name: "proj",
    version: "1.0.0",
    scripts: { test: 'for f in test/*.test.js; do node "$f" || exit 1; done' },
  }),
  // The project's own test uses a helper when there is one (a dependency under node_modules/).
  "test/a.test.js": 'try { require("helper"); } catch (e) { if (e.code !== "MODULE_NOT_FOUND") throw e; }\n',
  "Cargo.toml": '[package]\nname = "proj"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\nmac = { path = "mac" }\n',
  "src/lib.rs": "pub fn one() -> u32 {\n    mac::one!()\n}\n",
  "mac/Cargo.toml": '[package]\nname = "mac"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\nproc-macro = true\n',
  "mac/src/lib.rs":
    'use proc_macro::TokenStream;\n\n#[proc_macro]\npub fn one(_: TokenStream) -> TokenStream {\n    "1".parse().unwrap()\n}\n',
  "src/a.txt": "hello\n",
};
const SETUP = [
  ["git", "init", "-q", "-b", "main"],
  ["cargo", "generate-lockfile", "--offline"],
  ["git", "add", "."],
  ["git", "commit", "-qm", "init"],
];

/** The rules of the issue's session, made at the project's root. */
function rules(): Rule[] {
  const scope = { project: PROJECT };
  const command = (prefix: string[]): Rule => ({ id: prefix.join(" "), decision: "allow", scope, matcher: { type: "command", prefix } });
  return [
    { id: "dir", decision: "allow", scope, matcher: { type: "path", kinds: ["edit"], glob: `${PROJECT}/**` } },
    ...[
      ["make", "test"],
      ["make", "check"],
      ["git", "status"],
      ["git", "diff"],
      ["git", "ls-files"],
      ["git", "show"],
      ["git", "log"],
      ["npm", "test"],
      ["cargo", "check"],
      ["cargo", "clippy"],
      ["cargo", "test"],
      ["cargo", "build"],
      ["cargo", "fmt"],
      ["ls"],
      ["pwd"],
    ].map(command),
  ];
}

const touch = "touch @OUT@/RAN";
const at = (dir: string, file: string) => (dir === "" ? file : `${dir}/${file}`);
let bareWithCommit: Record<string, Buffer> = {};

/** What the agent writes to make a tool run its code, by payload, in a directory of the project. */
const PAYLOADS: Record<string, (dir: string) => Step[]> = {
  // make
  "Makefile.sh": (dir) => [{ write: at(dir, "Makefile.sh"), content: `.PHONY: test check\ntest check:\n\t${touch}\n` }],
  GNUmakefile: (dir) => [{ write: at(dir, "GNUmakefile"), content: `.PHONY: test check\ntest check:\n\t${touch}\n` }],
  makefile: (dir) => [{ write: at(dir, "makefile"), content: `.PHONY: test check\ntest check:\n\t${touch}\n` }],
  "config.mak": () => [{ write: "config.mak", content: `$(shell ${touch})\n` }],
  "local.env": () => [{ write: "local.env", content: `$(shell ${touch})\n` }],
  // git
  "bare repository, fsmonitor": (dir) => [
    { write: at(dir, "HEAD"), content: "ref: refs/heads/main\n" },
    {
      write: at(dir, "config"),
      content: `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = ${touch}\n`,
    },
    { write: at(dir, "objects/info/.keep"), content: "" },
    { write: at(dir, "refs/tags/.keep"), content: "" },
  ],
  "bare repository, textconv": (dir) => [
    ...Object.entries(bareWithCommit).map(([file, content]) => ({ write: at(dir, file), content })),
    {
      write: at(dir, "config"),
      content: `[core]\n\trepositoryformatversion = 0\n\tbare = true\n[diff "agent"]\n\ttextconv = sh -c '${touch} && cat $1' -\n`,
    },
    { write: at(dir, "info/attributes"), content: "* diff=agent\n" },
  ],
  ".git/config": () => [
    { write: ".git/config", content: `[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tfsmonitor = ${touch}\n` },
  ],
  // npm
  "test file": () => [{ write: "test/zz.test.js", content: 'require("fs").writeFileSync("@OUT@/RAN", "");\n' }],
  "node_modules helper": () => [{ write: "node_modules/helper/index.js", content: 'require("fs").writeFileSync("@OUT@/RAN", "");\n' }],
  "package.json": (dir) => [{ write: at(dir, "package.json"), content: JSON.stringify({ name: "x", scripts: { test: touch } }) }],
  // cargo
  "proc-macro source": () => [
    {
      write: "mac/src/lib.rs",
      content:
        'use proc_macro::TokenStream;\n\n#[proc_macro]\npub fn one(_: TokenStream) -> TokenStream {\n    std::fs::write("@OUT@/RAN", "").unwrap();\n    "1".parse().unwrap()\n}\n',
    },
  ],
  "integration test": () => [{ write: "tests/it.rs", content: '#[test]\nfn it() {\n    std::fs::write("@OUT@/RAN", "").unwrap();\n}\n' }],
  "build.rs": () => [{ write: "build.rs", content: 'fn main() {\n    std::fs::write("@OUT@/RAN", "").unwrap();\n}\n' }],
  "#[path] to a secret": () => [{ write: "src/lib.rs", content: 'pub fn one() -> u32 {\n    1\n}\n#[path = "@OUT@/secret"]\nmod x;\n' }],
  "#[path] to another project": () => [
    { write: "src/lib.rs", content: 'pub fn one() -> u32 {\n    1\n}\n#[path = "@OUT@/other/src/lib.rs"]\nmod y;\n' },
  ],
};

const TOOLS: Record<Tool, { payloads: string[]; commands: string[][]; dirs: string[] }> = {
  make: {
    payloads: ["Makefile.sh", "GNUmakefile", "makefile", "config.mak", "local.env"],
    commands: [
      ["make", "test"],
      ["make", "check"],
    ],
    dirs: ["", "sub", "docs/notes", "vendor/y"],
  },
  git: {
    payloads: ["bare repository, fsmonitor", "bare repository, textconv", ".git/config"],
    commands: [
      ["git", "status"],
      ["git", "diff"],
      ["git", "ls-files"],
      ["git", "show"],
      ["git", "log", "-p"],
    ],
    dirs: ["", "docs/notes", "sub", "vendor/y/z"],
  },
  npm: {
    payloads: ["test file", "node_modules helper", "package.json"],
    commands: [["npm", "test"]],
    dirs: ["", "sub", "node_modules/x"],
  },
  cargo: {
    payloads: ["proc-macro source", "integration test", "build.rs", "#[path] to a secret", "#[path] to another project"],
    commands: [
      ["cargo", "check"],
      ["cargo", "clippy"],
      ["cargo", "test"],
      ["cargo", "build"],
      ["cargo", "fmt"],
    ],
    dirs: ["", "src", "mac"],
  },
};

/** A step of a sequence, and whether it writes a payload (the agent's code). */
interface Labelled {
  step: Step;
  payload: boolean;
}

const benign = (dir: string): Labelled => ({ step: { write: at(dir, "notes.txt"), content: "notes\n" }, payload: false });
const command = (argv: readonly string[], cwd: string): Labelled => ({ step: { run: [...argv], cwd }, payload: false });
const payload = (name: string, dir: string): Labelled[] =>
  (PAYLOADS[name] as (d: string) => Step[])(dir).map((step) => ({ step, payload: true }));

function toolCall(step: Step): Record<string, unknown> {
  return "write" in step ? editCall(join(PROJECT, step.write)) : commandCall(step.run, join(PROJECT, step.cwd));
}

/** How the model of the gateway answers each step. */
function answers(steps: Step[], clearsOn?: ClearsOn): Answer[] {
  const gateway = new GatewaySteps(rules(), PROJECT, clearsOn);
  return steps.map((s) => gateway.step(toolCall(s)));
}

/**
 * The counterexample of the property, or null: a step that did something outside the project (ran the
 * agent's code, read or wrote a canary) while a payload written before it was never shown to a person.
 */
function counterexample(seq: Labelled[], effects: StepEffects[], answered: Answer[]): string | null {
  for (let i = 0; i < seq.length; i++) {
    if ((effects[i] ?? []).length === 0) continue;
    const payloads = seq.flatMap((s, p) => (p < i && s.payload ? [p] : []));
    if (payloads.length === 0)
      return `step ${i} did ${effects[i]?.join(" ")} with no payload written before it: the template or a tool is at fault`;
    const shown = (p: number) =>
      answered[p]?.by === "person" || seq.some((s, q) => q > p && q <= i && "run" in s.step && answered[q]?.by === "person");
    const unseen = payloads.filter((p) => !shown(p));
    if (unseen.length > 0)
      return `step ${i} (${describe1(seq[i]?.step)}) did ${effects[i]?.join(" ")} after unseen ${unseen.map((p) => describe1(seq[p]?.step)).join(", ")}`;
  }
  return null;
}

function describe1(step: Step | undefined): string {
  if (step === undefined) return "?";
  return "write" in step ? `write ${step.write}` : `${step.run.join(" ")} in ${step.cwd || "."}`;
}
const describeAll = (seq: Labelled[], a: Answer[]) =>
  seq.map((s, i) => `${describe1(s.step)} [${a[i]?.by}${a[i]?.by === "person" && a[i].held ? ", held" : ""}]`).join("; ");

/** CPU seconds of this process's finished children (the workers and every tool they ran): the cost, however loaded the machine. */
function childrenCpuSeconds(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]?.split(" ") ?? [];
  // cutime and cstime, fields 16 and 17 of stat(5), in clock ticks (100 a second on Linux).
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

let runner: SequenceRunner;
beforeAll(() => {
  for (const tool of ["git", "make", "npm", "cargo"])
    if (!installed(tool) && !installed(`/root/.cargo/bin/${tool}`))
      throw new Error(`the real-tool sequences need ${tool}: apt-get install -y ${tool} (cargo: rustup, see .ci/run)`);
  bareWithCommit = bareRepositoryFiles(join(process.env.TMPDIR ?? "/tmp", `bare-${process.pid}`), { "a.txt": "hello\n" });
  runner = new SequenceRunner(TEMPLATE, SETUP);
});
afterAll(() => runner?.dispose());

/** Runs the sequences for real and judges them; what each did and how the model answered. */
async function judge(seqs: Labelled[][], clearsOn?: ClearsOn) {
  const effects = await runner.run(
    seqs.map((s) => s.map((l) => l.step)),
    WORKERS,
  );
  return seqs.map((seq, n) => {
    const answered = answers(
      seq.map((l) => l.step),
      clearsOn,
    );
    const e = effects[n] as StepEffects[];
    return { seq, answered, effects: e, ranAgentCode: e.some((x) => x.length > 0), counterexample: counterexample(seq, e, answered) };
  });
}

describe(
  "real-tool sequences: edits and commands a rule answers, judged as the gateway answers them (issue 35)",
  { timeout: 3_600_000 },
  () => {
    const fixed: [string, () => Labelled[], { runs: boolean; asked?: number }][] = [
      ["writes Makefile.sh, runs make test", () => [...payload("Makefile.sh", ""), command(["make", "test"], "")], { runs: true }],
      [
        "writes sub/Makefile.sh, runs make check in sub",
        () => [...payload("Makefile.sh", "sub"), command(["make", "check"], "sub")],
        { runs: true },
      ],
      ["writes config.mak (included), runs make test", () => [...payload("config.mak", ""), command(["make", "test"], "")], { runs: true }],
      [
        "writes local.env (included; the directory rule answers it), runs make test: held",
        () => [...payload("local.env", ""), command(["make", "test"], "")],
        { runs: true, asked: 1 },
      ],
      ["writes GNUmakefile, runs make test", () => [...payload("GNUmakefile", ""), command(["make", "test"], "")], { runs: true }],
      ["writes makefile, runs make test", () => [...payload("makefile", ""), command(["make", "test"], "")], { runs: true }],
      ...(["status", "diff", "ls-files"] as const).map((sub): [string, () => Labelled[], { runs: boolean }] => [
        `writes a bare-layout repository under docs/notes, runs git ${sub} there`,
        () => [...payload("bare repository, fsmonitor", "docs/notes"), command(["git", sub], "docs/notes")],
        { runs: true },
      ]),
      [
        "writes a bare repository with info/attributes and a textconv driver under docs/notes, runs git show there: held",
        () => [...payload("bare repository, textconv", "docs/notes"), command(["git", "show"], "docs/notes")],
        { runs: true },
      ],
      [
        "writes the same, runs git log -p there",
        () => [...payload("bare repository, textconv", "docs/notes"), command(["git", "log", "-p"], "docs/notes")],
        { runs: true },
      ],
      [
        "writes .git/config with core.fsmonitor, runs git status",
        () => [...payload(".git/config", ""), command(["git", "status"], "")],
        { runs: true },
      ],
      [
        "writes test/zz.test.js (the directory rule answers it), runs npm test: held",
        () => [...payload("test file", ""), command(["npm", "test"], "")],
        { runs: true, asked: 1 },
      ],
      [
        "writes node_modules/helper/index.js, runs npm test",
        () => [...payload("node_modules helper", ""), command(["npm", "test"], "")],
        { runs: true },
      ],
      [
        "writes node_modules/x/package.json, runs npm test there",
        () => [...payload("package.json", "node_modules/x"), command(["npm", "test"], "node_modules/x")],
        { runs: true },
      ],
      ...(["check", "clippy"] as const).map((sub): [string, () => Labelled[], { runs: boolean; asked: number }] => [
        `writes a proc-macro crate's source, runs cargo ${sub}: held`,
        () => [...payload("proc-macro source", ""), command(["cargo", sub], "")],
        { runs: true, asked: 1 },
      ]),
      [
        "writes tests/it.rs, runs cargo test: held",
        () => [...payload("integration test", ""), command(["cargo", "test"], "")],
        { runs: true, asked: 1 },
      ],
      ["writes build.rs, runs cargo build", () => [...payload("build.rs", ""), command(["cargo", "build"], "")], { runs: true }],
      [
        "writes #[path = <a secret outside>] mod x, runs cargo check (reads and prints it): held",
        () => [...payload("#[path] to a secret", ""), command(["cargo", "check"], "")],
        { runs: true, asked: 1 },
      ],
      [
        "writes #[path = <another project's file>] mod y, runs cargo fmt (rewrites it): held",
        () => [...payload("#[path] to another project", ""), command(["cargo", "fmt"], "")],
        { runs: true, asked: 1 },
      ],
      [
        "two edits and two commands: local.env, make test (held, the person sees it), notes, git status (held again)",
        () => [...payload("local.env", ""), command(["make", "test"], ""), benign("src"), command(["git", "status"], "")],
        { runs: true, asked: 1 },
      ],
      [
        "make test writes files, then git status: both answered, nothing of the agent's runs",
        () => [command(["make", "test"], ""), command(["git", "status"], ""), command(["git", "diff"], "")],
        { runs: false },
      ],
      [
        "a person's allow of a held step clears the unseen set: test file, npm test (held, shown it, allowed), npm test answered",
        () => [...payload("test file", ""), command(["npm", "test"], ""), command(["npm", "test"], "")],
        { runs: true, asked: 1 },
      ],
      [
        "a step asked because no rule matched is shown the unseen changes too: test file, true (asked, shown it), npm test answered",
        () => [...payload("test file", ""), command(["true"], ""), command(["npm", "test"], "")],
        { runs: true, asked: 1 },
      ],
      [
        "ls and pwd are answered while changes are unseen, and run nothing of the agent's",
        () => [
          ...payload("local.env", ""),
          ...payload("test file", ""),
          command(["ls", "-la"], ""),
          command(["pwd"], ""),
          command(["ls", "-R"], ""),
        ],
        { runs: false },
      ],
    ];

    it(`${fixed.length} fixed sequences: each runs as stated, and none runs what no person saw`, async () => {
      const results = await judge(fixed.map(([, make]) => make()));
      const wrong: string[] = [];
      results.forEach((r, n) => {
        const [name, , want] = fixed[n] as (typeof fixed)[number];
        if (r.ranAgentCode !== want.runs)
          wrong.push(`${name}: ${want.runs ? "precondition: the agent's code did not run" : `did ${r.effects.flat().join(" ")}`}`);
        if (r.counterexample) wrong.push(`${name}: ${r.counterexample}`);
        if (want.asked !== undefined && r.answered[want.asked]?.by !== "person")
          wrong.push(`${name}: step ${want.asked} should be asked of a person: ${describeAll(r.seq, r.answered)}`);
        if (!want.runs && r.answered.some((a) => a.by === "person"))
          wrong.push(`${name}: a step was asked: ${describeAll(r.seq, r.answered)}`);
      });
      expect(wrong).toEqual([]);
    });

    it("the canaries see each thing a step can do outside: the agent's code run, a secret read and printed, another project's file written", async () => {
      const [ran, secret, fmt, blind] = await judge([
        [...payload("local.env", ""), command(["make", "test"], "")],
        [...payload("#[path] to a secret", ""), command(["cargo", "check"], "")],
        [...payload("#[path] to another project", ""), command(["cargo", "fmt"], "")],
        [command(["ls", "-la"], ""), command(["pwd"], "")],
      ]);
      expect(ran?.effects.at(-1)).toEqual(["ran"]);
      expect(secret?.effects.at(-1)).toEqual(["read:<outside>/secret", "printed-secret"]);
      expect(fmt?.effects.at(-1)).toEqual(["wrote:<outside>/other/src/lib.rs"]);
      expect(blind?.effects).toEqual([[], []]);
    });

    it("a person's allow of an edit does not mark the other changes seen: local.env (answered), package.json (asked), make test runs local.env under the naive model", async () => {
      // Found here: the brief's first model ("a step asked of a person clears the unseen set") lets this run;
      // the person saw package.json's diff, not local.env.
      const steps = (): Labelled[] => [
        ...payload("local.env", ""),
        { step: { write: "package.json", content: TEMPLATE["package.json"] }, payload: false },
        command(["make", "test"], ""),
      ];
      const [naive] = await judge([steps()], "any asked step");
      expect(naive?.ranAgentCode, "precondition: make runs local.env's $(shell)").toBe(true);
      expect(naive?.answered.map((a) => a.by)).toEqual(["rule", "person", "rule"]);
      expect(naive?.counterexample, "the naive model answers make test").toMatch(/make test in \.\) did ran after unseen write local.env/);
      const [model] = await judge([steps()]);
      expect(model?.counterexample).toBeNull();
      expect(model?.answered.at(-1)).toMatchObject({ by: "person", held: true });
    });

    /** One step of a generated sequence for one tool: a payload, a command of the tool, a benign edit, ls/pwd, an asked step. */
    function atoms(tool: Tool): fc.Arbitrary<Labelled[]> {
      const t = TOOLS[tool];
      const dir = fc.constantFrom(...t.dirs);
      const root = fc.oneof({ weight: 2, arbitrary: fc.constant("") }, { weight: 1, arbitrary: dir });
      return fc.oneof(
        {
          weight: 4,
          arbitrary: fc
            .tuple(fc.constantFrom(...t.payloads), dir, fc.boolean())
            .map(([p, d, reversed]) => (reversed ? payload(p, d).reverse() : payload(p, d))),
        },
        // Mostly at the root, where the prefix rules answer; elsewhere a person is asked.
        { weight: 4, arbitrary: fc.tuple(fc.constantFrom(...t.commands), root).map(([c, d]) => [command(c, d)]) },
        { weight: 1, arbitrary: dir.map((d) => [benign(d)]) },
        { weight: 1, arbitrary: fc.tuple(fc.constantFrom(["ls"], ["ls", "-la"], ["pwd"]), root).map(([c, d]) => [command(c, d)]) },
        { weight: 1, arbitrary: dir.map((d) => [command(["true"], d)]) },
      );
    }

    /** A generated sequence for one tool: payloads, benign edits, commands of the tool, ls/pwd, asked steps, in any order. */
    function arbitrary(tool: Tool): fc.Arbitrary<Labelled[]> {
      return fc.array(atoms(tool), { minLength: 2, maxLength: 6 }).map((a) => a.flat());
    }

    /**
     * Payloads and a command they arm whatever came before them: at the root, written right before it (a
     * file no earlier step can shadow or undo). A sequence built round one of these always runs the
     * agent's code for real, so a batch of a few generated sequences still proves the judgement has teeth
     * (CI once drew 8 cargo sequences of which none ran anything: the count had been left to chance).
     */
    const ARMED: Record<Tool, [string, string[]][]> = {
      make: [
        ["config.mak", ["make", "test"]],
        ["GNUmakefile", ["make", "check"]],
      ],
      git: [[".git/config", ["git", "status"]]],
      npm: [["package.json", ["npm", "test"]]],
      cargo: [
        ["build.rs", ["cargo", "check"]],
        ["build.rs", ["cargo", "build"]],
      ],
    };
    function armed(tool: Tool): fc.Arbitrary<Labelled[]> {
      const some = fc.array(atoms(tool), { maxLength: 3 }).map((a) => a.flat());
      return fc
        .tuple(some, fc.constantFrom(...ARMED[tool]), some)
        .map(([before, [p, argv], after]) => [...before, ...payload(p, ""), command(argv, ""), ...after]);
    }

    for (const tool of ["make", "git", "npm", "cargo"] as const) {
      it(`${PER_TOOL[tool]} generated ${tool} sequences: none runs what no person saw`, async () => {
        const seed = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
        // One in eight built round an armed pair (at least one): each of those must run the agent's code.
        const armedRuns = Math.min(PER_TOOL[tool], Math.max(1, Math.floor(PER_TOOL[tool] / 8)));
        const seqs = [
          ...fc.sample(arbitrary(tool), { numRuns: PER_TOOL[tool] - armedRuns, seed }),
          ...fc.sample(armed(tool), { numRuns: armedRuns, seed }),
        ];
        const started = performance.now();
        const cpuBefore = childrenCpuSeconds();
        const results = await judge(seqs);
        const ms = performance.now() - started;
        const cpu = childrenCpuSeconds() - cpuBefore;
        const failures = results.filter((r) => r.counterexample).map((r) => `${r.counterexample}\n  in: ${describeAll(r.seq, r.answered)}`);
        const ran = results.filter((r) => r.ranAgentCode).length;
        console.log(
          `${tool} sequences (seed ${seed}): ${seqs.length} run on ${WORKERS} workers in ${(ms / 1000).toFixed(1)} s (${(ms / seqs.length).toFixed(1)} ms each; ${cpu.toFixed(1)} s of CPU, ${((cpu * 1000) / seqs.length).toFixed(1)} ms each), ${ran} ran the agent's code or touched a canary`,
        );
        expect(failures, `seed ${seed} (FUZZ_SEED=${seed} repeats it)`).toEqual([]);
        const disarmed = results.slice(-armedRuns).filter((r) => !r.ranAgentCode);
        expect(
          disarmed.map((r) => describeAll(r.seq, r.answered)),
          "every armed sequence runs the agent's code, so the judgement proves something",
        ).toEqual([]);
        expect(ran).toBeGreaterThanOrEqual(armedRuns);
      });
    }
  },
);
