// Issue 35's "two automatic steps", with the real tools as the judge: an edit a directory rule would
// answer ("always allow all files in this directory" on an ordinary edit) followed by a command a
// prefix rule would answer (`make test`, `git status`, `npm test`), each run for real under strace in
// a throwaway project (tools-sandbox.ts). A sequence whose edit makes the command run the agent's
// code (it touches a canary outside the project) must have at least one step the engine asks a
// person about. Before issue 35 the engine answered every step of the named sequences below (and
// 24 of the 30 generated ones that run the agent's code: checked against the engine at 600f77a); now
// the edit (command-files.ts: Makefile.*, *.mak, HEAD, node_modules/) or the command (rules.ts
// whereFor: only in the directory where it was approved) is asked. The named sequences and every
// generated one (directories × payloads × commands, FUZZ_RUNS more) run in `npm test`.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Rule, compileRules, decide } from "../../../protocol/rules";
import { ToolsSandbox, installed } from "./tools-sandbox";

/**
 * Each sequence runs real tools under strace (about 160 ms here), so `npm run test:fuzz`'s 20,000 is
 * capped at 2,000 generated sequences (about 5 minutes on 2 cores), beside the 120 fixed ones.
 */
const RUNS = Math.min(Number(process.env.FUZZ_RUNS ?? 20), 2000);
const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

let sandbox: ToolsSandbox;
beforeAll(() => {
  for (const tool of ["strace", "git", "make", "npm"])
    if (!installed(tool)) throw new Error(`the real-tool sequences need ${tool}: apt-get install ${tool} (.ci/run installs it)`);
  sandbox = new ToolsSandbox();
});
afterAll(() => sandbox?.dispose());

/** One step the agent takes: a file it writes (an edit), or a command it runs in a directory of the project. */
type Step = { write: string; content: string } | { run: string[]; cwd: string };

/** What the agent writes to make the next command run its code: files, by payload. */
function payload(kind: string, dir: string, canary: string): Step[] {
  const at = (file: string) => (dir === "" ? file : `${dir}/${file}`);
  const recipe = `test check lint status:\n\ttouch ${canary}\n`;
  switch (kind) {
    case "Makefile.sh":
      return [{ write: at("Makefile.sh"), content: recipe }];
    case "config.mak":
      return [{ write: at("config.mak"), content: `$(shell touch ${canary})\n` }];
    case "bare repository":
      return [
        { write: at("HEAD"), content: "ref: refs/heads/main\n" },
        {
          write: at("config"),
          content: `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch ${canary}\n`,
        },
        { write: at("objects/info/.keep"), content: "" },
        { write: at("refs/tags/.keep"), content: "" },
      ];
    case "package.json":
      return [{ write: at("package.json"), content: JSON.stringify({ name: "x", scripts: { test: `touch ${canary}` } }) }];
    default:
      throw new Error(`no payload ${kind}`);
  }
}

/** The rules of the session: a directory edit rule and "always" on the commands, made at the project's root. */
function rules(): Rule[] {
  const scope = { project: sandbox.project };
  const command = (prefix: string[]): Rule => ({ id: prefix.join(" "), decision: "allow", scope, matcher: { type: "command", prefix } });
  return [
    { id: "dir", decision: "allow", scope, matcher: { type: "path", kinds: ["edit"], glob: `${sandbox.project}/**` } },
    command(["make", "test"]),
    command(["make", "check"]),
    command(["git", "status"]),
    command(["git", "diff"]),
    command(["git", "ls-files"]),
    command(["npm", "test"]),
  ];
}

/** The first step the engine asks a person about, or null when rules answer every step. */
function firstAsked(steps: Step[]): Step | null {
  const compiled = compileRules(rules());
  for (const step of steps) {
    const toolCall =
      "write" in step
        ? { toolCallId: "t", kind: "edit", locations: [{ path: join(sandbox.project, step.write) }] }
        : { toolCallId: "t", kind: "execute", rawInput: { command: step.run, cwd: join(sandbox.project, step.cwd) } };
    const d = decide(compiled, { toolCall, options: OPTIONS, cwd: sandbox.project, agent: "a", now: 1 });
    if (d.decision !== "allow") return step;
  }
  return null;
}

/** Runs the sequence for real in a fresh copy of the project; what the last command did outside it. */
function runForReal(steps: Step[]): string[] {
  sandbox.reset();
  let violations: string[] = [];
  for (const step of steps) {
    if ("write" in step) {
      const path = join(sandbox.project, step.write);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, step.content);
    } else {
      const cwd = join(sandbox.project, step.cwd);
      mkdirSync(cwd, { recursive: true });
      violations = sandbox.run(step.run, cwd).violations;
    }
  }
  sandbox.reset();
  return violations;
}

