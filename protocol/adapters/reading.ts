// Applying one tool's table to its input: the command, directory and files it names, or why the
// call has no one meaning (a field the table does not have, a field named twice, an escalating value).

import { isObject } from "../jsonrpc";
import { changeFiles, patchFiles } from "./patch";
import type { ToolAdapter } from "./table";

/** What a tool call's input says, read by its tool's table (or the generic one). */
export interface InputReading {
  /** `agent tool` of the table that read it, or null for the generic table. */
  adapter: string | null;
  /** The command in a shape `commandsOf` reads (`{ command }`, or the whole input for the generic table); undefined when none. */
  commandInput: unknown;
  /** The directory value the input gives, as given; undefined when none. */
  directory: unknown;
  /** Every file path the input names, as given; null when one is not a path string. */
  files: string[] | null;
  /** Why the call has no one meaning, or null. */
  ambiguity: string | null;
}

export const NOTHING: InputReading = { adapter: null, commandInput: undefined, directory: undefined, files: [], ambiguity: null };

export function readWith(adapter: ToolAdapter, raw: unknown): InputReading {
  const name = `${adapter.agent} ${adapter.tool}`;
  if (raw === undefined || raw === null) return { ...NOTHING, adapter: name };
  if (!isObject(raw)) return { ...NOTHING, adapter: name, files: null, ambiguity: `its input is not the object ${name} takes` };
  const unknown: string[] = [];
  const commands: string[] = [];
  const directories: string[] = [];
  const escalations: string[] = [];
  let files: string[] | null = [];
  let commandInput: unknown;
  let directory: unknown;
  let unreadable: string | null = null;
  const addFiles = (found: string[] | null, field: string) => {
    if (found === null) {
      unreadable ??= `it names files in ${field} in a form the gateway cannot read`;
      files = null;
    } else if (files !== null) files.push(...found);
  };
  for (const [field, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const role = Object.hasOwn(adapter.fields, field) ? adapter.fields[field] : undefined;
    if (role === undefined) {
      unknown.push(field);
      continue;
    }
    switch (role.role) {
      case "command":
        commands.push(field);
        commandInput = { command: value };
        if (role.form === "script" ? typeof value !== "string" : !isArgv(value))
          unreadable ??= `it gives ${field} as ${role.form === "script" ? "something other than a script" : "something other than an argv array"}`;
        break;
      case "directory":
        directories.push(field);
        directory = value;
        break;
      case "file":
        addFiles(typeof value === "string" ? [value] : null, field);
        break;
      case "files":
        addFiles(Array.isArray(value) && value.every((v) => typeof v === "string") ? value : null, field);
        break;
      case "patch":
        addFiles(typeof value === "string" ? patchFiles(value) : null, field);
        break;
      case "changes":
        addFiles(changeFiles(value), field);
        break;
      case "inert":
        if (!role.inert(value)) escalations.push(`${role.escalates} (${field}: ${shortJson(value)})`);
        break;
    }
  }
  let ambiguity: string | null = null;
  if (unknown.length > 0) ambiguity = `it carries fields ${name} does not have (${unknown.slice(0, 5).join(", ")})`;
  else if (commands.length > 1) ambiguity = `it names the command in more than one field (${commands.join(", ")})`;
  else if (directories.length > 1) ambiguity = `it names the directory in more than one field (${directories.join(", ")})`;
  else if (unreadable !== null) ambiguity = unreadable;
  else if (escalations.length > 0) ambiguity = `it asks for more than what it runs or changes: ${escalations.join("; ")}`;
  return { adapter: name, commandInput, directory, files, ambiguity };
}

function isArgv(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string");
}

function shortJson(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
