// The proof that remembered decisions mean what they say: a differential fuzz against real bash.
// Commands generated from a grammar of every quoting and expansion form plus the known tricks are
// run under /bin/bash in a sandbox of stub programs (bash-sandbox.ts), and what bash actually ran is
// compared with what the engine decided:
// - whenever an allow rule answers, every program bash ran is covered by an allow rule;
// - whenever a reject rule's command is among what bash ran, the engine does not allow.
// FUZZ_RUNS sets the number of generated cases (1,000 in `npm test`, 20,000 in `npm run test:fuzz`);
// every counterexample ever found is kept in test/fixtures/bash-differential-cases.json and run first.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import fixed from "../../fixtures/bash-differential-cases.json" with { type: "json" };
import { type Rule, compileRules, decide, parseCommands } from "../../../protocol/rules";
import { BashSandbox, type Ran } from "./bash-sandbox";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

const RULES: Rule[] = [
  { id: "git status", decision: "allow", matcher: { type: "command", prefix: ["git", "status"] } },
  { id: "git log", decision: "allow", matcher: { type: "command", prefix: ["git", "log"] } },
  { id: "git", decision: "allow", matcher: { type: "command", prefix: ["git"] } },
  { id: "npm test", decision: "allow", matcher: { type: "command", prefix: ["npm", "test"] } },
  { id: "ls", decision: "allow", matcher: { type: "command", prefix: ["ls"] } },
  { id: "echo", decision: "allow", matcher: { type: "command", prefix: ["echo"] } },
  { id: "sudo rm -rf ./build", decision: "allow", matcher: { type: "argv", argv: ["sudo", "rm", "-rf", "./build"] } },
  { id: "ssh staging uptime", decision: "allow", matcher: { type: "argv", argv: ["ssh", "staging", "uptime"] } },
  { id: "no git push", decision: "reject", matcher: { type: "command", prefix: ["git", "push"] } },
  { id: "no rm", decision: "reject", matcher: { type: "command", prefix: ["rm", "-rf", "/"] } },
];
const COMPILED = compileRules(RULES);
const OPTIONS = [
  { optionId: "allow", name: "Allow", kind: "allow_once" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/** Every program name the generator can make bash run; each is a stub. Shells too: they must never be real. */
const PROGRAMS = [
  "git",
  "npm",
  "ls",
  "rm",
  "curl",
  "touch",
  "sudo",
  "ssh",
  "sh",
  "bash",
  "zsh",
  "dash",
  "env",
  "xargs",
  "timeout",
  "nice",
  "cat",
  "tee",
  "grep",
  "python3",
  "node",
  "npx",
  "find",
  "make",
  "uptime",
  "evil",
];

/** The independent oracle: does an allow rule cover what ran, literally? */
function covered(ran: Ran): boolean {
  return RULES.some((r) => {
    if (r.decision !== "allow") return false;
    const words = r.matcher.type === "command" ? r.matcher.prefix : r.matcher.type === "argv" ? r.matcher.argv : null;
    if (!words || words[0] !== ran.name) return false;
    const rest = words.slice(1);
    if (r.matcher.type === "argv" && rest.length !== ran.args.length) return false;
    return rest.every((w, i) => ran.args[i] === w);
  });
}

/** The independent oracle: is this run one a reject rule names (git's global options skipped)? */
function rejected(ran: Ran): boolean {
  if (ran.name === "rm") return ran.args.includes("-rf") && ran.args.includes("/");
  if (ran.name !== "git") return false;
  let i = 0;
  while (i < ran.args.length && (ran.args[i] as string).startsWith("-")) {
    i += ["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path"].includes(ran.args[i] as string) ? 2 : 1;
  }
  return ran.args[i] === "push";
}

function engineDecision(command: string): "allow" | "reject" | null {
  const toolCall = { toolCallId: "t", kind: "execute", rawInput: { command } };
  return decide(COMPILED, { toolCall, options: OPTIONS, cwd: "/projects/demo", agent: "demo", now: 1 }).decision;
}

/**
 * The properties for one command: null when they hold, else what went wrong. Whenever the parser
 * judges a command, every program bash ran is one of the simple commands it read (the same argv;
 * for a word bash expands, the same program); whenever the engine allows, every run is covered.
 */
function violation(sandbox: BashSandbox, command: string): string | null {
  const decision = engineDecision(command);
  const parsed = parseCommands(command);
  if (decision !== "allow" && parsed === null) return null;
  const ran = sandbox.run(command);
  if (parsed) {
    const misread = ran.find(
      (r) =>
        !parsed.some((c) =>
          c.fuzzy.some(Boolean)
            ? c.argv[0] === r.name
            : c.argv.length === r.args.length + 1 && c.argv[0] === r.name && r.args.every((a, i) => a === c.argv[i + 1]),
        ),
    );
    if (misread) return `the parser read ${JSON.stringify(parsed.map((c) => c.argv))}, but bash ran ${JSON.stringify(misread)}`;
  }
  if (decision !== "allow") return null;
  const uncovered = ran.find((r) => !covered(r));
  if (uncovered) return `allowed, but bash ran ${JSON.stringify(uncovered)} which no allow rule covers`;
  const forbidden = ran.find(rejected);
  if (forbidden) return `allowed, but bash ran ${JSON.stringify(forbidden)} which a reject rule names`;
  return null;
}

// ---- The grammar -------------------------------------------------------------------------------

const WORDS = [
  "git",
  "status",
  "push",
  "log",
  "npm",
  "test",
  "ls",
  "rm",
  "-rf",
  "./build",
  "/",
  "--no-preserve-root",
  "sudo",
  "ssh",
  "staging",
  "uptime",
  "curl",
  "evil.example",
  "touch",
  "x",
  "sh",
  "bash",
  "env",
  "xargs",
  "timeout",
  "5",
  "-C",
  ".",
  "-c",
  "core.pager=evil",
  "--no-pager",
  "--force",
  "origin",
  "main",
  "echo",
  "eval",
  "cat",
  "-la",
  "--short",
  "python3",
  "npx",
  "find",
  "-exec",
  "{}",
  ";",
  "&&",
  "|",
  "#",
  "'",
  '"',
  "$",
  "\\",
];
const PROGRAM_WORDS = [
  "git",
  "npm",
  "ls",
  "rm",
  "sudo",
  "ssh",
  "curl",
  "touch",
  "echo",
  "eval",
  "sh",
  "bash",
  "env",
  "xargs",
  "cat",
  "evil",
];

const hex = (c: string) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`;
const oct = (c: string) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`;

/** One word written in one of bash's quoting or expansion forms (some of which the engine must refuse). */
const quoted = (w: string): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constant(w.replace(/[^A-Za-z0-9_./=,:@%+-]/g, (c) => `\\${c}`)),
    fc.constant(`'${w.replace(/'/g, "'\\''")}'`),
    fc.constant(`"${w.replace(/["\\$`]/g, (c) => `\\${c}`)}"`),
    fc
      .array(fc.constantFrom<"plain" | "hex" | "oct" | "esc">("plain", "hex", "oct", "esc"), { minLength: w.length, maxLength: w.length })
      .map(
        (forms) =>
          `$'${[...w].map((c, i) => (forms[i] === "hex" ? hex(c) : forms[i] === "oct" ? oct(c) : c === "'" || c === "\\" || forms[i] === "esc" ? `\\${c === "'" || c === "\\" ? c : c}` : c)).join("")}'`,
      ),
    fc.constant(`$"${w.replace(/["\\$`]/g, (c) => `\\${c}`)}"`),
    fc.nat(Math.max(0, w.length)).map((i) => `${w.slice(0, i)}\\\n${w.slice(i)}`),
    fc
      .nat(Math.max(0, w.length))
      .map((i) => `'${w.slice(0, i).replace(/'/g, "'\\''")}'"${w.slice(i).replace(/["\\$`]/g, (c) => `\\${c}`)}"`),
    fc.constant(`\${x:-${w}}`),
    fc.constant(`"\${x:-"${w}"}"`),
    fc.constant(`$(echo ${w})`),
    fc.constant(`\`echo ${w}\``),
    fc.constant(`{${w},}`),
    fc.nat(Math.max(0, w.length - 1)).map((i) => (w.length > 0 ? `${w.slice(0, i)}?${w.slice(i + 1)}` : "?")),
  );

