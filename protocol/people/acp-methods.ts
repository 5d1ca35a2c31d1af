// Which ACP methods a client's role may send on /acp (decision 0028). Closed world: an observer
// may send only the methods that watch (listed here); everything else — session/new, session/prompt,
// session/cancel, set_mode, set_config_option, delete, extension methods the agent would act on — is
// refused with -32003 naming the role and what it would need. Members and up drive sessions; who may
// answer a permission request is decided when the answer commits (protocol/people/answering.ts).

import { RpcError } from "../jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST } from "../methods";
import { ErrorCode } from "../../core/rpc-errors";
import type { Role } from "../../core/principal";
import { leastRoleFor, may } from "./roles";

/** What a client that may only watch may send: set up, attach, load, list, leave, and cancel its own requests. */
const WATCHING = new Set<string>([
  AGENT_METHODS.initialize,
  AGENT_METHODS.authenticate,
  AGENT_METHODS.logout,
  AGENT_METHODS.sessionLoad,
  AGENT_METHODS.sessionResume,
  AGENT_METHODS.sessionList,
  AGENT_METHODS.sessionClose,
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
