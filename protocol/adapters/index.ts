// Agent adapters (decision 0039): which tool a call is, by its identity — the ACP `name`, the
// agent's `_meta` tool name (`_meta.claudeCode.toolName`, qwen's `_meta.toolName`) or its exact
// shape (codex's events) — never by its title, and what its input says, by that tool's table.
// A call no table identifies is read by the generic table (generic.ts).

import { isObject } from "../jsonrpc";
import { CLAUDE_CODE } from "./claude-code";
import { CODEX } from "./codex";
import { GEMINI_CLI } from "./gemini-cli";
import { readGeneric } from "./generic";
import { OPENCODE } from "./opencode";
import { QWEN_CODE } from "./qwen-code";
import { type InputReading, NOTHING, readWith } from "./reading";
import type { ToolAdapter } from "./table";

export type { InputReading } from "./reading";
export type { ToolAdapter } from "./table";

/** Every table, in the order a name shared by two agents is tried (qwen before its ancestor gemini). */
export const ADAPTERS: readonly ToolAdapter[] = [...CLAUDE_CODE, ...QWEN_CODE, ...CODEX, ...OPENCODE, ...GEMINI_CLI];

/** The call's input read by its tool's table, or by the generic one when no table identifies it. */
export function readToolInput(toolCall: Record<string, unknown>, kind: string): InputReading {
  const raw = toolCall.rawInput;
  const found = identify(toolCall, raw);
  if (typeof found === "string") return { ...NOTHING, files: null, ambiguity: found };
  if (found.length === 0) return readGeneric(kind, raw);
  const ofKind = found.filter((a) => a.kinds.includes(kind));
  const first = found[0] as ToolAdapter;
  if (ofKind.length === 0) {
    return {
      ...NOTHING,
      adapter: `${first.agent} ${first.tool}`,
      files: null,
      ambiguity: `it is ${first.agent}'s ${first.tool}, which is not a ${kind} tool`,
    };
  }
  // Two agents may share a tool name (qwen and gemini): the first table that knows every field reads it.
  const readings = ofKind.map((a) => readWith(a, raw));
  return readings.find((r) => r.ambiguity === null) ?? (readings[0] as InputReading);
}

/** The tables the call's identity names, [] when it names none, or why its identity conflicts. */
function identify(toolCall: Record<string, unknown>, raw: unknown): ToolAdapter[] | string {
  const meta = isObject(toolCall._meta) ? toolCall._meta : {};
  const claude = isObject(meta.claudeCode) && typeof meta.claudeCode.toolName === "string" ? meta.claudeCode.toolName : null;
  const qwen = typeof meta.toolName === "string" ? meta.toolName : null;
  const name = typeof toolCall.name === "string" ? toolCall.name : null;
  const names = [...new Set([claude, qwen, name].filter((n): n is string => n !== null))];
  if (names.length > 1) return `it names its tool more than once, differently (${names.join(", ")})`;
  if (claude !== null && qwen !== null) return "it carries two agents' tool names";
  const tool = names[0];
  if (tool !== undefined) {
    const agent = claude !== null ? "claude-code" : qwen !== null ? "qwen-code" : null;
    return ADAPTERS.filter((a) => a.tool === tool && (agent === null || a.agent === agent));
  }
  if (!isObject(raw)) return [];
  return ADAPTERS.filter((a) => a.shape !== undefined && a.shape.every((f) => raw[f] !== undefined));
}
