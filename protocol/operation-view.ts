// What a person is asked to approve, in full and in one shape, for the notification payload and the
// approval page: the kind, the command with its arguments and working directory, the resolved paths,
// the diffs, and the agent's title kept apart as the agent's words (it is not what will run).

import { isObject } from "./jsonrpc";
import { describeOperation } from "./operation";
import type { PermissionOption } from "./permissions";
import { commandText } from "./rules/command";
import { resolvePath } from "./rules/paths";

export interface OperationView {
  kind: string | null;
  /** The tool's name, when the agent gave one. */
  name: string | null;
  /** The agent's own description of the call: its words, not verified by the gateway. */
  agentTitle: string | null;
  command: { text: string; argv: string[] | null; cwd: string } | null;
  /** Every path the call touches, resolved (`..` and `.` removed); unresolvable paths kept as given. */
  paths: string[];
  diffs: { path: string; oldText: string | null; newText: string }[];
  /** The agent's raw input, for what the fields above do not cover. */
  rawInput: unknown;
  /**
   * Why the call has no one meaning (it names the command or its directory twice, or carries fields
   * the gateway does not know), or null: the person is shown every field, and no rule answers it.
   */
  ambiguity: string | null;
}

export function operationView(toolCall: unknown, sessionCwd: string): OperationView {
  const call = isObject(toolCall) ? toolCall : {};
  const raw = call.rawInput;
  const text = commandText(raw);
  const cwdOf = isObject(raw) ? (raw.cwd ?? raw.workdir) : undefined;
  const paths: string[] = [];
  const add = (p: unknown) => {
    if (typeof p !== "string") return;
    const resolved = resolvePath(p) ?? p;
    if (!paths.includes(resolved)) paths.push(resolved);
  };
  if (Array.isArray(call.locations)) for (const l of call.locations) add(isObject(l) ? l.path : undefined);
  const diffs: OperationView["diffs"] = [];
  if (Array.isArray(call.content)) {
    for (const c of call.content) {
      if (!isObject(c) || c.type !== "diff" || typeof c.path !== "string") continue;
      add(c.path);
      diffs.push({ path: c.path, oldText: typeof c.oldText === "string" ? c.oldText : null, newText: String(c.newText ?? "") });
    }
  }
  if (isObject(raw)) add(raw.path ?? raw.file_path);
  return {
    kind: typeof call.kind === "string" ? call.kind : null,
    name: typeof call.name === "string" ? call.name : null,
    agentTitle: typeof call.title === "string" ? call.title : null,
    command: text === null ? null : { text, argv: argvOf(raw), cwd: typeof cwdOf === "string" ? cwdOf : sessionCwd },
    paths,
    diffs,
    rawInput: raw ?? null,
    ambiguity: describeOperation(call, sessionCwd).ambiguity,
  };
}

function argvOf(raw: unknown): string[] | null {
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");
  if (strings(raw)) return raw;
  if (!isObject(raw)) return null;
  if (typeof raw.command === "string" && strings(raw.args)) return [raw.command, ...raw.args];
  if (strings(raw.command)) return raw.command;
  if (strings(raw.argv)) return raw.argv;
  return null;
}

/**
 * The options an approval link may answer with: the *_once kinds only. An *_always answer stores a
 * rule for the whole tenant; from a link (a bearer capability anyone it was forwarded to holds, with
 * no key and no dry run of the rule's scope) the gateway asks for a one-time decision instead.
 */
export function linkOptions(options: PermissionOption[]): PermissionOption[] {
  return options.filter((o) => o.kind === "allow_once" || o.kind === "reject_once");
}
