// The agent's capabilities as clients see them: only what the gateway serves. A closed world, as the
// rules are: a field is passed only if it is an ACP v1 capability the gateway relays or answers
// itself; anything else the agent advertises (ACP `providers`, whose providers/list, /set and
// /disable name no session and so are answered -32601; `sessionCapabilities.fork`, whose new session
// the gateway would not know; whatever comes next) is dropped, so a client never relies on a
// capability that every call of fails. `_meta` is the agent's own and stays as it sent it, but for
// `promptQueueing` under any key: the gateway relays a prompt while a turn runs only to an agent that
// advertises it where claude-agent-acp does (`_meta.claudeCode.promptQueueing: true`, decision 0067),
// so that one advertisement is served as sent and any other is dropped (a client told an agent
// queues prompts the gateway refuses would be refused each one).

import { isObject } from "./jsonrpc";
import { advertisesPromptQueueing } from "./prompt-queueing";

/** Each served object capability and the fields of it the gateway serves. */
const SERVED: Record<string, readonly string[] | true> = {
  // Relayed as the agent sets it; the gateway answers session/load itself in any case.
  loadSession: true,
  // session/prompt is relayed with its content as sent.
  promptCapabilities: ["image", "audio", "embeddedContext", "_meta"],
  // session/new and session/load relay mcpServers as sent.
  mcpCapabilities: ["http", "sse", "_meta"],
  // list, resume and close the gateway answers itself; delete it adds; additionalDirectories is a
  // session/new parameter it relays.
  sessionCapabilities: ["list", "resume", "close", "delete", "additionalDirectories", "_meta"],
  // logout the gateway answers itself (it ends the one connection).
  auth: ["logout", "_meta"],
  _meta: true,
};

/** The agent's capabilities with every field the gateway does not serve left out. */
export function servedCapabilities(advertised: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isObject(advertised)) return out;
  for (const [key, served] of Object.entries(SERVED)) {
    const value = advertised[key];
    if (value === undefined) continue;
    if (key === "_meta") out[key] = withoutPromptQueueing(value, advertisesPromptQueueing(advertised));
    else if (served === true) out[key] = value;
    else if (isObject(value)) out[key] = Object.fromEntries(Object.entries(value).filter(([field]) => served.includes(field)));
  }
  return out;
}

/**
 * The agent's `_meta` with `promptQueueing` left out, its own or any vendor's, but for Claude Code's
 * when `queues` (it advertises it as the gateway reads it): that one stays as sent.
 */
function withoutPromptQueueing(meta: unknown, queues: boolean): unknown {
  if (!isObject(meta) || !JSON.stringify(meta).includes('"promptQueueing"')) return meta;
  const without = (o: Record<string, unknown>, vendor?: string) =>
    Object.entries(o).filter(([k]) => k !== "promptQueueing" || (queues && vendor === "claudeCode"));
  return Object.fromEntries(
    without(meta).map(([vendor, caps]) => [vendor, isObject(caps) ? Object.fromEntries(without(caps, vendor)) : caps]),
  );
}
