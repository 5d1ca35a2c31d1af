// Modes and configuration as permissions (decision 0041). A client that switches a session's mode
// to `bypassPermissions`, or its approval policy to `never`, makes the agent ask nobody from then on:
// that switch is itself an operation a person must be allowed to make. Pure, over (method, params)
// alone, so the edge decides without reading the session. Guarantees (property-tested in
// test/unit/people/modes.test.ts):
// - Closed world: a mode, a configuration option or a value the gateway does not know is governed;
//   only a mode known to ask at least as much as an agent's default (`default`, `plan`, `ask`,
//   `read-only`, `untrusted`) and options known not to touch asking (the model, the thought level)
//   are not. Params that cannot be read (no string mode, no option id) are governed.
// - Spelling does not escape: case, `_`, `-` and spaces are folded (`Read_Only` is `read-only`,
//   `BYPASS_PERMISSIONS` is `bypasspermissions`).
// - Creating, loading, resuming or forking a session with a `_meta` that names a mode, an approval or
//   permission setting, a sandbox or a skip (e.g. claude-agent-acp's `permissionMode`) is governed the
//   same way, value by value; a `_meta` too deep or too large to read in full is governed.

import { AGENT_METHODS } from "../methods";

/** Unstable in ACP, relayed by the gateway by its sessionId like any other session method. */
const SESSION_FORK = "session/fork";

/** A change of how much the agent asks, as read from one client message. */
export interface ModeChange {
  method: string;
  /** What is changed: `mode`, a config option's id, or the `_meta` path that names a setting. */
  setting: string;
  /** The value asked for, as sent (a string; other JSON as its text). */
  value: string;
  /** Whether the change can make the agent ask less (or its effect is unknown): it needs the approver role. */
  governed: boolean;
}

/** Modes and approval policies known to ask at least as much as an agent's default (folded spelling). */
const ASKS_AT_LEAST_AS_DEFAULT: ReadonlySet<string> = new Set(["default", "plan", "ask", "readonly", "untrusted"]);

/** Config options known not to change what the agent asks (folded spelling); any other option's value is judged. */
const NOT_ABOUT_ASKING: ReadonlySet<string> = new Set(["model", "thoughtlevel", "reasoningeffort"]);

/** `_meta` keys that name how much an agent asks (folded spelling, matched as a part of the key). */
const OVERSIGHT_KEY = /mode|approv|permission|sandbox|skip|bypass|yolo|dangerous|trust|autoaccept|autoapprove/;

/** How much of a `_meta` is read before the rest is taken as governed (closed world). */
const META_DEPTH = 8;
const META_NODES = 2000;

/** Folds the spellings agents and people use for one value: case, `_`, `-`, spaces and dots. */
export function fold(text: string): string {
  return text.toLowerCase().replace(/[\s_.-]+/g, "");
}

/** Whether `value` is a mode or approval policy known to ask at least as much as the default. */
function asksAtLeastAsDefault(value: string): boolean {
  return ASKS_AT_LEAST_AS_DEFAULT.has(fold(value));
}

/** The modes a client may switch to without the approver role (for the `_meta` that tells clients). */
export const UNGOVERNED_MODES: readonly string[] = ["default", "plan", "ask", "read-only", "untrusted"];

const textOf = (value: unknown): string => (typeof value === "string" ? value : (JSON.stringify(value) ?? "undefined"));

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The mode and configuration changes one client message asks for (empty: none). */
export function modeChangesOf(method: string, params: unknown): ModeChange[] {
  const p = isObject(params) ? params : {};
  switch (method) {
    case AGENT_METHODS.sessionSetMode: {
      const value = p.modeId;
      return [{ method, setting: "mode", value: textOf(value), governed: typeof value !== "string" || !asksAtLeastAsDefault(value) }];
    }
    case AGENT_METHODS.sessionSetConfigOption: {
      const id = p.configId;
      const value = p.value;
      const setting = typeof id === "string" ? id : textOf(id);
      const harmless = typeof id === "string" && NOT_ABOUT_ASKING.has(fold(id));
      const governed = typeof id !== "string" || (!harmless && (typeof value !== "string" || !asksAtLeastAsDefault(value)));
      return [{ method, setting, value: textOf(value), governed }];
    }
    case AGENT_METHODS.sessionNew:
    case AGENT_METHODS.sessionLoad:
    case AGENT_METHODS.sessionResume:
    case SESSION_FORK:
      return p._meta === undefined ? [] : metaChanges(method, p._meta);
    default:
      return [];
  }
}

/** Every `_meta` entry naming how much the agent asks, judged by its value; unreadable depth or size is governed. */
function metaChanges(method: string, meta: unknown): ModeChange[] {
  const changes: ModeChange[] = [];
  let nodes = 0;
  let unread = false;
  const walk = (value: unknown, path: string, depth: number): void => {
    if (++nodes > META_NODES || depth > META_DEPTH) {
      unread = true;
      return;
    }
    const entries: [string, unknown][] = Array.isArray(value)
      ? value.map((v, i) => [String(i), v])
      : isObject(value)
        ? Object.entries(value)
        : [];
    for (const [key, child] of entries) {
      const at = `${path}.${key}`;
      if (OVERSIGHT_KEY.test(fold(key))) {
        const governed = typeof child !== "string" || !asksAtLeastAsDefault(child);
        changes.push({ method, setting: at, value: textOf(child), governed });
      } else walk(child, at, depth + 1);
    }
  };
  walk(meta, "_meta", 0);
  if (unread) changes.push({ method, setting: "_meta", value: "(too deep or too large to read in full)", governed: true });
  return changes;
}
