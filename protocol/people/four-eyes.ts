// Four eyes (decision 0028): which operations a second person must approve, by the tenant's policy
// (settings.fourEyes). Pure. The facts are the engine's reading of the operation (protocol/operation.ts
// over protocol/rules: kind, the simple commands bash would run as argv, resolved paths), never the
// raw text. Guarantees (property-tested in test/unit/people/four-eyes.test.ts):
// - Closed world: when the policy names programs, prefixes or paths and the operation's command or
//   paths cannot be read in full (a command the parser refuses, a word bash would expand where a
//   program or prefix word stands, a wrapper or interpreter that runs code its arguments choose, a
//   path that is not absolute), the operation is taken to need four eyes.
// - The strictest requirement of every entry that applies wins (two_approvals over not_prompter).
// - Spelling does not escape: `/usr/bin/rm`, `bash -lc 'rm x'`, `git -C . push` are read as what runs.

import type { FourEyesOperation, FourEyesSettings } from "../../core/principal";
import type { Operation } from "../operation";
import { globMatches, resolvePath } from "../rules/paths";
import { basename, runsOtherCode } from "../rules/programs";
import type { SimpleCommand } from "../rules/shell";

type FourEyesRequirement = "not_prompter" | "two_approvals";

/** What the policy asks of an operation: the requirement, and a sentence for people saying which entry and why. */
export interface FourEyesNeed {
  require: FourEyesRequirement;
  why: string;
  /** The tenant lets a credential that names no person approve (settings.fourEyes.keysApprove; answering.ts). */
  keysApprove?: true;
}

/** The requirement the tenant's policy puts on the operation, or null when none applies. */
export function fourEyesNeed(policy: FourEyesSettings | undefined, op: Operation): FourEyesNeed | null {
  let need: FourEyesNeed | null = null;
  // A policy the settings API would not have stored (a row written by hand) holds everything: closed world.
  const operations: unknown[] =
    policy === undefined ? [] : Array.isArray(policy.operations) ? policy.operations : POLICY_UNKNOWN.operations;
  for (const item of operations) {
    const entry = wellFormed(item) ? item : { require: "not_prompter" as const };
    const why = entryApplies(entry, op);
    if (why === null) continue;
    const require = entry.require ?? "not_prompter";
    if (need === null || (require === "two_approvals" && need.require !== "two_approvals")) need = { require, why };
  }
  return need !== null && policy?.keysApprove === true ? { ...need, keysApprove: true } : need;
}

/** An entry whose every given field has the type the settings API checks; anything else is read as "every operation". */
function wellFormed(item: unknown): item is FourEyesOperation {
  if (typeof item !== "object" || item === null) return false;
  const e = item as Record<string, unknown>;
  const text = (v: unknown) => v === undefined || typeof v === "string";
  return (
    text(e.kind) &&
    text(e.program) &&
    text(e.path) &&
    (e.prefix === undefined || (Array.isArray(e.prefix) && e.prefix.length > 0 && e.prefix.every((w) => typeof w === "string"))) &&
    (e.require === undefined || e.require === "not_prompter" || e.require === "two_approvals")
  );
}

/**
 * What applies when the policy could not be read and none was read before (closed world): every
 * operation needs a second person. The settings API never stores an entry without a criterion.
 */
export const POLICY_UNKNOWN: FourEyesSettings = { operations: [{ require: "not_prompter" }] };

/** Why the entry applies (a sentence), or null when it does not. */
function entryApplies(entry: FourEyesOperation, op: Operation): string | null {
  if (entry.kind === undefined && entry.program === undefined && entry.prefix === undefined && entry.path === undefined) {
    return "the tenant's four-eyes policy could not be read, so every operation waits for a second person";
  }
  const reasons: string[] = [];
  const namesCommand = entry.program !== undefined || entry.prefix !== undefined;
  if (entry.kind !== undefined) {
    if (op.kind !== entry.kind) return null;
    reasons.push(`it is a ${entry.kind} operation`);
  }
  if (namesCommand) {
    const why = commandApplies(entry, op);
    if (why === null) return null;
    reasons.push(why);
  }
  if (entry.path !== undefined) {
    const why = pathApplies(entry.path, op);
    if (why === null) return null;
    reasons.push(why);
  }
  return reasons.length > 0 ? `the tenant's four-eyes policy covers it: ${reasons.join(", ")}` : null;
}

function commandApplies(entry: FourEyesOperation, op: Operation): string | null {
  if (op.command === null) return null; // nothing runs
  if (op.commands === null) return "its command could not be read in full, so the policy is assumed to cover it";
  for (const command of op.commands) {
    if (runsOtherCode(command)) return `it runs ${basename(command.argv[0] ?? "")}, which runs code its arguments choose`;
    const matched = commandMatches(entry, command);
    if (matched !== null) return matched;
  }
  return null;
}

/** Whether one simple command is the entry's program or starts with its prefix (null: no). */
function commandMatches(entry: FourEyesOperation, command: SimpleCommand): string | null {
  const words = entry.prefix ?? (entry.program !== undefined ? [entry.program] : []);
  const program = entry.program ?? entry.prefix?.[0];
  if (command.fuzzy.slice(0, Math.max(words.length, 1)).some(Boolean))
    return "a word of its command is expanded by the shell, so it may be any program";
  if (program !== undefined && basename(command.argv[0] ?? "") !== basename(program)) return null;
  for (let i = 1; i < words.length; i++) if (command.argv[i] !== words[i]) return null;
  return entry.prefix ? `it runs ${entry.prefix.join(" ")}` : `it runs ${program ?? ""}`;
}

function pathApplies(glob: string, op: Operation): string | null {
  const paths = pathsTouched(op);
  if (paths === null) return "a path it touches could not be resolved, so the policy is assumed to cover it";
  const hit = paths.find((p) => globMatches(glob, p));
  return hit === undefined ? null : `it touches ${hit}`;
}

/**
 * The call's resolved paths and every argument of its commands read as a path (absolute, or relative
 * to the directory it runs in: `rm config.yml` in /srv/prod touches /srv/prod/config.yml; a
 * subcommand word read so too only ever adds four eyes). Null when one cannot be read.
 */
function pathsTouched(op: Operation): string[] | null {
  if (op.paths === null) return null;
  const paths = [...op.paths];
  if (op.command !== null && op.commands === null) return null;
  for (const command of op.commands ?? []) {
    for (let i = 1; i < command.argv.length; i++) {
      const word = command.argv[i] ?? "";
      if (word.startsWith("-") && !word.includes("/")) continue;
      const value = word.includes("=") && word.startsWith("-") ? word.slice(word.indexOf("=") + 1) : word;
      if (command.fuzzy[i]) return null;
      const resolved = value.startsWith("/") ? resolvePath(value) : op.workdir === null ? null : resolvePath(`${op.workdir}/${value}`);
      if (resolved === null) return null;
      paths.push(resolved);
    }
  }
  return paths;
}
