// Canonical JSON (keys sorted, no whitespace) and its SHA-256, for `exact` rules. Exact means the
// whole operation: kind, name, raw input, every location path, every diff's path and content, and
// the command with its arguments — hashed the same way whatever order the agent wrote its keys in.

import { isObject } from "../jsonrpc";
import { sha256Hex } from "../ids";
import { commandText } from "./command";

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

/** What an exact rule identifies: everything the operation does, nothing the agent merely says about it. */
function exactOperation(toolCall: Record<string, unknown>): Record<string, unknown> {
  const locations = Array.isArray(toolCall.locations) ? toolCall.locations.map((l) => (isObject(l) ? (l.path ?? null) : null)) : [];
  const diffs = Array.isArray(toolCall.content)
    ? toolCall.content
        .filter((c) => isObject(c) && c.type === "diff")
        .map((c) => ({ path: c.path ?? null, oldText: c.oldText ?? null, newText: c.newText ?? null }))
    : [];
  return {
    kind: toolCall.kind ?? null,
    name: toolCall.name ?? null,
    rawInput: toolCall.rawInput ?? null,
    locations,
    diffs,
    command: commandText(toolCall.rawInput),
  };
}

/** True when nothing identifies the operation: no raw input, no command, no paths, no diffs. */
export function isUnidentifiable(toolCall: Record<string, unknown>): boolean {
  const op = exactOperation(toolCall);
  return op.rawInput === null && op.command === null && (op.locations as unknown[]).length === 0 && (op.diffs as unknown[]).length === 0;
}

export function exactHash(toolCall: Record<string, unknown>): Promise<string> {
  return sha256Hex(canonicalJson(exactOperation(toolCall)));
}
