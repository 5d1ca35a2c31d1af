// What the engine knows about programs: which ones run other code, which options of known programs
// run code or write files, which subcommands may be remembered as a prefix, and how global options
// are skipped to find the subcommand that runs (so a reject on `git push` matches `git -C . push`).
// Documented in docs/decisions/0005-remembered-decisions.md ("Remembered decisions"); keep the two in step.

import type { SimpleCommand } from "./shell";

/** Programs that run another program or code given in their arguments, locally or remotely. */
const WRAPPERS = new Set(
  (
    "sudo doas su runuser env nice nohup timeout time stdbuf ionice chroot chrt taskset setsid flock unshare nsenter " +
    "systemd-run xargs parallel watch script strace ltrace gdb busybox ssh mosh npx pnpx bunx uvx pipx exec command eval " +
    "sh bash zsh dash ksh mksh fish csh tcsh"
  ).split(" "),
);

/** Interpreters: `-c`/`-e` and friends run the code written in the argument. */
const INTERPRETERS = new Set(
  "python python2 python3 node nodejs deno bun perl ruby php lua luajit Rscript osascript awk gawk mawk".split(" "),
);

/** Subcommands that run code chosen by the arguments, by program. */
const RUNNER_SUBCOMMANDS: Record<string, Set<string>> = {
  docker: new Set(["exec", "run", "create", "compose", "buildx", "build"]),
  podman: new Set(["exec", "run", "create", "compose", "build"]),
  kubectl: new Set(["exec", "run", "debug", "attach", "cp", "apply", "create", "patch", "replace"]),
  npm: new Set(["exec", "x", "init", "create", "explore"]),
  pnpm: new Set(["exec", "dlx", "create"]),
  yarn: new Set(["exec", "dlx", "create"]),
  git: new Set(["submodule"]),
};

export function basename(program: string): string {
  const i = program.lastIndexOf("/");
  return i < 0 ? program : program.slice(i + 1);
}

/** True when the command runs code chosen by its arguments: only a rule naming its exact argv covers it. */
export function runsOtherCode(command: SimpleCommand): boolean {
  const argv = command.argv;
  const program = basename(argv[0] ?? "");
  if (WRAPPERS.has(program)) return true;
  if (INTERPRETERS.has(program)) return argv.slice(1).some(isInlineCodeFlag) || program.includes("awk");
  if (program === "find") return argv.some((a) => /^-(exec|execdir|ok|okdir)$/.test(a));
  const runners = RUNNER_SUBCOMMANDS[program];
  return runners !== undefined && argv.slice(1).some((a) => runners.has(a));
}

function isInlineCodeFlag(arg: string): boolean {
  if (/^--(eval|print|require|import|exec|command)(=|$)/.test(arg)) return true;
  return /^-[A-Za-z]*[ceEpr][A-Za-z]*$/.test(arg) && !arg.startsWith("--");
}

/** Options that run code, read another configuration or write files, by program (prefix spellings). */
const UNSAFE_OPTIONS: Record<string, { exact: string[]; prefixes: string[] }> = {
  git: {
    exact: ["-c", "-C", "-O", "-x"],
    prefixes: [
      "--config-env",
      "--exec-path",
      "--git-dir",
      "--work-tree",
      "--output",
      "--ext-diff",
      "--open-files-in-pager",
      "--upload-pack",
      "--receive-pack",
      "--exec",
      "--template",
      "--config",
      "--extcmd",
      "--tool",
      "--no-index",
      "-O",
    ],
  },
  npm: {
    exact: ["-C", "-c", "-w"],
    prefixes: [
      "--script-shell",
      "--node-options",
      "--userconfig",
      "--globalconfig",
      "--prefix",
      "--call",
      "--workspace",
      "--ignore-scripts=false",
    ],
  },
  pnpm: { exact: ["-C", "-c", "-w", "--dir"], prefixes: ["--script-shell", "--node-options", "--dir", "--filter", "--workspace"] },
  yarn: { exact: ["--cwd"], prefixes: ["--cwd", "--script-shell"] },
  make: {
    exact: ["-f", "-C", "-E", "-I", "-e", "--eval", "--file", "--makefile", "--directory", "--include-dir", "--environment-overrides"],
    prefixes: ["-f", "-C", "-E", "-I", "--eval", "--file", "--makefile", "--directory", "--include-dir"],
  },
  cargo: { exact: ["-Z", "-C"], prefixes: ["--config", "--manifest-path", "-Z", "--target-dir"] },
  find: { exact: ["-delete", "-fls", "-fprint", "-fprint0", "-fprintf"], prefixes: [] },
};

/**
 * Whether an allow prefix of `prefixLength` words may cover this command: not a program that runs
 * other code, no option that could change what runs or write a file, and no word the shell would
 * expand into something else where that could be such an option.
 */
