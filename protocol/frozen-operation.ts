// The operation a permission request is judged on, frozen when it is asked (decision 0040): the
// tool call as the request carried it merged over the session's row at that moment. It is what
// every client is shown, what four eyes and the rules judge, what an "always" derives from and what
// the audit records; the agent cannot change it afterwards. A change of the row that changes its
// digest while the request waits means the agent now means another operation: the machine asks again.

import { isObject } from "./jsonrpc";
import { canonicalJson } from "./rules/canonical";
import { sha256HexSync } from "./sha256";
import { type ToolCallRow, reduceToolCall } from "./tool-calls";
import { MAX_STORED_ROW_BYTES, utf8LongerThan } from "./limits";

/** The frozen operation and its digest, kept with the pending request (its `request` column). */
export interface FrozenOperation {
  operation: Record<string, unknown>;
  operationHash: string;
}

/**
 * `patch` (the request's tool call, or an update of it) merged over the row as the session's table
 * merges them (protocol/tool-calls.ts) — computed here, so an update the table could not store (a
 * row past its size bound) still counts. The row may hold the patch already: merging again changes nothing.
 */
export function freezeOperation(row: ToolCallRow | undefined, patch: Record<string, unknown> | null): FrozenOperation {
  const operation: Record<string, unknown> = reduceToolCall(row, patch) ?? row ?? { ...(patch ?? {}) };
  return { operation, operationHash: operationHash(operation) };
}

/** Whether the operation is too large to keep with its request (its own row in the session's SQLite). */
export function tooLargeToFreeze(operation: Record<string, unknown>): boolean {
  return utf8LongerThan(JSON.stringify(operation), MAX_STORED_ROW_BYTES);
}

/**
 * What the digest covers: everything the agent will act on — the kind, the name, the raw input, every
 * location's path (not its line), every content item but plain text (a diff's path and texts, a terminal's id). Not
 * the status, the raw output or the title: a status-only update (in_progress, output) is no new operation.
 */
function judged(operation: Record<string, unknown>): Record<string, unknown> {
  const locations = Array.isArray(operation.locations) ? operation.locations.map((l) => (isObject(l) ? (l.path ?? null) : l)) : [];
  const content = Array.isArray(operation.content) ? operation.content.filter((c) => !(isObject(c) && c.type === "content")) : [];
  return {
    kind: operation.kind ?? null,
    name: operation.name ?? null,
    rawInput: operation.rawInput ?? null,
    locations,
    content,
  };
}

/** SHA-256 of the judged part of the operation, as canonical JSON (keys sorted: the agent's key order does not matter). */
export function operationHash(operation: Record<string, unknown>): string {
  return sha256HexSync(canonicalJson(judged(operation)));
}

/** Which judged fields differ between two operations (for the notice that says why a request is asked again). */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const a = judged(before);
  const b = judged(after);
  return Object.keys(a).filter((k) => canonicalJson(a[k]) !== canonicalJson(b[k]));
}

/**
 * ACP 1.9.1: explicit confirmation when `rawInput` is missing. Missing when the request's own tool call
 * carries none (absent or null — whatever an earlier `tool_call` said), or the frozen operation has none.
 */
export function rawInputMissing(requestToolCall: Record<string, unknown> | null, operation: Record<string, unknown>): boolean {
  const own = requestToolCall?.rawInput;
  return own === undefined || own === null || operation.rawInput === undefined || operation.rawInput === null;
}
