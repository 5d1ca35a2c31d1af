// A pending permission request's params, parsed once when its row is read: the tool call it names
// and the options it offers. Everything downstream (judging an answer, remembering a decision, the
// audit, the rules) uses these fields; only the copies sent to clients use the raw text.

import { isObject } from "../../protocol/jsonrpc";
import { type PermissionOption, offeredOptions } from "../../protocol/permissions";

export interface ParsedParams {
  /** The request's `toolCall` object as the agent sent it (the table's row may know more). */
  toolCall: Record<string, unknown> | null;
  /** The options offered that have an optionId and a kind: the only ones an answer may choose. */
  options: PermissionOption[];
}

export function parsePermissionParams(text: string): ParsedParams {
  return parsedParams(JSON.parse(text));
}

export function parsedParams(params: unknown): ParsedParams {
  const toolCall = isObject(params) && isObject(params.toolCall) ? params.toolCall : null;
  return { toolCall, options: offeredOptions(params) };
}
