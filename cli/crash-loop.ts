// Telling a crash loop from an agent that runs: a process that keeps exiting within seconds of its
// start is not "connected" in any sense a user cares about, so the bridge says so, with the likely
// cause when it can tell (a TypeScript agent under a Node without type stripping), and gives up.

import { spawnSync } from "node:child_process";
import { basename } from "node:path";

/** A process that exits sooner than this after starting counts towards a crash loop. */
export const QUICK_EXIT_MS = 10_000;
/** Quick exits in a row at which the loop is reported, and at which the bridge stops. */
export const REPORT_AFTER = 3;
export const GIVE_UP_AFTER = 5;

/** The first Node release that runs .ts files without a flag. */
const TYPE_STRIPPING = [22, 18] as const;

/** Counts quick exits in a row; a process that ran a while resets the count. */
export class CrashWatch {
  private quick = 0;

  /** Records one exit; says whether to restart, report the loop (and restart), or stop. */
  exited(livedMs: number): { quickExits: number; verdict: "restart" | "report" | "give-up" } {
    this.quick = livedMs < QUICK_EXIT_MS ? this.quick + 1 : 0;
    const verdict = this.quick >= GIVE_UP_AFTER ? "give-up" : this.quick === REPORT_AFTER ? "report" : "restart";
    return { quickExits: this.quick, verdict };
  }
}

/**
 * When the agent's command is a Node too old to run the TypeScript file it is given, the sentence
 * that says so and what to use instead; otherwise null. `version` is what `node --version` printed.
 */
export function typeScriptAdvice(command: string, args: readonly string[], version: string): string | null {
  if (!/^node(\.exe)?$/.test(basename(command))) return null;
  const script = args.find((a) => /\.[mc]?ts$/.test(a));
  if (!script) return null;
  const match = /^v(\d+)\.(\d+)/.exec(version.trim());
  if (!match) return null;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const [needMajor, needMinor] = TYPE_STRIPPING;
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return null;
  return `${command} is Node ${version.trim()}, which cannot run the TypeScript file ${script}: it needs Node ${needMajor}.${needMinor} or later (the project's node_modules/.bin/node is one; give its path as the agent's command)`;
}

/** The crash loop in one line, with the Node advice when it applies. */
export function crashLoopMessage(argv: readonly string[], quickExits: number, last: string): string {
  const [command, ...args] = argv as [string, ...string[]];
  const version = spawnSync(command, ["--version"], { encoding: "utf8", timeout: 5_000 }).stdout ?? "";
  const advice = typeScriptAdvice(command, args, version);
  return `the agent process keeps exiting within ${QUICK_EXIT_MS / 1000} s of starting (${quickExits} times in a row, last ${last}): it is not serving anyone${advice ? `. ${advice}` : "; its error output is above"}`;
}
