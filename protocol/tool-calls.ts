// The tool-call reducer: one row per toolCallId, built from `tool_call`, `tool_call_update` and the
// `toolCall` of `session/request_permission`, with the spec's merge rules (tool-calls-spec.txt):
// - a field that is omitted or null leaves the stored value unchanged (so `name` can't be cleared);
// - arrays (`content`, `locations`) replace, they do not append;
// - rawInput / rawOutput keep any JSON value (string, number, boolean, array, object);
// - an update for an unknown id creates the row; a new row's status is `pending`;
// - any status the agent sends is recorded as sent: the gateway invents none.
// Unknown fields and `_meta` follow the same rule, so nothing the agent said is lost.

import { isObject, type JsonObject } from "./jsonrpc";

export type ToolCallRow = JsonObject & { toolCallId: string; status: unknown };

export const TOOL_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"] as const;

/** Returns the merged row, or undefined when `patch` carries no usable toolCallId. */
export function reduceToolCall(previous: ToolCallRow | undefined, patch: unknown): ToolCallRow | undefined {
  if (!isObject(patch) || typeof patch.toolCallId !== "string" || patch.toolCallId === "") return undefined;
  const row: JsonObject = previous ? { ...previous } : { toolCallId: patch.toolCallId, status: "pending" };
  for (const [key, value] of Object.entries(patch)) {
    if (key === "sessionUpdate" || value === null || value === undefined) continue;
    row[key] = value;
  }
  // SAFETY: toolCallId was checked above and status set on creation; later patches only add fields.
  return row as ToolCallRow;
}

/** The session/update kinds that carry a tool call. */
export function isToolCallUpdate(update: unknown): update is JsonObject & { toolCallId: string } {
  return (
    isObject(update) &&
    (update.sessionUpdate === "tool_call" || update.sessionUpdate === "tool_call_update") &&
    typeof update.toolCallId === "string"
  );
}
