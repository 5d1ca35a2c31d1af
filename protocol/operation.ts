// One description of an operation: what people see in a permission request, what the audit records
// and what the remembered-decision matcher judges all come from here. It understands the shapes
// real agents send for a command — a plain string, `{ command }`, `{ cmd }`, `{ command, args }`,
// argv arrays (`["bash", "-lc", "…"]`, `{ argv }`) — their working directory (`cwd`, `workdir`)
// and the paths of a call (locations and diffs), resolved.

import { isObject } from "./jsonrpc";
import { commandText, commandsOf, looseWordsOf } from "./rules/command";
import { looseWords } from "./rules/shell";
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
  /**
   * Why the call has no one meaning — it names the command or its directory more than once, or
   * carries a field the gateway does not know (`env`, `shell`…) — or null. Such a call is answered by
   * no allow rule and never remembered: a tool may run what the engine did not read.
   */
  ambiguity: string | null;
}

/** Fields of an execute call's rawInput that name what runs, and where. */
const COMMAND_FIELDS = ["command", "cmd", "argv", "script"];
const DIRECTORY_FIELDS = ["cwd", "workdir", "working_directory", "dir", "directory"];
/** Fields known to change nothing about what runs or where. */
const HARMLESS_FIELDS = new Set(["args", "description", "timeout", "timeout_ms", "run_in_background", "justification"]);

export function describeOperation(toolCall: Record<string, unknown>, sessionCwd: string): Operation {
  const raw = toolCall.rawInput;
  const kind = typeof toolCall.kind === "string" ? toolCall.kind : "other";
  const ambiguity = kind === "execute" ? ambiguityOf(raw) : null;
  const command = commandText(raw);
  const commands = command === null || ambiguity !== null ? null : commandsOf(raw);
  return {
    kind,
    name: typeof toolCall.name === "string" ? toolCall.name : null,
    command,
    commands,
    // An ambiguous call is held against rejects by every word of every field.
    looseWords: ambiguity !== null ? allWords(raw) : command !== null && commands === null ? looseWordsOf(raw) : null,
    workdir: ambiguity !== null ? null : workdirOf(raw, sessionCwd),
    paths: pathsOf(toolCall),
    ambiguity,
  };
}

function ambiguityOf(raw: unknown): string | null {
  if (!isObject(raw)) return null;
  const keys = Object.keys(raw);
  const commands = keys.filter((k) => COMMAND_FIELDS.includes(k));
  if (commands.length > 1) return `it names the command in more than one field (${commands.join(", ")})`;
  const dirs = keys.filter((k) => DIRECTORY_FIELDS.includes(k));
  if (dirs.length > 1) return `it names the directory in more than one field (${dirs.join(", ")})`;
  const unknown = keys.filter((k) => !COMMAND_FIELDS.includes(k) && !DIRECTORY_FIELDS.includes(k) && !HARMLESS_FIELDS.has(k));
  if (unknown.length > 0) return `it carries fields the gateway does not know (${unknown.slice(0, 5).join(", ")})`;
  if (raw.script !== undefined) return "it names the command as a script field the gateway does not read";
  if (raw.args !== undefined && typeof raw.command !== "string" && typeof raw.cmd !== "string")
    return "it gives arguments without a program";
  return null;
}

/** Every word of every string in the value, for rejects. */
function allWords(value: unknown, depth = 0): string[] {
  if (typeof value === "string") return looseWords(value);
  if (depth > 8) return [];
  if (Array.isArray(value)) return value.flatMap((v) => allWords(v, depth + 1));
  if (isObject(value)) return Object.values(value).flatMap((v) => allWords(v, depth + 1));
  return [];
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
  const field = DIRECTORY_FIELDS.find((k) => raw[k] !== undefined);
  const given = field === undefined ? undefined : raw[field];
  if (given === undefined || given === null) return base;
  if (typeof given !== "string" || given === "") return null;
  if (given.startsWith("/")) return resolvePath(given);
  if (base === null || /(^|\/)~/.test(given) || given.includes("$")) return null;
  return resolvePath(`${base}/${given}`);
}
