// The table of known-harmless command forms: the only programs and subcommands a prefix rule can
// cover beyond its exact words. Each entry lists the options known to be harmless for that
// subcommand, spelled exactly (grammar.ts reads them closed-world: anything not listed, abbreviations
// included, goes to a person), and what its positionals may be. A form is harmless when it runs no
// program but the one named and the project's own scripts, and reads or writes nothing outside the
// project. Left out on purpose, with why:
// - every option that reads another file or configuration, writes a file, runs a program or changes
//   where the tool works: git's -c/-C/--output/--ext-diff/--no-index/--contents/-S (blame's revs
//   file), npm's every config key (--node-options, --prefix, --userconfig, --script-shell…), make's
//   -f/-C/-E/--eval/-I/variables, cargo's --config/--manifest-path/-Z/--target-dir, and `--` for npm,
//   make and cargo (what follows goes to the test runner, rustc or the makefile);
// - pnpm and yarn: their option grammars could not be checked against the real tools here (not
//   installed in CI), so their commands are remembered as exact argv only;
// - global options before a subcommand (`git --no-pager log`): a prefix rule names the subcommand
//   as its second word, so they are never covered;
// - further targets, scripts or subcommands (`make test deploy`): each is another command;
// - an unbounded form of a bounded option: make's and cargo's -j/--jobs only with a count from 1 to
//   MAX_JOBS (a bare `make -j` runs every recipe at once; `-j 0` is not a bound either).
// Proven against the real tools by test/unit/fuzz/tools-differential.test.ts.

import { type ArgGrammar, type OptionSpec, type ValueCheck, count, name, oneOf, pathInProject, text } from "./grammar";

export interface ToolForm {
  grammar: ArgGrammar;
  /** What a rule on this form covers, after its words: shown in the rule's description. */
  covers: string;
}

export interface Tool {
  /** The subcommands (for make: targets) a prefix rule may name, each with its grammar. */
  subcommands: Readonly<Record<string, ToolForm>>;
  /** Subcommands whose next word is a script name that is part of what runs (`npm run build`). */
  runners?: ReadonlySet<string>;
}

/** A program without subcommands: its grammar applies to every word after it. */
export interface PlainTool {
  plain: ToolForm;
}

const flag: OptionSpec = {};
const flags = (...names: string[]): Record<string, OptionSpec> => Object.fromEntries(names.map((n) => [n, flag]));
const valued = (check: OptionSpec["value"], extra: Omit<OptionSpec, "value"> = {}): OptionSpec => ({ value: check, ...extra });

/** The most parallel jobs a rule covers: a bare `-j`, `-j 0` or a huge count is unbounded. */
const MAX_JOBS = 64;
const jobs: ValueCheck = (v) => /^[1-9][0-9]{0,1}$/.test(v) && Number(v) <= MAX_JOBS;

const color = valued(oneOf("always", "never", "auto"), { optional: true });
const revisionsOrPaths = { max: 50, check: pathInProject };

const GIT_DIFF_OUTPUT = {
  ...flags(
    "--stat",
    "--shortstat",
    "--numstat",
    "--name-only",
    "--name-status",
    "--summary",
    "--patch",
    "-p",
    "--no-patch",
    "--raw",
    "--no-color",
    "--no-renames",
    "--no-ext-diff",
    "--no-textconv",
    "-w",
    "--ignore-all-space",
    "-b",
    "--ignore-space-change",
    "--ignore-blank-lines",
    "--minimal",
    "--patience",
    "--histogram",
    "--word-diff",
  ),
  "--color": color,
  "-U": valued(count),
  "--unified": valued(count),
};

const GIT_FORMAT = { "--format": valued(text), "--pretty": valued(text, { optional: true }), "--date": valued(text) };

