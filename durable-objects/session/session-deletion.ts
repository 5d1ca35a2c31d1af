// session/delete went ahead (protocol/session-delete.ts): the session's requests cancelled, its held
// mode changes withdrawn (their proposers answered, audited), the session forgotten, then its clients told and detached, once it is out of the tenant's index.

import { isObject, resultResponse } from "../../protocol/jsonrpc";
import { sessionDeletedNotice, sessionDeletedParams } from "../../protocol/session-delete";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import type { InflightRow } from "../../protocol/session-machine";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import { type AttachedClients, attachmentOf, send } from "./clients";
import type { Notifier } from "./notify";
import type { PermissionMachine } from "../../protocol/permission-machine";
import type { ModeApprovals } from "./mode-approvals";
import type { SessionStore } from "./store";
import type { SessionUnindex } from "./unindex";

export class SessionDeletion {
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly store: SessionStore,
    private readonly clients: AttachedClients,
    private readonly permissions: PermissionMachine<WebSocket>,
    private readonly modes: ModeApprovals,
    private readonly notifier: Notifier,
    /** Takes a deleted session out of the tenant's index, retrying while D1 fails. */
    private readonly unindex: SessionUnindex,
    /** Sets the object's alarm to the earliest deadline, notify time, audit retry or idle time. */
    private readonly scheduleDeadline: () => void,
  ) {}

  /** `inflight`: the session/delete the agent agreed to (or that never reached it); `result`: the agent's. */
  deleted(inflight: InflightRow, result: unknown): void {
    const { store, clients } = this;
    const meta = store.meta;
    if (!meta) return;
    const deleter = clients.byConnection(inflight.connId);
    const user = deleter ? (attachmentOf(deleter)?.user ?? null) : null;
    this.permissions.cancelAll({ type: "cancel", connectionId: inflight.connId, user });
    this.notifier.withdrawAll("session_deleted");
    this.ctx.waitUntil(this.modes.withdrawAll(user)); // taken out and answered now; only the audit is awaited
    store.forget();
    this.scheduleDeadline();
    const answer = JSON.stringify(resultResponse(inflight.clientId, isObject(result) ? result : {}));
    const params = sessionDeletedParams(meta.sessionId, user);
    const notice = sessionDeletedNotice(params);
    const attached = clients.all();
    // Out of the index first, so nobody who hears of the deletion can still list or load the session;
    // if D1 fails, the alarm keeps trying (unindex.ts), and the clients are told all the same.
    const unindexed = this.unindex.remove({ tenantId: meta.tenantId, sessionId: meta.sessionId });
    this.ctx.waitUntil(
      unindexed.then(() => {
        this.scheduleDeadline();
        for (const ws of attached) {
          send(ws, ws === deleter ? answer : notice);
          if (ws !== deleter) clients.noticeTo(ws, GATEWAY_NOTIFICATIONS.sessionDeleted, params);
          closeQuietly(ws, CLOSE.sessionDeleted, "the session was deleted");
        }
      }),
    );
  }
}