const word = (pool: readonly string[]) =>
  fc.constantFrom(...pool).chain((w) => fc.oneof({ weight: 3, arbitrary: fc.constant(w) }, { weight: 2, arbitrary: quoted(w) }));

/** Words that rules cover, so that many commands are allowed and their runs checked against bash. */
const COVERED_PROGRAMS = ["git", "ls", "npm", "echo", "sudo", "ssh"];
const COVERED_ARGS = [
  "status",
  "log",
  "test",
  "push",
  "-la",
  "--short",
  "staging",
  "uptime",
  "rm",
  "-rf",
  "./build",
  "x",
  "--no-pager",
  "-C",
  ".",
  "'",
  "\\",
  "#",
  ";",
];

const simpleCommand: fc.Arbitrary<string> = fc
  .tuple(
    fc.option(fc.constantFrom("FOO=1 ", "GIT_PAGER=evil ", "x=$'\\'' "), { freq: 8 }),
    fc.oneof(word(COVERED_PROGRAMS), word(PROGRAM_WORDS)),
    fc.oneof(fc.array(word(COVERED_ARGS), { maxLength: 4 }), fc.array(word(WORDS), { maxLength: 4 })),
    fc.option(fc.constantFrom(" 2>&1", " >/dev/null", " > out.txt", " &>/dev/null", " 2>&-", " <<< x", " < /dev/null", " <(ls)"), {
      freq: 5,
    }),
  )
  .map(([assign, program, args, redirect]) => `${assign ?? ""}${[program, ...args].join(" ")}${redirect ?? ""}`);

