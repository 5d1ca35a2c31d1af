// The session's record of the agent's modes (decision 0061): what the agent advertised in its
// `session/new` / `session/load` result (`modes`, `configOptions`) and reported since
// (`current_mode_update`, `config_option_update`), with each mode and option value marked governed
// as protocol/people/modes.ts judges a client's switch to it. Pure, over the stored result.
// Guarantees (test/unit/people/session-modes.test.ts):
// - A mode is marked exactly as a client's `session/set_mode` to it would be judged: the marks can
//   never tell a client a switch is open that the edge would hold or refuse.
// - What cannot be read (no id, a non-string) is left out of `available`, never shown as open.

import { isObject } from "../jsonrpc";
import { AGENT_METHODS } from "../methods";
import { modeChangesOf } from "./modes";

interface AdvertisedMode {
  id: string;
  name: string | null;
  /** A client's switch to it needs the approver role (and four eyes where the tenant holds it). */
  governed: boolean;
}

export interface SessionModes {
  currentModeId: string | null;
  /** Whether the current mode is governed (the agent may be asking less than its default). */
  currentGoverned: boolean;
  available: AdvertisedMode[];
}

/** Whether switching to `modeId` is governed, exactly as the edge judges `session/set_mode` (the console marks a reported mode with it). */
export function modeGoverned(modeId: string): boolean {
  return modeChangesOf(AGENT_METHODS.sessionSetMode, { modeId }).some((c) => c.governed);
}

/** The modes of a stored `session/new` / `session/load` result (null: the agent advertised none). */
export function sessionModesOf(result: unknown): SessionModes | null {
  const modes = isObject(result) ? result.modes : undefined;
  if (!isObject(modes)) return null;
  const current = typeof modes.currentModeId === "string" ? modes.currentModeId : null;
  const list = Array.isArray(modes.availableModes) ? modes.availableModes : [];
  const available: AdvertisedMode[] = [];
  for (const m of list.slice(0, 100)) {
    if (!isObject(m) || typeof m.id !== "string") continue;
    available.push({ id: m.id, name: typeof m.name === "string" ? m.name : null, governed: modeGoverned(m.id) });
  }
  return { currentModeId: current, currentGoverned: current === null ? false : modeGoverned(current), available };
}

/**
 * A `session/new` / `session/load` answer with the gateway's marks of its modes in
 * `_meta.acpGateway.modes` (the agent's own `_meta` kept; its `acpGateway` was stripped on the way in,
 * protocol/gateway-namespace.ts). Unchanged when the agent advertised no modes.
 */
export function withModesMarked<T extends Record<string, unknown>>(result: T): T {
  const modes = sessionModesOf(result);
  if (!modes) return result;
  const meta = isObject(result._meta) ? result._meta : {};
  const gateway = isObject(meta.acpGateway) ? meta.acpGateway : {};
  return { ...result, _meta: { ...meta, acpGateway: { ...gateway, modes } } };
}

/** The agent switched itself (`current_mode_update`): what clients and the audit are told, or null when it is not governed. */
export function agentSwitched(
  sessionId: string,
  from: string | null,
  to: string,
): { sessionId: string; from: string | null; to: string; message: string } | null {
  if (from === to || !modeGoverned(to)) return null;
  return {
    sessionId,
    from,
    to,
    message: `The agent switched this session's mode to ${to} by itself; it may ask fewer permission questions from now on. An approver may switch it back with session/set_mode.`,
  };
}
