// From a person's allow_always / reject_always answer, the narrowest sensible rule:
// - execute: the program plus its subcommand (`git status`, `npm test`; `npm run build` keeps the
//   script name), scoped to the session's project and agent; a command without a subcommand, a
//   compound command, or one the parser cannot judge becomes an `exact` rule for that one command;
// - read / edit / delete / move: the file itself, or its directory (`dir/**`) when the option's name
//   says so ("directory", "folder", "all files in"); several files in different places: `exact`;
// - any other tool with a name (MCP tools): that tool, by kind and name;
// - anything else: `exact`.
// switch_mode is never remembered as an allow: no rule may approve it.

import { commandText, commandsOf } from "./command";
import { pathsOf } from "./paths";
import type { Matcher } from "./rules";

export interface DerivedRule {
  decision: "allow" | "reject";
  scope: { project: string | null; agent: string | null; user: string | null };
  matcher: Matcher;
  description: string;
}

export interface DeriveInput {
  toolCall: Record<string, unknown>;
  optionKind: string;
  optionName: string;
  cwd: string;
  agent: string;
  /** SHA-256 of the canonical operation, for the exact fallback. */
  exactHash: string;
}

/** Subcommands that name a script or binary: the next token is part of what runs. */
const RUNNERS = new Set(["run", "run-script", "exec", "x", "dlx"]);

export function deriveRule(input: DeriveInput): DerivedRule | null {
  const decision = input.optionKind === "allow_always" ? "allow" : input.optionKind === "reject_always" ? "reject" : null;
  if (!decision) return null;
  const kind = typeof input.toolCall.kind === "string" ? input.toolCall.kind : "other";
  if (kind === "switch_mode" && decision === "allow") return null;
  const scope = { project: input.cwd.startsWith("/") ? input.cwd : null, agent: input.agent, user: null };
  const verb = decision === "allow" ? "Always allow" : "Always reject";
  const where = `${scope.project ? ` in ${scope.project}` : ""} (agent ${input.agent})`;
  const exact = (what: string): DerivedRule => ({
    decision,
    scope,
    matcher: { type: "exact", hash: input.exactHash },
    description: `${verb} exactly ${what}${where}`,
  });

  if (kind === "execute") {
    const text = commandText(input.toolCall.rawInput) ?? "this command";
    const commands = commandsOf(input.toolCall.rawInput);
    if (!commands || commands.length !== 1) return exact(`\`${text}\``);
    const prefix = commandPrefix((commands[0] as { argv: string[] }).argv);
    if (!prefix) return exact(`\`${text}\``);
    return { decision, scope, matcher: { type: "command", prefix }, description: `${verb} \`${prefix.join(" ")} …\`${where}` };
  }

  if (kind === "read" || kind === "edit" || kind === "delete" || kind === "move") {
    const paths = pathsOf(input.toolCall);
    if (!paths || paths.length === 0) return exact(`this ${kind}`);
    const wantsDirectory = /\b(directory|folder|all files in)\b/i.test(input.optionName);
    if (wantsDirectory) {
      const dirs = new Set(paths.map(parentOf));
      if (dirs.size !== 1) return exact(`this ${kind} of ${paths.join(", ")}`);
      const dir = [...dirs][0] as string;
      return {
        decision,
        scope,
        matcher: { type: "path", kinds: [kind], glob: `${escapeGlob(dir)}/**` },
        description: `${verb} ${kind} of any file under ${dir}${where}`,
      };
    }
    if (paths.length !== 1) return exact(`this ${kind} of ${paths.join(", ")}`);
    const file = paths[0] as string;
    return {
      decision,
      scope,
      matcher: { type: "path", kinds: [kind], glob: escapeGlob(file) },
      description: `${verb} ${kind} of ${file}${where}`,
    };
  }

  const name = typeof input.toolCall.name === "string" ? input.toolCall.name : undefined;
  if (name) return { decision, scope, matcher: { type: "tool", kind, name }, description: `${verb} the ${kind} tool ${name}${where}` };
  return exact(`this ${kind} operation`);
}

/**
 * The program and its subcommand (`git status`), with the script for runners (`npm run build`).
 * A command without a subcommand (`rm -rf build`, `cat /etc/passwd`) has no narrow prefix: a prefix
 * of its first word would cover every use of the program, so it is remembered exactly instead (null).
 */
export function commandPrefix(argv: string[]): string[] | null {
  const [program, sub, third] = argv;
  if (program === undefined || sub === undefined || !/^[a-z][a-z0-9:_-]*$/i.test(sub)) return null;
  if (RUNNERS.has(sub)) return third !== undefined && !third.startsWith("-") ? [program, sub, third] : null;
  return [program, sub];
}

function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function escapeGlob(path: string): string {
  return path.replace(/[*?[]/g, (c) => `[${c}]`);
}
