// From a person's allow_always / reject_always answer, the narrowest rule that means what they approved:
// - execute, allow: a prefix (`git status`, `npm test`, `npm run build`) only for the forms in the
//   closed-world table (tools.ts), and only when the table understands every word of the command;
//   anything else that is one simple command — wrappers, remote runners, interpreters, every
//   program or subcommand not in the table — is remembered as its exact argv; a compound command,
//   or one the parser cannot judge, as the exact operation;
// - execute, reject: the program and its subcommand however spelled (`git push`), else the argv;
// The rule's project is the session's cwd, never a directory the agent names: a command the agent
// says runs elsewhere (its `cwd`/`workdir` outside the session's) is not remembered at all, an allow
// for one that runs in a subdirectory or a dependency tree is not remembered (it applies only where it
// was approved: rules.ts whereFor), and a call that names what runs or where more than once is not
// remembered either (operation.ts).
// - read / edit / delete / move: the file itself, or its directory (`dir/**`) when the option's name
//   says so ("directory", "folder", "all files in"); several files: the exact operation;
// - any other tool, named or not (MCP tools, web fetches): the exact operation — this agent, this
//   name, this whole input (canonical.ts). Never a rule on a kind or a name alone: the agent chooses both;
// A session whose cwd is `/` or a home directory never yields a prefix or directory rule: only
// exact ones. A directory rule never covers files that decide what commands run (command-files.ts). An operation with nothing to identify it is never remembered: the result says why.
// switch_mode is never remembered as an allow: no rule may approve it. Given the tenant's four-eyes
// policy, an allow that would cover an operation it holds is not made (issue 35).

import type { FourEyesSettings } from "../../core/principal";
import { type Operation, describeOperation } from "../operation";
import { allowRuleCoversHeld } from "../people/four-eyes";
import { isUnidentifiable } from "./canonical";
import { inForeignTree, isWithin, resolvePath } from "./paths";
import { derivablePrefix, prefixCovers } from "./coverage";
import { basename, subcommandPositions } from "./programs";
import type { Matcher } from "./rules";
import type { SimpleCommand } from "./shell";

export interface DerivedRule {
  decision: "allow" | "reject";
  scope: { project: string | null; agent: string | null; user: string | null };
  matcher: Matcher;
  description: string;
}

/** A rule, or why none was made (the person is told); null when the answer was not an *_always one. */
export type DeriveResult = DerivedRule | { reason: string } | null;

export interface DeriveInput {
  toolCall: Record<string, unknown>;
  optionKind: string;
  optionName: string;
  cwd: string;
  agent: string;
  /** SHA-256 of the canonical operation, for the exact fallback. */
  exactHash: string;
  /**
   * The tenant's four-eyes policy, when the caller has it: an allow that would cover an operation it
   * holds is not made (people/four-eyes.ts allowRuleCoversHeld). Absent: not checked here.
   */
  fourEyes?: FourEyesSettings;
}

/**
 * A path rule is scoped to the project and never covers a path outside it (TC-21): storing one would
 * make a rule that never answers anything (issue 38), so the person is told why instead.
 */
function outsideProject(path: string, project: string | null): { reason: string } | null {
  if (project === null || isWithin(path, project)) return null;
  return {
    reason: `Not remembered: ${path} is outside this session's project ${project}, and a rule scoped to the project never covers it. You are asked each time.`,
  };
}

export function deriveRule(input: DeriveInput): DeriveResult {
  const op = describeOperation(input.toolCall, input.cwd);
  const derived = deriveFrom(input, op);
  if (derived === null || "reason" in derived || input.fourEyes === undefined) return derived;
  // No "always" yields a rule that covers an operation four eyes holds (issue 35).
  const held = allowRuleCoversHeld(derived, input.fourEyes, op);
  return held === null ? derived : { reason: `Not remembered: ${held}. A second person is asked each time.` };
}

