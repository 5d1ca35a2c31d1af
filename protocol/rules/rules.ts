// Remembered decisions: rules, matchers and the decision. Judged on what the operation is — kind,
// name, the command in rawInput, resolved paths, the agent, the project — never on title or option
// names (TC-16). A reject that matches beats any allow; an expired or revoked rule never matches;
// switch_mode is never auto-allowed (TC-20); only an option kind the request offered is chosen.

import { isObject } from "../jsonrpc";
import { type Operation, describeOperation } from "../operation";
import { changesWhatRuns } from "./command-files";
import { prefixCoverage } from "./coverage";
import type { Where } from "./grammar";
import { globMatches, inForeignTree, isWithin, resolvePath } from "./paths";
import { rejectApplies } from "./reject-spelling";
import type { SimpleCommand } from "./shell";

export type Matcher =
  /**
   * A tool by kind, and name when given (an MCP tool such as `mcp__server__tool`). Only ever a
   * reject: the agent chooses the kind and the name, so an allow of this type covers nothing (an
   * admin may still post one through the REST API; derive.ts never makes one).
   */
  | { type: "tool"; kind: string; name?: string }
  /**
   * `execute` calls whose every simple command starts with these words and whose every further word
   * the closed-world table understands (tools.ts; only the exact words for a program not in it). As
   * a reject: any spelling the tool accepts (reject-spelling.ts).
   */
  | { type: "command"; prefix: readonly string[] }
  /** `execute` calls whose every simple command is exactly this argv (a wrapper, a program not in the table). */
  | { type: "argv"; argv: readonly string[] }
  /**
   * Calls of these kinds whose every resolved path matches the glob; a glob with wildcards never
   * covers an edit of a file that decides what commands run (command-files.ts).
   */
  | { type: "path"; glob: string; kinds?: readonly string[] }
  /** Exactly this operation: SHA-256 of its canonical JSON (canonical.ts). */
  | { type: "exact"; hash: string };

export interface Rule {
  id: string;
  decision: "allow" | "reject";
  scope?: { project?: string | null; user?: string | null; agent?: string | null };
  matcher: Matcher;
  description?: string;
  expiresAt?: number | null;
  revokedAt?: number | null;
}

interface PermissionOptionLike {
  optionId: string;
  name?: string;
  kind: string;
}

export interface DecisionContext {
  toolCall: Record<string, unknown>;
  options: PermissionOptionLike[];
  cwd: string;
  agent: string;
  user?: string | null;
  now: number;
  /** SHA-256 of the canonical operation, when exact rules exist (see canonical.ts). */
  exactHash?: string;
}

export interface Decision {
  decision: "allow" | "reject" | null;
  rule?: Rule;
  option?: PermissionOptionLike;
}

/** Kinds that are never approved by a remembered rule: leaving plan mode reduces oversight. */
const NEVER_AUTO_ALLOWED = new Set(["switch_mode"]);
const PATH_KINDS = new Set(["read", "edit", "delete", "move"]);

/** Rules indexed so that one decision looks at the few rules that could apply, not all of them. */
export interface CompiledRules {
  /** Allow rules on commands, by program. */
  byCommandHead: Map<string, Rule[]>;
  /** Reject rules on commands: few, and each is held against every spelling of every command. */
  commandRejects: Rule[];
  byToolKind: Map<string, Rule[]>;
  byExactHash: Map<string, Rule[]>;
  pathRules: Rule[];
  hasExact: boolean;
  size: number;
}

export function compileRules(rules: Rule[]): CompiledRules {
  const c: CompiledRules = {
    byCommandHead: new Map(),
    commandRejects: [],
    byToolKind: new Map(),
    byExactHash: new Map(),
    pathRules: [],
    hasExact: false,
    size: rules.length,
  };
  const add = (map: Map<string, Rule[]>, key: string, rule: Rule) => {
    const list = map.get(key);
    if (list) list.push(rule);
    else map.set(key, [rule]);
  };
  for (const rule of rules) {
    const m = rule.matcher;
    if (m.type === "command" || m.type === "argv") {
      const words = m.type === "command" ? m.prefix : m.argv;
      if (words.length === 0) continue;
      if (rule.decision === "reject") c.commandRejects.push(rule);
      else add(c.byCommandHead, words[0] as string, rule);
    } else if (m.type === "tool") add(c.byToolKind, m.kind, rule);
    else if (m.type === "exact") {
      add(c.byExactHash, m.hash, rule);
      c.hasExact = true;
    } else if (m.type === "path") c.pathRules.push(rule);
  }
  return c;
}

