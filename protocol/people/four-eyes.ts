// Four eyes (decision 0028): which operations a second person must approve, by the tenant's policy
// (settings.fourEyes). Pure. The facts are the engine's reading of the operation (protocol/operation.ts
// over protocol/rules: kind, the simple commands bash would run as argv, resolved paths), never the
// raw text. Guarantees (property-tested in test/unit/people/four-eyes.test.ts):
// - Closed world: when the policy names programs, prefixes or paths and the operation's command or
//   paths cannot be read in full (a command the parser refuses, a word bash would expand where a
//   program or prefix word stands, a wrapper or interpreter that runs code its arguments choose, a
//   path that is not absolute), the operation is taken to need four eyes.
// - The strictest requirement of every entry that applies wins (two_approvals over not_prompter).
// - Spelling does not escape (issue 35): a program or prefix entry is read with the grammar reject
//   rules use (reject-spelling.ts) — global options anywhere (`git -C . push`, `git --no-pager push`,
//   `git -c color.ui=never push`, `git -P push --force`), abbreviations and config options
//   (`npm publis`, `npm -s publish`, `npm --loglevel silent publish`), `/usr/bin/rm`, `bash -lc 'rm x'`
//   — and any word the engine cannot prove to be another command is taken to be it.
// - A step that defines what a later step runs is held when the policy names that program at all:
//   `git config` of an `alias.*` or `include.*` key (or `--edit`), `npm config`/`npm pkg`/`npm set`
//   (script-shell, scripts.*), and running a script by its path (`./scripts/release.sh`: what it runs
//   was written by whoever wrote the file).
// - A path entry (`/srv/prod/**`) matches the directory itself and its ancestors (`rm -rf /srv`), and
//   every word of every command that resolves there, in every path-taking form: `of=/srv/prod/db`,
//   `-C/srv/prod`, `--opt=/srv/prod`, `-xzC/srv/prod`; relative words resolved against the workdir.
// - No "always" yields a rule that covers a held operation: allowRuleCoversHeld says whether one would.

import type { FourEyesOperation, FourEyesSettings } from "../../core/principal";
import type { Operation } from "../operation";
import type { Matcher } from "../rules/rules";
import { globMatches, isWithin, resolvePath } from "../rules/paths";
import { basename, runsOtherCode, subcommandPositions } from "../rules/programs";
import { rejectApplies } from "../rules/reject-spelling";
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

/** The entry's command words: its prefix, or its program; the program as its basename. */
function entryWords(entry: FourEyesOperation): string[] {
  const words = entry.prefix ?? (entry.program !== undefined ? [entry.program] : []);
  return words.length === 0 ? [] : [basename(words[0] as string), ...words.slice(1)];
}

function commandApplies(entry: FourEyesOperation, op: Operation): string | null {
  if (op.command === null) return null; // nothing runs
  if (op.commands === null) return "its command could not be read in full, so the policy is assumed to cover it";
  const words = entryWords(entry);
  for (const command of op.commands) {
    if (runsOtherCode(command)) return `it runs ${basename(command.argv[0] ?? "")}, which runs code its arguments choose`;
    if (command.fuzzy[0]) return "a word of its command is expanded by the shell, so it may be any program";
    const script = scriptRun(command);
    if (script !== null) return `it runs ${script}, a script whose content the gateway cannot read`;
    const defines = definesWhatRuns(words, command);
    if (defines !== null) return defines;
  }
  // Every spelling the tool accepts, and any word not proven to be another command (reject-spelling.ts).
  if (rejectApplies(words, op)) return `it runs ${words.join(" ")}, however it is spelled`;
  return null;
}

/** Directories whose programs are the system's, not a script someone in the session may have written. */
const SYSTEM_PROGRAM = /^\/(usr\/(local\/)?)?s?bin\/[^/]+$/;

/** The script a command runs by its path (`./release.sh`, `scripts/x`, `/srv/app/run`), or null. */
function scriptRun(command: SimpleCommand): string | null {
  const program = command.argv[0] ?? "";
  if (!program.includes("/")) return null;
  const resolved = resolvePath(program);
  return resolved !== null && SYSTEM_PROGRAM.test(resolved) ? null : program;
}

