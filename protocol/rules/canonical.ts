// Canonical JSON (keys sorted, no whitespace) and its SHA-256, for `exact` rules: the operation
// { kind, name, rawInput } hashed the same way whatever order the agent wrote its keys in.

import { sha256Hex } from "../ids";

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

export function exactHash(toolCall: Record<string, unknown>): Promise<string> {
  return sha256Hex(canonicalJson({ kind: toolCall.kind ?? null, name: toolCall.name ?? null, rawInput: toolCall.rawInput ?? null }));
}
