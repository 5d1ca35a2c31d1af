// One description of an operation: what people see in a permission request, what the audit records
// and what the remembered-decision matcher judges all come from here. It understands the shapes
// real agents send for a command — a plain string, `{ command }`, `{ cmd }`, `{ command, args }`,
// argv arrays (`["bash", "-lc", "…"]`, `{ argv }`) — their working directory (`cwd`, `workdir`)
// and the paths of a call (locations and diffs), resolved.

import { isObject } from "./jsonrpc";
import { commandText, commandsOf, looseWordsOf } from "./rules/command";
import { pathsOf, resolvePath } from "./rules/paths";
import type { SimpleCommand } from "./rules/shell";

export interface Operation {
  kind: string;
  name: string | null;
  /** The command as one line, for people and for the audit; null when the call carries none. */
  command: string | null;
  /** The simple commands bash would run, or null when there is no command or it cannot be judged. */
  commands: SimpleCommand[] | null;
  /** Every word of the command, when it cannot be judged: what reject rules are held against. */
  looseWords: string[] | null;
  /**
   * The directory the command runs in: the call's own `cwd`/`workdir` resolved against the session's,
   * else the session's; null when the call names one that cannot be understood.
   */
  workdir: string | null;
  /** Every resolved path the call touches; null when one is not absolute. */
  paths: string[] | null;
}

export function describeOperation(toolCall: Record<string, unknown>, sessionCwd: string): Operation {
  const raw = toolCall.rawInput;
  const command = commandText(raw);
  const commands = command === null ? null : commandsOf(raw);
  return {
    kind: typeof toolCall.kind === "string" ? toolCall.kind : "other",
    name: typeof toolCall.name === "string" ? toolCall.name : null,
    command,
    commands,
    looseWords: command !== null && commands === null ? looseWordsOf(raw) : null,
    workdir: workdirOf(raw, sessionCwd),
    paths: pathsOf(toolCall),
  };
}

/** The operation as one line for the audit: the command, else the paths. */
export function operationSummary(toolCall: Record<string, unknown>, sessionCwd: string): string | null {
  const op = describeOperation(toolCall, sessionCwd);
  if (op.command !== null) return op.command;
  const raw: string[] = [];
  if (Array.isArray(toolCall.locations))
    for (const l of toolCall.locations) if (isObject(l) && typeof l.path === "string") raw.push(l.path);
  if (Array.isArray(toolCall.content)) {
    for (const c of toolCall.content)
      if (isObject(c) && c.type === "diff" && typeof c.path === "string" && !raw.includes(c.path)) raw.push(c.path);
  }
  return raw.length > 0 ? raw.join(", ") : null;
}

function workdirOf(raw: unknown, sessionCwd: string): string | null {
  const base = resolvePath(sessionCwd);
  if (!isObject(raw)) return base;
  const given = raw.cwd ?? raw.workdir ?? raw.working_directory;
  if (given === undefined || given === null) return base;
  if (typeof given !== "string" || given === "") return null;
  if (given.startsWith("/")) return resolvePath(given);
  if (base === null || /(^|\/)~/.test(given) || given.includes("$")) return null;
  return resolvePath(`${base}/${given}`);
}
