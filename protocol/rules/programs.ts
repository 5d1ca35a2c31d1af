// What the engine knows about programs in general: which ones run other code given in their
// arguments (wrappers, interpreters, runners: only a rule naming their exact argv covers them), and
// how global options are skipped to find the subcommand that runs (so a reject on `git push` meets
// `git -C . push`). Which forms a prefix rule covers is the closed-world table in tools.ts.

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