const git: Tool = {
  subcommands: {
    status: {
      grammar: {
        options: {
          ...flags(
            "-s",
            "--short",
            "-b",
            "--branch",
            "--long",
            "-v",
            "--verbose",
            "-z",
            "--ignored",
            "--ahead-behind",
            "--no-ahead-behind",
            "--show-stash",
          ),
          "--porcelain": valued(oneOf("v1", "v2"), { optional: true }),
          "-u": valued(oneOf("no", "normal", "all"), { optional: true }),
          "--untracked-files": valued(oneOf("no", "normal", "all"), { optional: true }),
        },
        cluster: "sbvz",
        positionals: revisionsOrPaths,
        afterDoubleDash: "positionals",
      },
      covers: "with read-only options only, and paths inside the project",
    },
    diff: {
      grammar: {
        options: { ...GIT_DIFF_OUTPUT, ...flags("--cached", "--staged", "--check", "--exit-code", "--quiet", "-R") },
        positionals: revisionsOrPaths,
        afterDoubleDash: "positionals",
      },
      covers: "with read-only options only (never --output, --ext-diff or --no-index), and revisions or paths inside the project",
    },
    log: {
      grammar: {
        options: {
          ...GIT_DIFF_OUTPUT,
          ...GIT_FORMAT,
          ...flags(
            "--oneline",
            "--graph",
            "--all",
            "-s",
            "--decorate",
            "--no-decorate",
            "--reverse",
            "--no-merges",
            "--merges",
            "--first-parent",
            "--abbrev-commit",
            "--no-abbrev-commit",
            "--follow",
            "--date-order",
            "--topo-order",
            "--left-right",
            "--boundary",
          ),
          "-n": valued(count, { separate: true }),
          "--max-count": valued(count),
          "--skip": valued(count),
          "--since": valued(text),
          "--until": valued(text),
          "--after": valued(text),
          "--before": valued(text),
          "--author": valued(text),
          "--committer": valued(text),
          "--grep": valued(text),
        },
        numericShort: true,
        positionals: revisionsOrPaths,
        afterDoubleDash: "positionals",
      },
      covers: "with read-only options only (never --output or --ext-diff), and revisions or paths inside the project",
    },
    show: {
      grammar: {
        options: { ...GIT_DIFF_OUTPUT, ...GIT_FORMAT, ...flags("--oneline", "-s", "--quiet", "--abbrev-commit") },
        positionals: revisionsOrPaths,
        afterDoubleDash: "positionals",
      },
      covers: "with read-only options only (never --output or --ext-diff), and revisions or paths inside the project",
    },
    branch: {
      grammar: {
        options: {
          ...flags(
            "-a",
            "-r",
            "-l",
            "-v",
            "--list",
            "--all",
            "--remotes",
            "--verbose",
            "--show-current",
            "--ignore-case",
            "--no-color",
            "--no-column",
          ),
          "--color": color,
          "--sort": valued(text),
          "--format": valued(text),
          "--merged": valued(name, { optional: true }),
          "--no-merged": valued(name, { optional: true }),
          "--contains": valued(name, { optional: true }),
          "--no-contains": valued(name, { optional: true }),
          "--points-at": valued(name),
        },
        cluster: "arv",
      },
      covers: "listing branches only: no branch is created, renamed or deleted",
    },
    blame: {
      grammar: {
        options: {
          ...flags(
            "-w",
            "-s",
            "-e",
            "-l",
            "-t",
            "-p",
            "-f",
            "-b",
            "-c",
            "--porcelain",
            "--line-porcelain",
            "--show-email",
            "--show-name",
            "--show-number",
            "--root",
          ),
          "-L": valued(text, { separate: true }),
        },
        positionals: { max: 2, check: pathInProject },
        afterDoubleDash: "positionals",
      },
      covers: "with read-only options only (never --contents or a revisions file), and a revision and a file inside the project",
    },
    "ls-files": {
      grammar: {
        options: flags(
          "-c",
          "-d",
          "-m",
          "-o",
          "-s",
          "-u",
          "-t",
          "-z",
          "--cached",
          "--deleted",
          "--modified",
          "--others",
          "--stage",
          "--unmerged",
          "--exclude-standard",
          "--directory",
          "--no-empty-directory",
          "--full-name",
          "--error-unmatch",
        ),
        cluster: "cdmosutz",
        positionals: revisionsOrPaths,
        afterDoubleDash: "positionals",
      },
      covers: "with read-only options only (never an exclude file), and paths inside the project",
    },
    "rev-parse": {
      grammar: {
        options: {
          ...flags(
            "--show-toplevel",
            "--show-prefix",
            "--show-cdup",
            "--git-dir",
            "--absolute-git-dir",
            "--git-common-dir",
            "--is-inside-work-tree",
            "--is-inside-git-dir",
            "--is-bare-repository",
            "--abbrev-ref",
            "--symbolic-full-name",
            "--verify",
            "-q",
            "--quiet",
          ),
          "--short": valued(count, { optional: true }),
        },
        positionals: { max: 10, check: pathInProject },
      },
      covers: "with read-only options only, and revisions",
    },
    shortlog: {
      grammar: {
        options: flags("-s", "-n", "-e", "-c", "--summary", "--numbered", "--email", "--committer"),
        cluster: "snec",
        positionals: revisionsOrPaths,
        afterDoubleDash: "positionals",
      },
      covers: "with read-only options only, and revisions or paths inside the project",
    },
  },
};

/** `npm test` / `npm run <script>`: nothing but --silent; every other word is a config key or goes to the script. */
const npmForm = (covers: string): ToolForm => ({ grammar: { options: flags("--silent", "-s") }, covers });
const npm: Tool = {
  subcommands: {
    test: npmForm("with no other arguments (only --silent): no config option, nothing after `--`"),
    run: npmForm("with no other arguments (only --silent): no config option, nothing after `--`"),
    "run-script": npmForm("with no other arguments (only --silent): no config option, nothing after `--`"),
  },
  runners: new Set(["run", "run-script"]),
};

