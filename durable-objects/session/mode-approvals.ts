// The session's held mode changes (decision 0061): a governed `session/set_mode` or
// `session/set_config_option` the edge held for a second person (connection/mode-gate.ts) waits here,
// gateway-owned, until another approver decides it (by `_acp_gateway/decide_mode_change` from a client
// or `POST /v1/sessions/{id}/mode-changes/{proposalId}`) or its deadline passes. Who may decide is
// protocol/people/mode-approval.ts's; this file keeps the proposals in the object's SQLite (they
// survive eviction), tells every client, audits, and carries out what was decided: an approved change
// goes to the agent as the proposer's request (the agent's answer is theirs), a refused or expired one
// is answered -32003. An approval is audited before anything is relayed; D1 refusing the row leaves
// the change held. A proposal is taken out of the table before its decision is awaited, so two
// decisions at once cannot both act. How each ended is kept in the session's log (the decided notice
// carries the card whole), so a replay shows it; a change in a session being deleted is withdrawn at once.
// What it stores and the audit row it writes: mode-proposals.ts.

import type { AuditEntry } from "../../db/queries/audit";
import { ErrorCode } from "../../core/rpc-errors";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { type JsonRpcId, RpcError, errorResponse, isObject } from "../../protocol/jsonrpc";
import { personKey } from "../../protocol/people/answering";
import {
  type Decision,
  type ModeProposal,
  MODE_APPROVAL_MS,
  type ModeOutcome,
  decide,
  decidedNotice,
  deletedError,
  expiredError,
  waitingNotice,
} from "../../protocol/people/mode-approval";
import { modeChangesOf } from "../../protocol/people/modes";
import { noticeOfNotification } from "../../protocol/gateway-notices";
import type { SessionMachine } from "../../protocol/session-machine";
import type { ClientAttachment } from "../../protocol/session-wire";
import { type AttachedClients, send } from "./clients";
import { type Held, type ModeDecisionBy, ModeProposalTable, tenantLetsKeysApprove, modeAuditRow, writeModeAudit } from "./mode-proposals";
import { sessionLog } from "./session-log";
import type { SessionStore } from "./store";

export type { ModeDecisionBy };

export type ModeDecisionResult = { ok: true; outcome: "approved" | "refused" | "expired" } | { ok: false; error: RpcError };

export class ModeApprovals {
  private readonly table: ModeProposalTable;
  constructor(
    sql: SqlStorage,
    private readonly db: () => D1Database,
    private readonly store: SessionStore,
    private readonly clients: AttachedClients,
    private readonly machine: SessionMachine,
    /** The held changes changed: the alarm and the sessions index (they count as waiting on people) follow. */
    private readonly changed: () => void,
  ) {
    this.table = new ModeProposalTable(sql);
  }

  /** The edge held `request` for a second person: keep it, tell every client. */
  propose(client: ClientAttachment, requestId: JsonRpcId, wrapped: unknown): void {
    const request = isObject(wrapped) ? wrapped.request : undefined;
    const method = isObject(request) && typeof request.method === "string" ? request.method : "";
    const params = isObject(request) ? request.params : undefined;
    const change = modeChangesOf(method, params).find((c) => c.governed);
    // The edge wraps only governed changes; anything else is not the gateway's to hold.
    if (!change) throw RpcError.invalidParams("nothing to hold: not a governed mode or configuration change");
    const now = Date.now();
    const deadlineMs =
      isObject(wrapped) && typeof wrapped.deadlineMs === "number" && wrapped.deadlineMs > 0 ? wrapped.deadlineMs : MODE_APPROVAL_MS;
    const proposal: ModeProposal = {
      id: crypto.randomUUID(),
      operation: `${change.method} ${change.setting}=${change.value}`,
      change: { method: change.method, setting: change.setting, value: change.value },
      proposer: { who: personKey(client), label: client.user },
      proposedAt: now,
      expiresAt: now + deadlineMs,
    };
    const held: Held = { proposal, client, requestId, method, params };
    this.table.add(held);
    this.notify(GATEWAY_NOTIFICATIONS.modeChangeWaiting, waitingNotice(this.sessionId(), proposal));
    this.changed();
  }

  /** The changes waiting, oldest first (the snapshot, a client attaching, `GET /v1/approvals`). */
  waiting(): ModeProposal[] {
    return this.table.all().map((h) => h.proposal);
  }

  count(): number {
    return this.table.count();
  }

  /**
   * What every client attaching now is told: one waiting notice per held change, and an ACP `notice`
   * beside each to a client that advertised notices — a new live notice of a condition still true, not
   * a replayed one (decision 0063).
   */
  noticesForAttach(acpNotices: boolean): string[] {
    return this.waiting().flatMap((p) => {
      const params = waitingNotice(this.sessionId(), p);
      const notice = acpNotices ? noticeOfNotification(GATEWAY_NOTIFICATIONS.modeChangeWaiting, params) : undefined;
      return [notification(GATEWAY_NOTIFICATIONS.modeChangeWaiting, params), ...(notice ? [notice] : [])];
    });
  }