/** The decision for one request: which rule applies, and which offered option answers it. */
export function decide(compiled: CompiledRules, ctx: DecisionContext): Decision {
  const kind = typeof ctx.toolCall.kind === "string" ? ctx.toolCall.kind : "other";
  const live = (rule: Rule) => isLive(rule, ctx.now) && inScope(rule, ctx);
  let allow: Rule | undefined;
  let reject: Rule | undefined;
  const op = describeOperation(ctx.toolCall, ctx.cwd);
  // Rules that judge the whole call: tool, path, exact.
  for (const rule of wholeCallCandidates(compiled, ctx, kind)) {
    if (!live(rule)) continue;
    if (rule.matcher.type === "path") {
      if (!pathRuleMatches(rule, rule.matcher, kind, op.paths)) continue;
    } else if (!wholeCallMatches(rule, ctx, kind)) continue;
    if (rule.decision === "reject") reject ??= rule;
    else allow ??= rule;
  }
  if (kind === "execute") {
    // A reject that covers any spelling of any part rejects the whole; when in doubt, it applies.
    for (const rule of compiled.commandRejects) {
      if (!reject && live(rule) && rejectApplies(commandWords(rule.matcher), op)) reject = rule;
    }
    // Every part must be covered by an allow (TC-18: a changed command is judged anew), run in the
    // rule's project directory itself (TC-21, issue 35), or the session's when the rule has none.
    if (op.commands && compiled.byCommandHead.size > 0) {
      let covering: Rule | undefined;
      let allCovered = true;
      for (const command of op.commands) {
        let covered: Rule | undefined;
        for (const rule of compiled.byCommandHead.get(command.argv[0] ?? "") ?? []) {
          if (covered || !live(rule)) continue;
          const where = whereFor(rule, op, ctx);
          if (where && allowCovers(rule.matcher, command, where)) covered = rule;
        }
        if (!covered) allCovered = false;
        covering ??= covered;
      }
      if (allCovered && covering) allow ??= covering;
    }
    // An allow never applies to a command that runs anywhere but the rule's project directory, whatever matched it.
    if (allow && !whereFor(allow, op, ctx)) allow = undefined;
  }
  // A call that names what runs, or where, more than once is answered by no allow (one meaning).
  if (op.ambiguity !== null) allow = undefined;
  const rule = reject ?? (allow && !NEVER_AUTO_ALLOWED.has(kind) ? allow : undefined);
  if (!rule) return { decision: null };
  const option = chooseOption(rule.decision, ctx.options);
  // No option of the decided kind was offered: people are asked as usual. Never `cancelled`.
  if (!option) return { decision: null };
  return { decision: rule.decision, rule, option };
}

/** allow_once / reject_once first, so the gateway stays the one authority; else the *_always kind. */
function chooseOption(decision: "allow" | "reject", options: PermissionOptionLike[]): PermissionOptionLike | undefined {
  return options.find((o) => o.kind === `${decision}_once`) ?? options.find((o) => o.kind === `${decision}_always`);
}

function wholeCallCandidates(c: CompiledRules, ctx: DecisionContext, kind: string): Rule[] {
  const out: Rule[] = [...(c.byToolKind.get(kind) ?? [])];
  if (PATH_KINDS.has(kind)) out.push(...c.pathRules);
  if (c.hasExact && ctx.exactHash) out.push(...(c.byExactHash.get(ctx.exactHash) ?? []));
  return out;
}

function isLive(rule: Rule, now: number): boolean {
  if (rule.revokedAt !== undefined && rule.revokedAt !== null) return false;
  return rule.expiresAt === undefined || rule.expiresAt === null || rule.expiresAt > now;
}

function inScope(rule: Rule, ctx: DecisionContext): boolean {
  const scope = rule.scope ?? {};
  if (scope.agent && scope.agent !== ctx.agent) return false;
  if (scope.user && scope.user !== (ctx.user ?? null)) return false;
  if (scope.project) {
    const cwd = ctx.cwd.startsWith("/") ? ctx.cwd : null;
    if (!cwd || !isWithin(cwd, scope.project)) return false;
  }
  return true;
}

function wholeCallMatches(rule: Rule, ctx: DecisionContext, kind: string): boolean {
  const m = rule.matcher;
  // A tool rule names what the agent chose to call the call: it may reject, never allow (closed world).
  if (m.type === "tool") return rule.decision === "reject" && m.kind === kind && (m.name === undefined || m.name === ctx.toolCall.name);
  if (m.type === "exact") return ctx.exactHash !== undefined && m.hash === ctx.exactHash;
  return false;
}

