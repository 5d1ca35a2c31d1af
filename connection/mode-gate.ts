// The edge's gate on a client's message: first its role (may it send this method at all,
// protocol/people/acp-methods.ts), then mode and configuration changes (decision 0041): what it would
// change of how much the agent asks (protocol/people/modes.ts), judged by the client's role and the
// tenant's settings.modes (protocol/people/acp-methods.ts). Every governed change is audited in the
// tenant's decision audit and hash chain, made or refused; one that would be made waits for its row,
// and is refused when the audit cannot be written (no change that makes the agent ask less goes
// unrecorded). A tenant whose settings.modes.fourEyes holds governed changes gets them held instead
// (decision 0061): the rows say `proposed`, and the edge hands the request to the session wrapped in
// `_acp_gateway/hold_mode_change`, which no client may send itself. What cannot be held (a
// notification, a session opened with a governed `_meta`) is refused under four eyes.

import { type AuditEntry, insertAuditRows } from "../db/queries/audit";
import { appendToChain } from "../db/queries/audit-chain";
import type { Principal } from "../core/principal";
import { ErrorCode } from "../core/rpc-errors";
import { log } from "../core/log";
import { RpcError } from "../protocol/jsonrpc";
import { refusedByRole, refusedModeChange } from "../protocol/people/acp-methods";
import { type ModeChange, modeChangesOf } from "../protocol/people/modes";
import { AGENT_METHODS } from "../protocol/methods";
import { HOLD_MODE_CHANGE, fourEyesHoldsModes } from "../protocol/people/mode-approval";

/** A held change: the request goes to the session wrapped, and waits there for a second person. */
export const HOLD = "hold";

/** The requests the session can hold for a second person; any other governed change is refused under four eyes. */
const HOLDABLE = new Set<string>([AGENT_METHODS.sessionSetMode, AGENT_METHODS.sessionSetConfigOption]);

export interface ModeGateContext {
  db: D1Database;
  principal: Principal;
  agent: string;
  connectionId: string;
}

/** A client's request: the role's refusal of its method, else the mode gate's verdict (`HOLD`: the session keeps it for a second person). */
export async function gateRequest(ctx: ModeGateContext, method: string, params: unknown): Promise<RpcError | typeof HOLD | null> {
  return refusedByRole(ctx.principal.role, method) ?? (await gateModeChanges(ctx, method, params, true));
}

/** A client's notification: the role's refusal of its method, else the mode gate's; never held. */
export async function gateNotification(ctx: ModeGateContext, method: string, params: unknown): Promise<RpcError | null> {
  const gate = refusedByRole(ctx.principal.role, method) ?? (await gateModeChanges(ctx, method, params, false));
  // A notification cannot wait for a second person, so the gate refuses it rather than hold it; never relayed held.
  return gate === HOLD ? new RpcError(ErrorCode.notPermitted, "This change needs a second person's approval; send it as a request.") : gate;
}

/**
 * The refusal of the first change the message may not make, `HOLD` when a second person must approve
 * it first, or null; governed changes are audited. `request`: whether the message has an id to answer later.
 */
async function gateModeChanges(
  ctx: ModeGateContext,
  method: string,
  params: unknown,
  request: boolean,
): Promise<RpcError | typeof HOLD | null> {
  if (method === HOLD_MODE_CHANGE)
    return new RpcError(ErrorCode.notPermitted, `${HOLD_MODE_CHANGE} is the gateway's own; a client proposes a change by sending it.`, {
      method,
    });
  const changes = modeChangesOf(method, params);
  if (changes.length === 0) return null;
  const { principal } = ctx;
  let refusal: RpcError | null = null;
  const audited: AuditEntry[] = [];
  const held = fourEyesHoldsModes(principal.settings.modes);
  for (const change of changes) {
    const refused =
      refusedModeChange(principal.role, principal.settings.modes, change) ??
      (change.governed && held && !(request && HOLDABLE.has(method)) ? unholdable(change) : null);
    refusal ??= refused;
    if (change.governed || refused) audited.push(auditEntry(ctx, params, change, refused));
  }
  if (audited.length === 0) return null;
  const hold = refusal === null && held;
  // A refused message makes nothing: its rows are the refusals and the changes it would have made with them.
  const rows = refusal
    ? audited.map((row) => ({ ...row, outcome: "refused" as const, reason: row.reason ?? refusal.message }))
    : hold
      ? audited.map((row) => ({
          ...row,
          outcome: "proposed" as const,
          reason: "held for a second person's approval (settings.modes.fourEyes)",
        }))
      : audited;
  try {
    await insertAuditRows(ctx.db, rows);
    await appendToChain(ctx.db, principal.tenantId, rows);
  } catch (error) {
    log("error", "edge.mode_audit_failed", "a mode change could not be audited", { tenantId: principal.tenantId, method }, error);
    if (refusal) return refusal;
    return new RpcError(
      ErrorCode.internalError,
      "The gateway could not record this mode change in the audit, so it was not made; try again.",
      { method },
    );
  }
  return refusal ?? (hold ? HOLD : null);
}

/** Under four eyes, a governed change that cannot wait for a second person (no id to answer, or a session being opened). */
function unholdable(change: ModeChange): RpcError {
  return new RpcError(
    ErrorCode.notPermitted,
    `Your tenant's four eyes (settings.modes.fourEyes) holds ${change.setting}=${change.value} for a second person, which ${change.method} cannot wait for: open the session without it and propose the change by session/set_mode or session/set_config_option.`,
    { method: change.method, setting: change.setting, value: change.value, fourEyes: true },
  );
}

function auditEntry(ctx: ModeGateContext, params: unknown, change: ModeChange, refused: RpcError | null): AuditEntry {
  const { principal } = ctx;
  const sessionId =
    typeof params === "object" && params !== null && "sessionId" in params && typeof params.sessionId === "string" ? params.sessionId : "";
  return {
    id: crypto.randomUUID(),
    tenantId: principal.tenantId,
    sessionId,
    agent: ctx.agent,
    kind: "mode",
    name: change.setting,
    operation: `${change.method} ${change.setting}=${change.value}`,
    outcome: refused ? "refused" : "selected",
    decidedBy: "person",
    decidedByKey: principal.keyId,
    decidedByUser: principal.label,
    decidedByIssuer: principal.person?.issuer ?? null,
    decidedBySubject: principal.person?.subject ?? null,
    decidedByRole: principal.role,
    decidedByConnection: ctx.connectionId,
    policy: "modes",
    reason: refused ? refused.message : null,
    at: Date.now(),
  };
}
