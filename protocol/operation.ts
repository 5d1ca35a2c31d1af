// One description of an operation: what people see in a permission request, what the audit records,
// four eyes and the remembered-decision matcher judge all come from here (decision 0039).
// - The tool is identified by its identity (ACP `name`, the agent's `_meta` tool name, codex's event
//   shape), never its title, and its input read by that tool's table (protocol/adapters/): which
//   field is the command, the directory, the files; which change nothing, and with which values;
//   which escalate (a sandbox disabled, a background process, network access). A call no table
//   identifies is read by the generic table. Any field a table does not have, a field named twice or
//   an escalating value makes the call ambiguous: answered by no allow rule, never remembered.
// - The command: a script judged by the bash parser, or an argv array, with `bash -c`/`-lc`,
//   `sh -c` and their system paths judged by their script (protocol/rules/shell.ts).
// - The paths: `locations`, diffs and every file the input names, resolved (relative ones against
//   the call's directory, else the session's). A read/edit/delete/move whose input names a file its
//   locations and diffs do not, or carries a command, is ambiguous.

import { readToolInput } from "./adapters";
import { isObject } from "./jsonrpc";
import { commandText, commandsOf, looseWordsOf } from "./rules/command";
import { looseWords } from "./rules/shell";
import { pathsOf, resolveAgainst, resolvePath } from "./rules/paths";
import type { SimpleCommand } from "./rules/shell";

export interface Operation {
  kind: string;
  name: string | null;
  /** The table that read the call's input (`claude-code Bash`), or null for the generic one. */
  adapter: string | null;
  /** The command as one line, for people and for the audit; null when the call carries none. */
  command: string | null;
  /** The simple commands bash would run, or null when there is no command or it cannot be judged. */
  commands: SimpleCommand[] | null;
  /** Every word of the command, when it cannot be judged: what reject rules are held against. */
  looseWords: string[] | null;
  /**
   * The directory the command runs in: the call's own directory field resolved against the
   * session's, else the session's; null when the call names one that cannot be understood.
   */
  workdir: string | null;
  /** Every resolved path the call touches (locations, diffs, the input's files); null when one cannot be resolved. */
  paths: string[] | null;
  /**
   * Why the call has no one meaning — a field its tool's table does not have, the command or its
   * directory named twice, an escalating value, a file named beside its locations — or null. Such a
   * call is answered by no allow rule and never remembered: a tool may do what the engine did not read.
   */
  ambiguity: string | null;
}

const PATH_KINDS = new Set(["read", "edit", "delete", "move"]);

export function describeOperation(toolCall: Record<string, unknown>, sessionCwd: string): Operation {
  const raw = toolCall.rawInput;
  const kind = typeof toolCall.kind === "string" ? toolCall.kind : "other";
  const reading = readToolInput(toolCall, kind);
  const workdir = workdirOf(reading.directory, sessionCwd);
  const shown = pathsOf(toolCall);
  const named = reading.files === null ? null : resolveAll(reading.files, workdir);
  const ambiguity = reading.ambiguity ?? (PATH_KINDS.has(kind) ? namedBeyondShown(reading.files, named, shown) : null);
  const command = commandText(reading.commandInput);
  const commands = command === null || ambiguity !== null ? null : commandsOf(reading.commandInput);
  return {
    kind,
    name: typeof toolCall.name === "string" ? toolCall.name : null,
    adapter: reading.adapter,
    command,
    commands,
    // An ambiguous call is held against rejects by every word of every field.
    looseWords: ambiguity !== null ? allWords(raw) : command !== null && commands === null ? looseWordsOf(reading.commandInput) : null,
    workdir: ambiguity !== null ? null : workdir,
    paths: shown === null || named === null ? null : [...new Set([...shown, ...named])],
    ambiguity,
  };
}

/** Each path resolved against the call's directory; null when one cannot be. */
function resolveAll(files: string[], workdir: string | null): string[] | null {
  const out: string[] = [];
  for (const f of files) {
    const p = resolveAgainst(f, workdir);
    if (p === null) return null;
    out.push(p);
  }
  return out;
}

/** Why a path call's input names a file the person is not shown in its locations and diffs, or null. */
function namedBeyondShown(given: string[] | null, named: string[] | null, shown: string[] | null): string | null {
  if (given !== null && named === null) return `it names a file the gateway cannot resolve (${given.join(", ").slice(0, 120)})`;
  if (named === null || shown === null || shown.length === 0) return null;
  const beyond = named.filter((p) => !shown.includes(p));
  return beyond.length > 0 ? `its input names ${beyond.slice(0, 3).join(", ")}, which its locations and diffs do not` : null;
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
  for (const p of op.paths ?? []) if (!raw.includes(p)) raw.push(p);
  return raw.length > 0 ? raw.join(", ") : null;
}

function workdirOf(given: unknown, sessionCwd: string): string | null {
  const base = resolvePath(sessionCwd);
  if (given === undefined || given === null) return base;
  if (typeof given !== "string" || given === "") return null;
  return resolveAgainst(given, base);
}