  /** A person decides a held change (a client's request or REST). */
  async decide(by: ModeDecisionBy, proposalId: string, decision: Decision): Promise<ModeDecisionResult> {
    const held = this.table.take(proposalId);
    if (!held) return { ok: false, error: gone(proposalId) };
    const who = personKey({ keyId: by.keyId, person: by.person });
    const keysApprove = decision === "approve" && (await tenantLetsKeysApprove(this.db(), this.store.meta?.tenantId));
    const decided = decide(held.proposal, { role: by.role, who, label: by.label, keysApprove }, decision, Date.now());
    if (decided.kind === "not_permitted") {
      this.table.put(held);
      return { ok: false, error: decided.error };
    }
    if (decided.kind === "expired") {
      await this.finish(held, "expired", null, decided.error);
      return { ok: true, outcome: "expired" };
    }
    const row = modeAuditRow(
      this.store.meta,
      held,
      by,
      decided.kind === "relay" ? "selected" : "refused",
      decided.kind === "refused" ? decided.error.message : null,
    );
    if (decided.kind === "refused") {
      await this.finish(held, "refused", by.label ?? who, decided.error, row);
      return { ok: true, outcome: "refused" };
    }
    try {
      await writeModeAudit(this.db(), [row]);
    } catch (error) {
      sessionLog(this.store).error("session.mode_audit_failed", "an approved mode change could not be audited", {}, error);
      this.table.put(held);
      return {
        ok: false,
        error: new RpcError(
          ErrorCode.internalError,
          "The gateway could not record this approval in the audit, so the change is still held; try again.",
          {
            proposalId,
          },
        ),
      };
    }
    this.told(held, "approved", by.label ?? who);
    // Relayed as the proposer's own request: the agent's answer goes to them, as if the change had not waited.
    this.machine.request(held.client, held.requestId, held.method, held.params);
    this.changed();
    return { ok: true, outcome: "approved" };
  }

  /** A client's `_acp_gateway/decide_mode_change {proposalId, decision}`: decided, and answered on its socket. */
  async decideFor(ws: WebSocket, client: ClientAttachment, id: JsonRpcId, params: unknown): Promise<void> {
    const proposalId = isObject(params) ? params.proposalId : undefined;
    const decision = isObject(params) ? params.decision : undefined;
    const result: ModeDecisionResult =
      typeof proposalId !== "string" || (decision !== "approve" && decision !== "refuse")
        ? { ok: false, error: RpcError.invalidParams('params.proposalId must be a string and params.decision "approve" or "refuse"') }
        : await this.decide(
            { role: client.role ?? "approver", keyId: client.keyId, person: client.person, label: client.user, connId: client.connId },
            proposalId,
            decision,
          );
    send(ws, JSON.stringify(result.ok ? { jsonrpc: "2.0", id, result: { outcome: result.outcome } } : errorResponse(id, result.error)));
  }

  /** When the earliest held change expires (the session's alarm wakes for it). */
  dueAt(): number | undefined {
    return this.table.dueAt();
  }

  /** The alarm fired: each change past its deadline is answered as expired. */
  expire(now: number): Promise<unknown> {
    const due = this.table.all().filter((h) => h.proposal.expiresAt <= now);
    return Promise.all(
      due.map((h) => (this.table.take(h.proposal.id) ? this.finish(h, "expired", null, expiredError(h.proposal)) : undefined)),
    );
  }

  /**
   * The session is being deleted (session-deletion.ts, before it forgets itself): every held change is
   * withdrawn now — its proposer answered -32003 saying so, audited `withdrawn` by the deletion — rather
   * than left to expire in a session nobody can list or decide in any more.
   */
  withdrawAll(deletedBy: string | null): Promise<unknown> {
    return Promise.all(
      this.table.all().map((h) => {
        if (!this.table.take(h.proposal.id)) return undefined;
        const error = deletedError(h.proposal, deletedBy);
        const row: AuditEntry = {
          ...modeAuditRow(this.store.meta, h, null, "withdrawn", error.message),
          decidedBy: "cancel",
          decidedByUser: deletedBy,
        };
        return this.finish(h, "withdrawn", deletedBy, error, row);
      }),
    );
  }

  /** A refused, expired or withdrawn change: the proposer answered, every client told, the audit written (logged when D1 fails: nothing was made). */
  private async finish(
    held: Held,
    outcome: Exclude<ModeOutcome, "approved">,
    by: string | null,
    error: RpcError,
    row?: AuditEntry,
  ): Promise<void> {
    this.clients.toConnection(held.client.connId, JSON.stringify(errorResponse(held.requestId, error)));
    this.told(held, outcome, by);
    this.changed();
    try {
      await writeModeAudit(this.db(), [row ?? modeAuditRow(this.store.meta, held, null, "withdrawn", error.message)]);
    } catch (e) {
      sessionLog(this.store).warn("session.mode_audit_failed", `a ${outcome} mode change could not be audited`, {}, e);
    }
  }

  private notify(method: string, params: object): void {
    this.clients.broadcast(notification(method, params));
    this.clients.noticeBeside(method, params);
  }

  /** How a change ended: told to every client and kept in the session's log (history, unlike the waiting notice, which attach tells while it waits). */
  private told(held: Held, outcome: ModeOutcome, by: string | null): void {
    const params = decidedNotice(this.sessionId(), held.proposal, outcome, by);
    const text = notification(GATEWAY_NOTIFICATIONS.modeChangeDecided, params);
    if (this.store.meta) this.store.append("notice", text);
    this.clients.broadcast(text);
    this.clients.noticeBeside(GATEWAY_NOTIFICATIONS.modeChangeDecided, params);
  }

  private sessionId(): string {
    return this.store.meta?.sessionId ?? "";
  }
}

function notification(method: string, params: object): string {
  return JSON.stringify({ jsonrpc: "2.0", method, params });
}

function gone(proposalId: string): RpcError {
  return new RpcError(ErrorCode.notPermitted, `No mode change ${proposalId} is waiting in this session: it was decided or it expired.`, {
    proposalId,
    gone: true,
  });
}