/**
 * Why this command may define what a later command of the policy's program runs (an alias, an
 * include, a script shell, a script), or null. Only for a program the entry names.
 */
function definesWhatRuns(words: readonly string[], command: SimpleCommand): string | null {
  const program = words[0];
  if (program === undefined || basename(command.argv[0] ?? "") !== program) return null;
  const definers = DEFINERS[program];
  if (definers === undefined) return null;
  const one: Operation = { ...NO_OPERATION, command: command.argv.join(" "), commands: [command] };
  for (const [sub, keys, why] of definers) {
    if (!rejectApplies([program, sub], one)) continue;
    const positions = subcommandPositions(command.argv, command.fuzzy);
    const after = command.argv.slice(Math.min(...positions, command.argv.length));
    if (keys === null || after.some((w) => keys.test(w))) return why;
  }
  return null;
}

/** Subcommands that define what later commands run: [subcommand, the words that make it do so (null: any), why]. */
const DEFINERS: Readonly<Record<string, ReadonlyArray<readonly [string, RegExp | null, string]>>> = {
  git: [
    [
      "config",
      /alias|include|^-e$|^--edit$|^--ed/i,
      "it may define a git alias or include (git config alias.*), which a later git command would run: held as that command would be",
    ],
  ],
  npm: [
    ["config", null, "it changes npm's config (script-shell, node-options), which a later npm command would run: held as that would be"],
    ["set", null, "it changes npm's config (script-shell, node-options), which a later npm command would run: held as that would be"],
    ["pkg", null, "it changes package.json (its scripts), which a later npm command would run: held as that would be"],
  ],
};

const NO_OPERATION: Operation = {
  kind: "execute",
  name: null,
  command: null,
  commands: null,
  looseWords: null,
  workdir: null,
  paths: [],
  ambiguity: null,
  adapter: null,
};

function pathApplies(glob: string, op: Operation): string | null {
  const hits = pathHits(glob);
  if (op.paths === null) return "a path it touches could not be resolved, so the policy is assumed to cover it";
  const touched = op.paths.find(hits);
  if (touched !== undefined) return `it touches ${touched}`;
  if (op.command === null) return null;
  if (op.commands === null) return "its command could not be read in full, so the policy is assumed to cover it";
  if (op.workdir === null) return "the directory it runs in could not be read, so the policy is assumed to cover it";
  if (hits(op.workdir)) return `it runs in ${op.workdir}`;
  let budget = MAX_PATH_READINGS;
  for (const command of op.commands) {
    for (let i = 0; i < command.argv.length; i++) {
      if (command.fuzzy[i]) return "a word of its command is expanded by the shell, so it may name any path";
      const candidates = pathCandidates(command.argv[i] as string);
      budget -= candidates?.length ?? budget + 1;
      if (candidates === null || budget < 0) return "its command is too long to read as paths, so the policy is assumed to cover it";
      for (const candidate of candidates) {
        if (candidate.startsWith("~")) return `it names ${candidate}, a path the gateway cannot resolve`;
        const resolved = resolvePath(candidate.startsWith("/") ? candidate : `${op.workdir}/${candidate}`);
        if (resolved === null) return "a word of its command could not be read as a path, so the policy is assumed to cover it";
        if (hits(resolved)) return `it names ${resolved}`;
      }
    }
  }
  return null;
}

/**
 * Whether a resolved path meets the policy's glob: a path it matches, the directory itself
 * (`/srv/prod` for `/srv/prod/**`), or an ancestor of the glob's fixed directory (`rm -rf /srv`).
 */
function pathHits(glob: string): (path: string) => boolean {
  const base = globBase(glob);
  return (p) => globMatches(glob, p) || globMatches(glob, `${p}/`) || (base !== null && isWithin(base, p));
}

/** The fixed directory an anchored glob starts with (`/srv/prod` of `/srv/prod/**`); null for an unanchored one. */
function globBase(glob: string): string | null {
  if (!glob.startsWith("/")) return null;
  const fixed: string[] = [];
  for (const segment of glob.split("/").slice(1)) {
    if (/[*?[\]\\]/.test(segment)) break;
    fixed.push(segment);
  }
  return resolvePath(`/${fixed.join("/")}`);
}

