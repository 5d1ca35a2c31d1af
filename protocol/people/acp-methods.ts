// Which ACP methods a client's role may send on /acp (decision 0028). Closed world: an observer
// may send only the methods that watch (listed here); everything else — session/new, session/prompt,
// session/cancel, set_mode, set_config_option, delete, extension methods the agent would act on — is
// refused with -32003 naming the role and what it would need. Members and up drive sessions; who may
// answer a permission request is decided when the answer commits (protocol/people/answering.ts).
// A change of mode or configuration that can make the agent ask less needs an approver, and a tenant
// may forbid it to everyone (`refusedModeChange`, decision 0041).

import { RpcError } from "../jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST } from "../methods";
import { ATTACH_METHODS } from "../session-attach";
import { ErrorCode } from "../../core/rpc-errors";
import type { ModeSettings, Role } from "../../core/principal";
import { leastRoleFor, may } from "./roles";
import { type ModeChange, UNGOVERNED_MODES, fold } from "./modes";
import { fourEyesHoldsModes } from "./mode-approval";

/** What a client that may only watch may send: set up, attach, load, list, leave, and cancel its own requests. */
const WATCHING = new Set<string>([
  AGENT_METHODS.initialize,
  AGENT_METHODS.authenticate,
  AGENT_METHODS.logout,
  AGENT_METHODS.sessionLoad,
  AGENT_METHODS.sessionResume,
  AGENT_METHODS.sessionList,
  AGENT_METHODS.sessionClose,
  // Multi-client attach (decision 0054): an observer attaches as an observer; asking for more is refused there.
  ATTACH_METHODS.attach,
  ATTACH_METHODS.detach,
  CANCEL_REQUEST,
]);

/** The error refusing `method` to a client of `role`, or null when the role may send it. */
export function refusedByRole(role: Role | null, method: string): RpcError | null {
  if (WATCHING.has(method) ? may(role, "watch") : may(role, "drive")) return null;
  const least = WATCHING.has(method) ? leastRoleFor("watch") : leastRoleFor("drive");
  return new RpcError(
    ErrorCode.notPermitted,
    `Your role (${role ?? "none"}) may not send ${method}: it needs ${least} or higher. Observers watch sessions (load, list, attach); ask a tenant admin for a role that drives them.`,
    { method, role, needs: least },
  );
}

/**
 * The error refusing one mode or configuration change (protocol/people/modes.ts) to a client of
 * `role` under the tenant's `settings.modes`, or null when it may be made. A tenant's forbid holds
 * for every role; a governed change needs the approver role. Settings no API would store (a row
 * written by hand) forbid every governed change (closed world).
 */
export function refusedModeChange(role: Role | null, settings: ModeSettings | undefined, change: ModeChange): RpcError | null {
  const what = change.setting === "mode" ? "the session's mode" : `the session's ${change.setting}`;
  const data = { method: change.method, setting: change.setting, value: change.value, role };
  const forbid: unknown = settings?.forbid;
  const readable = settings === undefined || forbid === undefined || (Array.isArray(forbid) && forbid.every((f) => typeof f === "string"));
  const forbidsAllGoverned = settings?.forbidLessOversight === true || !readable;
  if (change.governed && forbidsAllGoverned) {
    return new RpcError(
      ErrorCode.notPermitted,
      `Your tenant forbids switching ${what} to ${change.value}: it can make the agent ask fewer permission questions, and settings.modes refuses every such change to everyone. Choose one of ${UNGOVERNED_MODES.join(", ")}, or ask a tenant admin to change settings.modes.`,
      { ...data, forbidden: true },
    );
  }
  if (Array.isArray(forbid) && forbid.some((f) => typeof f === "string" && fold(f) === fold(change.value))) {
    return new RpcError(
      ErrorCode.notPermitted,
      `Your tenant forbids switching ${what} to ${change.value} (settings.modes.forbid), whatever the role. Ask a tenant admin if it should be allowed.`,
      { ...data, forbidden: true },
    );
  }
  if (change.governed && !may(role, "oversight")) {
    const least = leastRoleFor("oversight");
    return new RpcError(
      ErrorCode.notPermitted,
      `Your role (${role ?? "none"}) may not switch ${what} to ${change.value}: it can make the agent ask fewer permission questions (or the gateway does not know what it does), which needs ${least} or higher. You may choose ${UNGOVERNED_MODES.join(", ")}; ask an approver to make this change.`,
      { ...data, needs: least },
    );
  }
  return null;
}

/** What a client is told of governed modes (`_meta.acpGateway.modes` of the initialize result). */
export function modesNotice(role: Role | null, settings: ModeSettings | undefined) {
  return {
    /** Modes and approval policies anyone who drives a session may choose; every other mode or value is governed. */
    ungoverned: UNGOVERNED_MODES,
    /** The role a governed change needs. */
    governedNeeds: leastRoleFor("oversight"),
    /** Whether this client may make governed changes (the tenant's forbid aside). */
    youMay: may(role, "oversight") && settings?.forbidLessOversight !== true,
    forbidLessOversight: settings?.forbidLessOversight === true,
    forbid: Array.isArray(settings?.forbid) ? settings.forbid : [],
    /** Whether a governed change waits for a second person's approval (decision 0061). */
    fourEyes: fourEyesHoldsModes(settings),
  };
}
