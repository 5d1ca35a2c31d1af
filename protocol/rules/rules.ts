// Remembered decisions: rules, matchers and the decision. Judged on what the operation is — kind,
// name, the command in rawInput, resolved paths, the agent, the project — never on title or option
// names (TC-16). A reject that matches beats any allow; an expired or revoked rule never matches;
// switch_mode is never auto-allowed (TC-20); only an option kind the request offered is chosen.

import { isObject } from "../jsonrpc";
import { commandsOf, everyCommandHasPrefix } from "./command";
import { globMatches, isWithin, pathsOf } from "./paths";

export type Matcher =
  /** A tool by kind, and name when given (an MCP tool such as `mcp__server__tool`). */
  | { type: "tool"; kind: string; name?: string }
  /** `execute` calls whose every simple command starts with these tokens. */
  | { type: "command"; prefix: readonly string[] }
  /** Calls of these kinds whose every resolved path matches the glob. */
  | { type: "path"; glob: string; kinds?: readonly string[] }
  /** Exactly this operation: SHA-256 of the canonical JSON of { kind, name, rawInput }. */
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

export interface PermissionOptionLike {
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
  /** SHA-256 of the canonical { kind, name, rawInput }, when exact rules exist (see canonical.ts). */
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
  byCommandHead: Map<string, Rule[]>;
  byToolKind: Map<string, Rule[]>;
  byExactHash: Map<string, Rule[]>;
  pathRules: Rule[];
  hasExact: boolean;
  size: number;
}

export function compileRules(rules: Rule[]): CompiledRules {
  const c: CompiledRules = {
    byCommandHead: new Map(),
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
    if (m.type === "command" && m.prefix.length > 0) add(c.byCommandHead, m.prefix[0] as string, rule);
    else if (m.type === "tool") add(c.byToolKind, m.kind, rule);
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
  // Rules that judge the whole call: tool, path, exact.
  let paths: string[] | null | undefined;
  for (const rule of wholeCallCandidates(compiled, ctx, kind)) {
    if (!live(rule)) continue;
    if (rule.matcher.type === "path") {
      paths ??= pathsOf(ctx.toolCall);
      if (!pathRuleMatches(rule, rule.matcher, kind, paths)) continue;
    } else if (!wholeCallMatches(rule.matcher, ctx, kind)) continue;
    if (rule.decision === "reject") reject ??= rule;
    else allow ??= rule;
  }
  // Command rules judge each simple command: every part must be covered by an allow, and a reject
  // that covers any part rejects the whole (TC-18: a changed command is judged anew).
  if (kind === "execute" && compiled.byCommandHead.size > 0) {
    const commands = commandsOf(ctx.toolCall.rawInput);
    if (commands) {
      let covering: Rule | undefined;
      let allCovered = true;
      for (const command of commands) {
        let covered: Rule | undefined;
        for (const rule of compiled.byCommandHead.get(command.argv[0] ?? "") ?? []) {
          if (rule.matcher.type !== "command" || !live(rule) || !everyCommandHasPrefix([command], rule.matcher.prefix)) continue;
          if (rule.decision === "reject") reject ??= rule;
          else covered ??= rule;
        }
        if (!covered) allCovered = false;
        covering ??= covered;
      }
      if (allCovered && covering) allow ??= covering;
    }
  }
  const rule = reject ?? (allow && !NEVER_AUTO_ALLOWED.has(kind) ? allow : undefined);
  if (!rule) return { decision: null };
  const option = chooseOption(rule.decision, ctx.options);
  // No option of the decided kind was offered: people are asked as usual. Never `cancelled`.
  if (!option) return { decision: null };
  return { decision: rule.decision, rule, option };
}

/** allow_once / reject_once first, so the gateway stays the one authority; else the *_always kind. */
export function chooseOption(decision: "allow" | "reject", options: PermissionOptionLike[]): PermissionOptionLike | undefined {
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

function wholeCallMatches(m: Matcher, ctx: DecisionContext, kind: string): boolean {
  if (m.type === "tool") return m.kind === kind && (m.name === undefined || m.name === ctx.toolCall.name);
  if (m.type === "exact") return ctx.exactHash !== undefined && m.hash === ctx.exactHash;
  return false;
}

function pathRuleMatches(rule: Rule, m: Extract<Matcher, { type: "path" }>, kind: string, paths: string[] | null): boolean {
  if (!PATH_KINDS.has(kind) || (m.kinds && !m.kinds.includes(kind))) return false;
  if (!paths || paths.length === 0) return false;
  // A rule scoped to a project never covers a path outside it (TC-21).
  const project = rule.scope?.project;
  if (project && !paths.every((p) => isWithin(p, project))) return false;
  return paths.every((p) => globMatches(m.glob, p));
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
    case "path":
      return `path ${(m.kinds ?? []).join(",")} ${m.glob}`;
    case "exact":
      return `exact ${m.hash}`;
  }
}