function pathRuleMatches(rule: Rule, m: Extract<Matcher, { type: "path" }>, kind: string, paths: string[] | null): boolean {
  if (!PATH_KINDS.has(kind) || (m.kinds && !m.kinds.includes(kind))) return false;
  if (!paths || paths.length === 0) return false;
  const project = rule.scope?.project;
  // A reject holds a call that names any path it matches, whatever else the call names beside it
  // (the session's project already put the rule in scope: inScope).
  if (rule.decision === "reject") return paths.some((p) => globMatches(m.glob, p));
  // A rule scoped to a project never covers a path outside it (TC-21).
  if (project && !paths.every((p) => isWithin(p, project))) return false;
  if (!paths.every((p) => globMatches(m.glob, p))) return false;
  // A directory rule (a glob with wildcards) never allows a change to what commands run.
  const wildcard = /[*?[]/.test(m.glob.replace(/\[[*?[]\]/g, ""));
  if (rule.decision === "allow" && wildcard && kind !== "read" && paths.some((p) => changesWhatRuns(p) !== null)) return false;
  return true;
}

/** An allow command rule covers one simple command: its exact argv, or its prefix and nothing the table does not understand. */
function allowCovers(m: Matcher, command: SimpleCommand, where: Where): boolean {
  if (m.type === "argv") return m.argv.length === command.argv.length && m.argv.every((w, i) => w === command.argv[i] && !command.fuzzy[i]);
  return m.type === "command" && prefixCoverage(m.prefix, command, where) === null;
}

/**
 * Where an execute call runs, and the directory nothing may leave: the rule's project (the session
 * cwd it was approved in), or the session's cwd for a rule with none. An allow applies only in that
 * very directory (issue 35): in a subdirectory, make reads another makefile, git may discover another
 * repository (a bare layout the agent wrote as plain files) and npm another package.json. Null when
 * the call runs anywhere else, in a dependency or vendored tree, or where cannot be known.
 */
function whereFor(rule: Rule, op: Operation, ctx: DecisionContext): Where | null {
  const project = rule.scope?.project ? resolvePath(rule.scope.project) : resolvePath(ctx.cwd);
  if (project === null || op.workdir === null || op.workdir !== project || inForeignTree(op.workdir)) return null;
  return { workdir: op.workdir, project };
}

function commandWords(m: Matcher): readonly string[] {
  return m.type === "command" ? m.prefix : m.type === "argv" ? m.argv : [];
}

/** A matcher from untrusted JSON (the REST API, D1), or null when it is not one. */
export function parseMatcher(value: unknown): Matcher | null {
  if (!isObject(value)) return null;
  switch (value.type) {
    case "tool":
      return typeof value.kind === "string" && (value.name === undefined || typeof value.name === "string")
        ? { type: "tool", kind: value.kind, ...(typeof value.name === "string" ? { name: value.name } : {}) }
        : null;
    case "command":
      return Array.isArray(value.prefix) && value.prefix.length > 0 && value.prefix.every((t) => typeof t === "string" && t !== "")
        ? { type: "command", prefix: value.prefix as string[] }
        : null;
    case "path":
      return typeof value.glob === "string" && value.glob !== ""
        ? {
            type: "path",
            glob: value.glob,
            ...(Array.isArray(value.kinds) && value.kinds.every((k) => typeof k === "string") ? { kinds: value.kinds as string[] } : {}),
          }
        : null;
    case "argv":
      return Array.isArray(value.argv) && value.argv.length > 0 && value.argv.every((t) => typeof t === "string")
        ? { type: "argv", argv: value.argv as string[] }
        : null;
    case "exact":
      return typeof value.hash === "string" && /^[0-9a-f]{64}$/.test(value.hash) ? { type: "exact", hash: value.hash } : null;
    default:
      return null;
  }
}

/** The matcher as searchable text (`GET /v1/rules?q=`). */
export function matcherText(m: Matcher): string {
  switch (m.type) {
    case "tool":
      return `tool ${m.kind}${m.name ? ` ${m.name}` : ""}`;
    case "command":
      return `command ${m.prefix.join(" ")}`;
    case "argv":
      return `argv ${m.argv.join(" ")}`;
    case "path":
      return `path ${(m.kinds ?? []).join(",")} ${m.glob}`;
    case "exact":
      return `exact ${m.hash}`;
  }
}