function deriveFrom(input: DeriveInput, op: Operation): DeriveResult {
  const decision = input.optionKind === "allow_always" ? "allow" : input.optionKind === "reject_always" ? "reject" : null;
  if (!decision) return null;
  if (op.kind === "switch_mode" && decision === "allow")
    return { reason: "Leaving a mode is never remembered as an allow: you are asked each time." };
  if (isUnidentifiable(input.toolCall)) {
    return {
      reason:
        "Not remembered: this request carries nothing that identifies the operation (no input, command or paths), so you are asked each time.",
    };
  }
  if (op.ambiguity !== null) {
    return { reason: `Not remembered: ${op.ambiguity}, so what runs may not be what you read. You are asked each time.` };
  }
  const sessionCwd = resolvePath(input.cwd);
  if (op.kind === "execute" && (op.workdir === null || sessionCwd === null || !isWithin(op.workdir, sessionCwd))) {
    return {
      reason: `Not remembered: the command runs in ${op.workdir ?? "a directory the gateway cannot read"}, outside this session's project ${sessionCwd ?? "(none)"}. You are asked each time.`,
    };
  }
  // An allow applies only in the directory where it was approved (rules.ts whereFor): one asked in a
  // subdirectory, or in a dependency or vendored tree, would never answer anything, so it is not made.
  if (op.kind === "execute" && decision === "allow" && (op.workdir !== sessionCwd || inForeignTree(op.workdir ?? "/"))) {
    return {
      reason: `Not remembered: the command runs in ${op.workdir ?? "?"}, and an allow applies only in the directory it was approved in (${sessionCwd ?? "(none)"}), never in a subdirectory, dependency or vendored tree. You are asked each time.`,
    };
  }
  const scope = { project: sessionCwd, agent: input.agent, user: null };
  // Broad rules (prefix, directory) only for a session in a project, never `/` or a home directory.
  const broad = sessionCwd !== null && !isRootOrHome(sessionCwd);
  const verb = decision === "allow" ? "Always allow" : "Always reject";
  const where = `${scope.project ? ` in ${scope.project}` : ""} (agent ${input.agent})`;
  const exact = (what: string): DerivedRule => ({
    decision,
    scope,
    matcher: { type: "exact", hash: input.exactHash },
    description: `${verb} exactly ${what}, nothing else${where}`,
  });

  if (op.kind === "execute") {
    const text = op.command ?? "this command";
    const commands = op.commands;
    if (!commands || commands.length !== 1) return exact(`\`${text}\``);
    const command = commands[0] as SimpleCommand;
    if (command.fuzzy.some(Boolean)) return exact(`\`${text}\``);
    if (decision === "allow") {
      const prefix =
        broad && sessionCwd !== null && op.workdir !== null ? derivablePrefix(command, { workdir: op.workdir, project: sessionCwd }) : null;
      if (prefix) {
        return {
          decision,
          scope,
          matcher: { type: "command", prefix },
          description: `${verb} \`${prefix.join(" ")}\` ${prefixCovers(prefix)},${where}`,
        };
      }
    } else {
      const prefix = rejectPrefix(command);
      if (prefix) {
        return {
          decision,
          scope,
          matcher: { type: "command", prefix },
          description: `${verb} \`${prefix.join(" ")}\`, however it is spelled${where}`,
        };
      }
    }
    const argv = command.argv;
    return {
      decision,
      scope,
      matcher: { type: "argv", argv },
      description: `${verb} exactly \`${argv.map(shellQuote).join(" ")}\` (these arguments, nothing more)${where}`,
    };
  }

  if (op.kind === "read" || op.kind === "edit" || op.kind === "delete" || op.kind === "move") {
    const paths = op.paths;
    if (!paths || paths.length === 0) return exact(`this ${op.kind}`);

    const wantsDirectory = /\b(directory|folder|all files in)\b/i.test(input.optionName);
    if (wantsDirectory && broad) {
      const dirs = new Set(paths.map(parentOf));
      const dir = dirs.size === 1 ? ([...dirs][0] as string) : null;
      if (dir === null || dir === "/" || isRootOrHome(dir) || (sessionCwd !== null && isWithin(sessionCwd, dir) && dir !== sessionCwd)) {
        return exact(`this ${op.kind} of ${paths.join(", ")}`);
      }
      const dead = outsideProject(dir, sessionCwd);
      if (dead) return dead;
      return {
        decision,
        scope,
        matcher: { type: "path", kinds: [op.kind], glob: `${escapeGlob(dir)}/**` },
        description: `${verb} ${op.kind} of any file under ${dir}, except files that decide what commands run (.git/, Makefile, package.json, .npmrc…)${where}`,
      };
    }
    if (paths.length !== 1) return exact(`this ${op.kind} of ${paths.join(", ")}`);
    const file = paths[0] as string;
    const dead = outsideProject(file, sessionCwd);
    if (dead) return dead;
    return {
      decision,
      scope,
      matcher: { type: "path", kinds: [op.kind], glob: escapeGlob(file) },
      description: `${verb} ${op.kind} of ${file}${where}`,
    };
  }

  // A tool's name is never a rule by itself: the agent chooses both the kind and the name (ACP: a
  // name "does not advertise a capability or grant authorization"). Exact: this agent, this name,
  // this whole input.
  if (op.name) return exact(`this call of the ${op.kind} tool ${op.name}, with this exact input`);
  return exact(`this ${op.kind} operation`);
}

/** A reject's program and subcommand, found past global options (`git -C . push` → `git push`). */
function rejectPrefix(command: SimpleCommand): string[] | null {
  const program = basename(command.argv[0] ?? "");
  const at = subcommandPositions(command.argv, command.fuzzy);
  if (at.length !== 1) return null;
  const sub = command.argv[at[0] as number];
  if (sub === undefined || !/^[a-z][a-z0-9:_-]*$/i.test(sub)) return null;
  return [program, sub];
}

/** `/`, `/root`, `/home/x`, `/Users/x` (and `/home`, `/Users` themselves). */
function isRootOrHome(dir: string): boolean {
  return /^\/(root|home(\/[^/]+)?|Users(\/[^/]+)?)?$/.test(dir);
}

function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function escapeGlob(path: string): string {
  return path.replace(/[*?[]/g, (c) => `[${c}]`);
}
