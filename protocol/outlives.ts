// Commands that may leave something running after their tool call completed (decision 0068): what a
// person accepted of a step's writes could be changed after they looked, and a process left running
// acts on changes made later. Closed world over what the grammar reads: a job sent to the background
// (`&`) does not parse at all (rules/shell.ts); this names the programs and options whose purpose is
// to detach. Such a command is never answered by an allow rule and never yields one: a person is
// asked every time, and told why. Pure.

import type { Operation } from "./operation";
import { basename, runsOtherCode } from "./rules/programs";

/** Programs whose purpose is to start something that outlives them (also as a wrapper's argument: `sudo nohup …`). */
const DETACHERS = new Set(
  "nohup setsid disown daemon daemonize start-stop-daemon screen tmux byobu dtach abduco at batch systemd-run pm2 forever".split(" "),
);

/** Long options that detach, daemonize or keep watching past the call, with or without `=value`. */
const DETACHING_OPTIONS = /^--(daemon|daemonize|detach|background|fork|watch|watch-all|watchAll)(=|$)/;

/** Container engines whose short `-d` (alone or in a cluster: `-itd`) starts a detached container. */
const CONTAINER_ENGINES = new Set(["docker", "podman", "nerdctl"]);

/** Why the command may outlive its step, or null when nothing in it is known to detach. */
export function outlivesItsStep(op: Pick<Operation, "kind" | "commands">): string | null {
  if (op.kind !== "execute" || op.commands === null) return null;
  for (const command of op.commands) {
    const { argv } = command;
    const program = basename(argv[0] ?? "");
    // The program, or any word a wrapper may run (`sudo nohup …`, `env setsid …`, `xargs tmux …`).
    const runs = runsOtherCode(command) ? argv : argv.slice(0, 1);
    for (const word of runs)
      if (DETACHERS.has(basename(word))) return `\`${basename(word)}\` starts something that keeps running after the step`;
    for (const word of argv) {
      if (word === "daemon") return "`daemon` starts a server that keeps running after the step"; // `git daemon`
      if (DETACHING_OPTIONS.test(word)) return `\`${word}\` keeps something running after the step`;
      if (CONTAINER_ENGINES.has(program) && /^-[A-Za-z]*d[A-Za-z]*$/.test(word))
        return `\`${program} ${word}\` starts a detached container that keeps running after the step`;
    }
  }
  return null;
}