export function prefixMayCover(command: SimpleCommand, prefixLength: number): boolean {
  if (runsOtherCode(command)) return false;
  const program = basename(command.argv[0] ?? "");
  const unsafe = UNSAFE_OPTIONS[program];
  if (!unsafe) return true;
  const args = command.argv.slice(1);
  const endOfOptions = args.indexOf("--");
  const checked = endOfOptions < 0 ? args : args.slice(0, endOfOptions);
  for (let i = 0; i < checked.length; i++) {
    const arg = checked[i] as string;
    if (command.fuzzy[i + 1]) return false; // could expand to any option
    if (unsafe.exact.includes(arg) || unsafe.prefixes.some((p) => arg.startsWith(p))) return false;
    if (program === "make" && arg.includes("=")) return false; // `make SHELL=…` replaces the recipe shell
  }
  // Options before the subcommand of a program with a subcommand change what runs: only a few are harmless.
  if (program === "git" && prefixLength <= 1) {
    for (const arg of args) {
      if (!arg.startsWith("-")) break;
      if (!["--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects"].includes(arg)) return false;
    }
  }
  return true;
}

/** Global options of git that take a separate value. */
const GIT_VALUE_OPTIONS = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--exec-path"]);

/**
 * The positions in `argv` (after the program) where the subcommand may stand, skipping global
 * options: every reading is returned when an unknown option may or may not take a value.
 */
export function subcommandPositions(argv: readonly string[], fuzzy: readonly boolean[]): number[] {
  const program = basename(argv[0] ?? "");
  const out: number[] = [];
  const walk = (i: number, budget: number) => {
    while (i < argv.length) {
      const arg = argv[i] as string;
      if (fuzzy[i]) {
        out.push(i); // could be anything, the subcommand included
        if (budget > 0) walk(i + 1, budget - 1);
        return;
      }
      if (arg === "--") {
        out.push(i + 1);
        return;
      }
      if (!arg.startsWith("-") || arg === "-") {
        out.push(i);
        return;
      }
      if (program === "git" && GIT_VALUE_OPTIONS.has(arg)) {
        i += 2;
        continue;
      }
      const takesUnknownValue = !arg.includes("=") && !(program === "git" && arg.startsWith("--") ? knownGitFlag(arg) : false);
      if (takesUnknownValue && budget > 0 && i + 1 < argv.length) walk(i + 2, budget - 1); // the next word was its value
      i += 1;
    }
  };
  walk(1, 4);
  return [...new Set(out)];
}

function knownGitFlag(arg: string): boolean {
  return [
    "--no-pager",
    "--paginate",
    "--bare",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--html-path",
    "--man-path",
    "--info-path",
    "--version",
    "--help",
  ].includes(arg);
}

/** How a program's prefix rules may be derived: which subcommands, and whether a script name follows. */
interface Derivable {
  /** Subcommands that may be remembered as `program subcommand …`; empty: the program alone. */
  subcommands: Set<string>;
  /** Subcommands whose next word (a script or target name) is part of what runs. */
  runners?: Set<string>;
  /** Checks the words after the prefix beyond the unsafe options (e.g. `git branch` list forms only). */
  argsOk?: (sub: string, args: string[]) => boolean;
}

const GIT_BRANCH_LIST_FLAGS =
  /^(-a|-r|-l|-v|-vv|-i|--list|--all|--remotes|--verbose|--show-current|--ignore-case|--no-color|--no-column|--color(=.*)?|--column(=.*)?|--sort=.*|--format=.*|--abbrev=.*|--merged(=.*)?|--no-merged(=.*)?|--contains(=.*)?|--no-contains(=.*)?|--points-at=.*)$/;

/** The table of known-safe structure: the only programs for which a prefix rule is derived. */
const DERIVABLE: Record<string, Derivable> = {
  git: {
    subcommands: new Set(["status", "diff", "log", "show", "branch", "blame", "ls-files", "rev-parse", "shortlog"]),
    argsOk: (sub, args) => sub !== "branch" || args.every((a) => GIT_BRANCH_LIST_FLAGS.test(a)),
  },
  npm: { subcommands: new Set(["test", "run", "run-script"]), runners: new Set(["run", "run-script"]) },
  pnpm: { subcommands: new Set(["test", "run"]), runners: new Set(["run"]) },
  yarn: { subcommands: new Set(["test", "run"]), runners: new Set(["run"]) },
  cargo: { subcommands: new Set(["test", "check", "build", "clippy", "fmt"]) },
  make: { subcommands: new Set(["test", "check", "lint"]) },
  ls: { subcommands: new Set() },
  pwd: { subcommands: new Set() },
};

/**
 * The prefix a person's allow may be remembered as, or null when the command is remembered exactly:
 * only programs in the table, in their known-safe forms, with no option that runs code or writes.
 */
export function derivablePrefix(command: SimpleCommand): string[] | null {
  const argv = command.argv;
  const program = argv[0] ?? "";
  const spec = DERIVABLE[program];
  if (!spec || command.fuzzy.some(Boolean)) return null;
  if (spec.subcommands.size === 0) return prefixMayCover(command, 1) ? [program] : null;
  const sub = argv[1];
  if (sub === undefined || !spec.subcommands.has(sub)) return null;
  let prefix = [program, sub];
  if (spec.runners?.has(sub)) {
    const script = argv[2];
    if (script === undefined || !/^[A-Za-z0-9][A-Za-z0-9:._-]*$/.test(script)) return null;
    prefix = [program, sub, script];
  }
  if (!prefixMayCover(command, prefix.length)) return null;
  if (spec.argsOk && !spec.argsOk(sub, argv.slice(prefix.length))) return null;
  return prefix;
}