/**
 * Every reading of a word as a path: the word, what follows each `=`, `:` or `,` (`of=/x`,
 * `--output=/x`, `host:/x`), and for a short option every tail after its dash and first letter
 * (`-C/x`, `-o/x`, `-xzC/x`). Reading too many only ever adds four eyes.
 */
function pathCandidates(word: string): string[] | null {
  // Bounded, so a hostile command cannot make this quadratic: a longer word is not read (held).
  if (word.length > MAX_PATH_WORD) return null;
  const out = [word];
  for (let i = 0; i < word.length; i++) if ("=:,".includes(word[i] as string) && i + 1 < word.length) out.push(word.slice(i + 1));
  if (/^-[^-]/.test(word)) for (let k = 2; k < word.length; k++) out.push(word.slice(k));
  return out;
}

/** The longest word read as paths (PATH_MAX), and the most readings of one command: beyond, the operation is held. */
const MAX_PATH_WORD = 4096;
const MAX_PATH_READINGS = 4096;

/**
 * Why an allow rule would cover an operation the policy holds, or null when it covers none: the
 * operation it is made from is held, or the rule reaches further — a prefix rule on a program the
 * policy names, in a project the policy's path meets; a directory rule the policy's path meets; any
 * rule of a kind the policy holds. The caller (the permission machine, before storing a person's
 * "always") makes no allow rule when this is not null. A reject is never refused.
 */
export function allowRuleCoversHeld(
  rule: { decision: "allow" | "reject"; matcher: Matcher; scope?: { project?: string | null } | null },
  policy: FourEyesSettings | undefined,
  op: Operation,
): string | null {
  if (rule.decision !== "allow" || policy === undefined) return null;
  const held = fourEyesNeed(policy, op);
  if (held !== null) return held.why;
  const operations: unknown[] = Array.isArray(policy.operations) ? policy.operations : POLICY_UNKNOWN.operations;
  for (const item of operations) {
    const entry = wellFormed(item) ? item : {};
    const why = entryMayCover(entry, rule.matcher, rule.scope?.project ?? null);
    if (why !== null) return `the rule could cover an operation the tenant's four-eyes policy holds: ${why}`;
  }
  return null;
}

/** Why the rule may cover an operation the entry holds, or null when it cannot. */
function entryMayCover(entry: FourEyesOperation, m: Matcher, project: string | null): string | null {
  // An argv or exact rule covers only the operation it was made from (judged by the caller); an allow tool rule covers nothing.
  if (m.type !== "command" && m.type !== "path") return null;
  if (entry.kind === undefined && entry.program === undefined && entry.prefix === undefined && entry.path === undefined)
    return "the policy could not be read";
  const kinds = m.type === "path" ? (m.kinds ?? ["read", "edit", "delete", "move"]) : ["execute"];
  const reasons: string[] = [];
  if (entry.kind !== undefined) {
    if (!kinds.includes(entry.kind)) return null;
    reasons.push(`it covers ${entry.kind} operations`);
  }
  if (entry.program !== undefined || entry.prefix !== undefined) {
    if (m.type !== "command") return null;
    const words = entryWords(entry);
    const prefix = m.prefix;
    const asCommand: Operation = {
      ...NO_OPERATION,
      command: prefix.join(" "),
      commands: [{ argv: [...prefix], fuzzy: prefix.map(() => false) }],
    };
    // The entry is the prefix or narrower (`git status --short` under `git status`), or the prefix is a spelling of it.
    const narrower = words.length >= prefix.length && prefix.every((w, i) => (i === 0 ? basename(w) : w) === words[i]);
    if (!narrower && !rejectApplies(words, asCommand)) return null;
    reasons.push(`\`${prefix.join(" ")}\` may run ${words.join(" ")}`);
  }
  if (entry.path !== undefined) {
    // Where the rule reaches: a path rule's fixed directory, a prefix rule's project; null: anywhere.
    const reach = m.type === "path" ? globBase(m.glob) : project === null ? null : resolvePath(project);
    const base = globBase(entry.path);
    if (base !== null && reach !== null && !isWithin(base, reach) && !isWithin(reach, base)) return null;
    reasons.push(`${m.type === "path" ? m.glob : `its project ${project ?? "(any)"}`} meets ${entry.path}`);
  }
  return reasons.join(", ");
}