function sequence(kind: string, dir: string, command: string[], cwd = dir): Step[] {
  return [...payload(kind, dir, join(sandbox.outside, "RAN")), { run: command, cwd }];
}

/** A sequence that runs the agent's code for real must have a step the engine asks; says what happened. */
function judged(steps: Step[]): { ranAgentCode: boolean; asked: Step | null } {
  const violations = runForReal(steps);
  const ranAgentCode = violations.some((v) => v.includes(sandbox.outside));
  return { ranAgentCode, asked: firstAsked(steps) };
}

describe("real-tool sequences: an edit a rule answers, then a command a rule answers (issue 35)", { timeout: 1_200_000 }, () => {
  const named: [string, () => Step[]][] = [
    ["writes Makefile.sh, runs make test", () => sequence("Makefile.sh", "", ["make", "test"])],
    ["writes sub/Makefile.sh, runs make check with cwd sub", () => sequence("Makefile.sh", "sub", ["make", "check"])],
    ["writes config.mak (included by the Makefile), runs make test", () => sequence("config.mak", "", ["make", "test"])],
    [
      "writes a bare-layout repository under docs/notes, runs git status there",
      () => sequence("bare repository", "docs/notes", ["git", "status"]),
    ],
    [
      "writes a bare-layout repository under docs/notes, runs git diff there",
      () => sequence("bare repository", "docs/notes", ["git", "diff"]),
    ],
    [
      "writes a bare-layout repository under docs/notes, runs git ls-files there",
      () => sequence("bare repository", "docs/notes", ["git", "ls-files"]),
    ],
  ];
  for (const [name, steps] of named) {
    it(`${name}: the agent's code runs for real, and the engine now asks a step (it answered every step before)`, () => {
      const { ranAgentCode, asked } = judged(steps());
      expect(ranAgentCode, "precondition: the sequence runs the agent's code when nobody asks").toBe(true);
      expect(asked, "a step a person is asked about").not.toBeNull();
    });
  }

  it("writes node_modules/x/package.json, runs npm test there: the agent's code runs for real; the edit was asked before (package.json) and still is, the command is asked now", () => {
    const steps = sequence("package.json", "node_modules/x", ["npm", "test"]);
    expect(judged(steps)).toEqual({ ranAgentCode: true, asked: steps[0] });
    expect(firstAsked(steps.slice(1)), "the command alone, in a dependency tree").toEqual(steps[1]);
  });

  it("the precondition holds the other way: an ordinary edit then make test at the root runs nothing of the agent's, and is answered", () => {
    const steps: Step[] = [
      { write: "src/notes.txt", content: "hello\n" },
      { run: ["make", "test"], cwd: "" },
    ];
    expect(judged(steps)).toEqual({ ranAgentCode: false, asked: null });
  });

  const directories = ["", "sub", "docs/notes", "node_modules/x", "vendor/y", "sub/deeper"];
  const kinds = ["Makefile.sh", "config.mak", "bare repository", "package.json"];
  const commands = [
    ["make", "test"],
    ["make", "check"],
    ["git", "status"],
    ["git", "diff"],
    ["npm", "test"],
  ];
  it(`every payload in every directory before every command (${directories.length * kinds.length * commands.length}): none runs the agent's code with no person asked`, () => {
    const failures: string[] = [];
    let ran = 0;
    for (const dir of directories)
      for (const kind of kinds)
        for (const command of commands) {
          const { ranAgentCode, asked } = judged(sequence(kind, dir, command));
          if (ranAgentCode) ran += 1;
          if (ranAgentCode && asked === null) failures.push(`${kind} in ${dir || "."} then ${command.join(" ")}`);
        }
    expect(failures).toEqual([]);
    expect(ran, "some sequences do run the agent's code, so the check proves something").toBeGreaterThan(5);
    console.log(`tools sequences: ${directories.length * kinds.length * commands.length} run, ${ran} ran the agent's code, all asked`);
  });

  it(`${RUNS} generated sequences (a payload, any directory, any command in any directory)`, () => {
    const segment = fc.constantFrom("sub", "docs", "notes", "node_modules", "x", "vendor", "src");
    fc.assert(
      fc.property(
        fc.constantFrom(...kinds),
        fc.array(segment, { maxLength: 3 }),
        fc.constantFrom(...commands),
        fc.boolean(),
        (kind, segments, command, sameDir) => {
          const dir = segments.join("/");
          const { ranAgentCode, asked } = judged(sequence(kind, dir, command, sameDir ? dir : ""));
          if (ranAgentCode && asked === null)
            throw new Error(`${kind} in ${dir || "."} then ${command.join(" ")} ran the agent's code unasked`);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
