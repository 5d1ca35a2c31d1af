// The reading of a call no adapter identifies — an agent or tool the gateway has no table for, or
// a known agent's call without its name. Never looser than any adapter's table (a test holds every
// escalating value of every adapter against it): an execute call's command shapes and directory
// fields, a path call's file fields and edit text; any other field makes the call ambiguous.

import { isObject } from "../jsonrpc";
import type { InputReading } from "./reading";
import { editsOnly } from "./table";

const COMMAND_FIELDS = ["command", "cmd", "argv", "script"];
const DIRECTORY_FIELDS = ["cwd", "workdir", "working_directory", "dir", "directory"];
/** Fields of an execute call known to change nothing about what runs or where, with the values that do not. */
const EXECUTE_INERT: Record<string, (v: unknown) => boolean> = {
  args: (v) => Array.isArray(v) && v.every((x) => typeof x === "string"),
  description: (v) => typeof v === "string",
  timeout: (v) => typeof v === "number",
  timeout_ms: (v) => typeof v === "number",
  justification: (v) => typeof v === "string",
  run_in_background: (v) => v === false,
};
/** File fields the agents use, in every call of every kind: the Operation's paths include them. */
const FILE_FIELDS = ["file_path", "filePath", "filepath", "path", "paths", "notebook_path", "absolute_path"];
/** Fields of a read, edit, delete or move call that carry the change's text, not where it goes. */
const PATH_INERT: Record<string, (v: unknown) => boolean> = {
  content: (v) => typeof v === "string",
  old_string: (v) => typeof v === "string",
  new_string: (v) => typeof v === "string",
  oldString: (v) => typeof v === "string",
  newString: (v) => typeof v === "string",
  replace_all: (v) => typeof v === "boolean",
  replaceAll: (v) => typeof v === "boolean",
  diff: (v) => typeof v === "string",
  offset: (v) => typeof v === "number",
  limit: (v) => typeof v === "number",
  description: (v) => typeof v === "string",
  edits: editsOnly,
};
const PATH_KINDS = new Set(["read", "edit", "delete", "move"]);

export function readGeneric(kind: string, raw: unknown): InputReading {
  const files = fileFieldsOf(raw);
  const base = { adapter: null, files };
  if (kind === "execute") {
    const directory = isObject(raw) ? raw[DIRECTORY_FIELDS.find((k) => raw[k] !== undefined) ?? ""] : undefined;
    return { ...base, commandInput: raw, directory, ambiguity: executeAmbiguity(raw) };
  }
  const directory = undefined;
  if (!PATH_KINDS.has(kind)) return { ...base, commandInput: undefined, directory, ambiguity: null };
  return { ...base, commandInput: undefined, directory, ambiguity: pathAmbiguity(raw) };
}

function executeAmbiguity(raw: unknown): string | null {
  if (!isObject(raw)) return null;
  const keys = Object.keys(raw).filter((k) => raw[k] !== undefined);
  const commands = keys.filter((k) => COMMAND_FIELDS.includes(k));
  if (commands.length > 1) return `it names the command in more than one field (${commands.join(", ")})`;
  const dirs = keys.filter((k) => DIRECTORY_FIELDS.includes(k));
  if (dirs.length > 1) return `it names the directory in more than one field (${dirs.join(", ")})`;
  const unknown = keys.filter((k) => !COMMAND_FIELDS.includes(k) && !DIRECTORY_FIELDS.includes(k) && !Object.hasOwn(EXECUTE_INERT, k));
  if (unknown.length > 0) return `it carries fields the gateway does not know (${unknown.slice(0, 5).join(", ")})`;
  const escalating = keys.filter((k) => Object.hasOwn(EXECUTE_INERT, k) && !(EXECUTE_INERT[k] as (v: unknown) => boolean)(raw[k]));
  if (escalating.length > 0) return `it asks for more than what it runs (${escalating.join(", ")})`;
  if (raw.script !== undefined) return "it names the command as a script field the gateway does not read";
  if (raw.args !== undefined && typeof raw.command !== "string" && typeof raw.cmd !== "string")
    return "it gives arguments without a program";
  return null;
}

function pathAmbiguity(raw: unknown): string | null {
  if (raw === undefined || raw === null) return null;
  if (!isObject(raw)) return "its input is not an object naming files";
  const keys = Object.keys(raw).filter((k) => raw[k] !== undefined);
  const commands = keys.filter((k) => COMMAND_FIELDS.includes(k));
  if (commands.length > 0) return `it carries a command (${commands.join(", ")}) in a ${"file"} operation`;
  const unknown = keys.filter((k) => !FILE_FIELDS.includes(k) && !Object.hasOwn(PATH_INERT, k));
  if (unknown.length > 0) return `it carries fields the gateway does not know (${unknown.slice(0, 5).join(", ")})`;
  const wrong = keys.filter((k) => Object.hasOwn(PATH_INERT, k) && !(PATH_INERT[k] as (v: unknown) => boolean)(raw[k]));
  if (wrong.length > 0) return `it carries values the gateway does not know (${wrong.join(", ")})`;
  return null;
}

/** The generic file fields' paths, as given; null when one is not a path string. */
function fileFieldsOf(raw: unknown): string[] | null {
  if (!isObject(raw)) return [];
  const out: string[] = [];
  for (const field of FILE_FIELDS) {
    const v = raw[field];
    if (v === undefined) continue;
    if (typeof v === "string") out.push(v);
    else if (Array.isArray(v) && v.every((p) => typeof p === "string")) out.push(...v);
    else return null;
  }
  return out;
}
