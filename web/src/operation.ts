// What a tool call does, from its kind, command and paths — never from its title, which is the
// agent's own words. Uses the gateway's own parsers (protocol/rules), so the console shows the
// command and resolved paths exactly as the rules engine sees them.

import { commandText } from "../../protocol/rules/command";
import { pathsOf } from "../../protocol/rules/paths";
import { displayString } from "../../protocol/display-text";
import { type JsonObject, isObject } from "../../protocol/jsonrpc";

export interface Diff {
  path: string;
  oldText: string | null;
  newText: string;
}

export interface Location {
  path: string;
  line?: number;
}

export function kindOf(call: JsonObject): string {
  // Shown on badges and labels: any control in the agent's kind is a visible symbol.
  return typeof call.kind === "string" ? displayString(call.kind) : "other";
}

export function commandOf(call: JsonObject): string | null {
  return commandText(call.rawInput);
}

/** The working directory the agent gave for a command, if it gave one. */
export function workdirOf(call: JsonObject): string | null {
  const input = call.rawInput;
  if (!isObject(input)) return null;
  for (const key of ["cwd", "workdir", "workingDirectory", "working_directory"]) if (typeof input[key] === "string") return input[key];
  return null;
}

/** Every path the call touches, resolved (`..` removed) as the rules engine sees them; raw if not absolute. */
export function pathsOfCall(call: JsonObject): string[] {
  const resolved = pathsOf(call);
  if (resolved) return resolved;
  const raw = new Set<string>();
  for (const l of locationsOf(call)) raw.add(l.path);
  for (const d of diffsOf(call)) raw.add(d.path);
  return [...raw];
}

export function locationsOf(call: JsonObject): Location[] {
  if (!Array.isArray(call.locations)) return [];
  return call.locations.flatMap((l) =>
    isObject(l) && typeof l.path === "string" ? [{ path: l.path, ...(typeof l.line === "number" ? { line: l.line } : {}) }] : [],
  );
}

export function diffsOf(call: JsonObject): Diff[] {
  if (!Array.isArray(call.content)) return [];
  return call.content.flatMap((c) =>
    isObject(c) && c.type === "diff" && typeof c.path === "string"
      ? [
          {
            path: c.path,
            oldText: typeof c.oldText === "string" ? c.oldText : null,
            newText: typeof c.newText === "string" ? c.newText : "",
          },
        ]
      : [],
  );
}

/** One line naming the operation for notices: "edit /p/README.md", "execute npm test". */
export function operationLine(call: JsonObject): string {
  const command = commandOf(call);
  if (command) return `${kindOf(call)} \`${command}\``;
  const paths = pathsOfCall(call);
  if (paths.length > 0) return `${kindOf(call)} ${paths.join(", ")}`;
  return typeof call.name === "string" ? `${kindOf(call)} ${call.name}` : kindOf(call);
}