/** make's harmless options: no variable, makefile, directory, eval or environment override. */
export const MAKE_GRAMMAR: ArgGrammar = {
  options: {
    ...flags("-s", "--silent", "--quiet", "-k", "--keep-going", "--no-print-directory"),
    // Only with a number: a bare -j / --jobs is unbounded (every recipe at once).
    "-j": valued(jobs, { separate: true }),
    "--jobs": valued(jobs, { separate: true }),
  },
  cluster: "sk",
};
const makeTarget: ToolForm = {
  grammar: MAKE_GRAMMAR,
  covers: `and only -s, -k, -j N (N from 1 to ${MAX_JOBS}) or --no-print-directory: no other target, variable, makefile or directory`,
};
const make: Tool = { subcommands: { test: makeTarget, check: makeTarget, lint: makeTarget } };

const CARGO_OPTIONS: Record<string, OptionSpec> = {
  ...flags(
    "--release",
    "-r",
    "--workspace",
    "--all-targets",
    "--lib",
    "--bins",
    "--tests",
    "--examples",
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "--locked",
    "--offline",
    "--frozen",
    "--all-features",
    "--no-default-features",
  ),
  "-p": valued(name, { separate: true }),
  "--package": valued(name, { separate: true }),
  "-F": valued(name, { separate: true }),
  "--features": valued(name, { separate: true }),
  "-j": valued(jobs, { separate: true }),
  "--jobs": valued(jobs, { separate: true }),
};
const cargoForm = (extra: Partial<ArgGrammar>, covers: string): ToolForm => ({
  grammar: { options: CARGO_OPTIONS, cluster: "qvr", ...extra },
  covers,
});
const CARGO_COVERS = "with build-selection options only: nothing after `--`, no --config, --manifest-path or -Z";
const cargo: Tool = {
  subcommands: {
    test: cargoForm(
      { options: { ...CARGO_OPTIONS, ...flags("--no-fail-fast", "--doc") }, positionals: { max: 1, check: name } },
      `${CARGO_COVERS}, at most one test-name filter`,
    ),
    check: cargoForm({}, CARGO_COVERS),
    build: cargoForm({}, CARGO_COVERS),
    clippy: cargoForm({}, CARGO_COVERS),
    fmt: {
      grammar: { options: { ...flags("--check", "--all", "-q", "--quiet", "-v", "--verbose"), "-p": valued(name, { separate: true }) } },
      covers: "with --check, --all or -p only: nothing after `--`",
    },
  },
};

const ls: PlainTool = {
  plain: {
    grammar: {
      options: {
        ...flags(
          ..."1aAbBcCdfFghiklLmnNopqQrRsStuUvxX".split("").map((l) => `-${l}`),
          "--all",
          "--almost-all",
          "--human-readable",
          "--recursive",
          "--reverse",
          "--size",
          "--classify",
          "--directory",
          "--inode",
          "--group-directories-first",
        ),
        "--color": color,
      },
      cluster: "1aAbBcCdfFghiklLmnNopqQrRsStuUvxX",
      positionals: { max: 100, check: pathInProject },
      afterDoubleDash: "positionals",
    },
    covers: "with listing options only, and paths inside the project",
  },
};

const pwd: PlainTool = { plain: { grammar: { options: flags("-L", "-P") }, covers: "with -L or -P only" } };

export const TOOLS: Readonly<Record<string, Tool | PlainTool>> = { git, npm, make, cargo, ls, pwd };

/** A runner's script or target name: a plain word, never an option or a path. */
const SCRIPT_NAME = /^[A-Za-z0-9][A-Za-z0-9:._-]*$/;

/**
 * The form of `argv` in the table, and how many of its words name it (`git log` 2, `npm run build`
 * 3, `ls` 1); undefined when the program or its subcommand is not in the table.
 */
export function formOf(argv: readonly string[]): { form: ToolForm; keyLength: number } | undefined {
  const program = argv[0];
  if (program === undefined || !Object.hasOwn(TOOLS, program)) return undefined;
  const tool = TOOLS[program] as Tool | PlainTool;
  if ("plain" in tool) return { form: tool.plain, keyLength: 1 };
  const sub = argv[1];
  if (sub === undefined || !Object.hasOwn(tool.subcommands, sub)) return undefined;
  const form = tool.subcommands[sub] as ToolForm;
  if (!tool.runners?.has(sub)) return { form, keyLength: 2 };
  const script = argv[2];
  return script !== undefined && SCRIPT_NAME.test(script) ? { form, keyLength: 3 } : undefined;
}
