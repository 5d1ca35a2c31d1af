// The edge's gate on mode and configuration changes (decision 0041): what a client message would
// change of how much the agent asks (protocol/people/modes.ts), judged by the client's role and the
// tenant's settings.modes (protocol/people/acp-methods.ts). Every governed change is audited in the
// tenant's decision audit and hash chain, made or refused; one that would be made waits for its row,
// and is refused when the audit cannot be written (no change that makes the agent ask less goes
// unrecorded).

import { type AuditEntry, insertAuditRows } from "../db/queries/audit";
import { appendToChain } from "../db/queries/audit-chain";
import type { Principal } from "../core/principal";
import { ErrorCode } from "../core/rpc-errors";
import { log } from "../core/log";
import { RpcError } from "../protocol/jsonrpc";
import { refusedModeChange } from "../protocol/people/acp-methods";
import { type ModeChange, modeChangesOf } from "../protocol/people/modes";

export interface ModeGateContext {
  db: D1Database;
  principal: Principal;
  agent: string;
  connectionId: string;
}

/** The refusal of the first change the message may not make, or null; governed changes are audited. */
export async function gateModeChanges(ctx: ModeGateContext, method: string, params: unknown): Promise<RpcError | null> {
  const changes = modeChangesOf(method, params);
  if (changes.length === 0) return null;
  const { principal } = ctx;
  let refusal: RpcError | null = null;
  const audited: AuditEntry[] = [];
  for (const change of changes) {
    const refused = refusedModeChange(principal.role, principal.settings.modes, change);
    refusal ??= refused;
    if (change.governed || refused) audited.push(auditEntry(ctx, params, change, refused));
  }
  if (audited.length === 0) return null;
  // A refused message makes nothing: its rows are the refusals and the changes it would have made with them.
  const rows = refusal ? audited.map((row) => ({ ...row, outcome: "refused" as const, reason: row.reason ?? refusal.message })) : audited;
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
  return refusal;
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