const SEPARATORS = ["; ", " && ", " || ", " | ", " |& ", " & ", "\n", ";", " # ", " \\\n "];

/** The known tricks, each wrapped around generated commands. */
const trick = (a: string, b: string): fc.Arbitrary<string> =>
  fc.constantFrom(
    `git status $'\\'' ; ${b} #'`,
    `git status $'\\\\' ; ${b} #'`,
    `git status "\${x:-"a"}" ; ${b} #"`,
    `git status "\${x#"}"}"; ${b}`,
    `git status '\\'' ; ${b} #'`,
    `git status $"'" ; ${b} #'`,
    `${a} $'\\047' ; ${b} #`,
    `eval '${b}'`,
    `eval "${a}; ${b}"`,
    `bash -c '${b}'`,
    `bash -lc '${a}; ${b}'`,
    `sh -c '${b}'`,
    `sudo ${b}`,
    `env ${b}`,
    `xargs ${b}`,
    `${a} <<EOF\n$(${b})\nEOF`,
    `${a} <<'EOF'\n${b}\nEOF`,
    `{ ${a}; ${b}; }`,
    `(${a}) && (${b})`,
    `git() { ${b}; }; git status`,
    `function git { ${b}; }; git status`,
    `${a} # ; ${b}`,
    `${a} \\; ${b}`,
    `${a} \\\n; ${b}`,
    `${a} $(${b})`,
    `${a} \`${b}\``,
    `${a} "$(${b})"`,
    `${a} <(${b})`,
    `git {push,status}`,
    `git -C . push`,
    `git --no-pager push --force`,
    `git -c core.pager=evil status`,
    `g?t push`,
    `{git,} push`,
    `ssh staging 'rm -rf /var/www'`,
    `sudo rm -rf / --no-preserve-root`,
    `sudo rm -rf ./build`,
    `ssh staging uptime`,
    `rm build -rf /`,
  );

/** A command a rule covers, in any spelling: the allow path, where a mistake would run something. */
const coveredCommand: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(
      ["git", "status"],
      ["git", "log"],
      ["git"],
      ["ls"],
      ["echo"],
      ["npm", "test"],
      ["sudo", "rm", "-rf", "./build"],
      ["ssh", "staging", "uptime"],
    ),
    fc.array(word(WORDS), { maxLength: 3 }),
  )
  .chain(([prefix, args]) =>
    fc
      .tuple(...prefix.map((w) => word([w])))
      .map((head) => [...head, ...(prefix[0] === "sudo" || prefix[0] === "ssh" ? [] : args)].join(" ")),
  );

const script: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        coveredCommand,
        fc.array(
          fc.tuple(
            fc.constantFrom(...SEPARATORS),
            fc.oneof({ weight: 3, arbitrary: coveredCommand }, { weight: 1, arbitrary: simpleCommand }),
          ),
          { maxLength: 2 },
        ),
      )
      .map(([first, rest]) => first + rest.map(([s, c]) => s + c).join("")),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(simpleCommand, fc.array(fc.tuple(fc.constantFrom(...SEPARATORS), simpleCommand), { maxLength: 2 }))
      .map(([first, rest]) => first + rest.map(([s, c]) => s + c).join("")),
  },
  { weight: 2, arbitrary: fc.tuple(simpleCommand, simpleCommand).chain(([a, b]) => trick(a, b)) },
);

// ---- The tests ---------------------------------------------------------------------------------

const sandbox = new BashSandbox(PROGRAMS);
afterAll(() => sandbox.dispose());

describe("differential fuzz against real bash", () => {
  it(`TC-16: every kept counterexample and issue-10 example (${fixed.commands.length}) holds`, () => {
    const failures = fixed.commands.map((c) => [c, violation(sandbox, c)] as const).filter(([, v]) => v !== null);
    expect(failures).toEqual([]);
  });

  it(`TC-16: whatever the engine allows, bash runs only what the rules cover, and nothing a reject names (${RUNS} generated commands)`, () => {
    let tried = 0;
    let allowed = 0;
    let parsed = 0;
    fc.assert(
      fc.property(script, (command) => {
        tried += 1;
        if (engineDecision(command) === "allow") allowed += 1;
        if (parseCommands(command) !== null) parsed += 1;
        const v = violation(sandbox, command);
        if (v !== null) throw new Error(`${JSON.stringify(command)}: ${v}`);
      }),
      { numRuns: RUNS, seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
    );
    console.log(
      `bash differential: ${tried} commands tried, ${parsed} read by the parser and ${allowed} allowed, each checked against what bash ran`,
    );
    expect(tried).toBeGreaterThanOrEqual(RUNS);
  }, 600_000);
});
