// The approval links of one session's notifications (notify.ts sends them). A token
// (protocol/approval-token.ts) proves who issued a link and when it expires; this table says whether it
// was used, and whether it was withdrawn. The SessionObject answers through a link with its own resolve
// path, so a link's answer is exactly a client's answer.

import { targetExists } from "../../db/queries/notification-targets";
import type { NotificationTargetRow } from "../../db/schema";
import type { Env } from "../../core/env";
import { isObject } from "../../protocol/jsonrpc";
import { readReason } from "../../protocol/answer-reason";
import { requestView } from "../../protocol/webhook-payload";
import type { ApprovalView, LinkDecidedBy, LinkRefusal, LinkWithdrawal } from "./contract";
import type { PendingRequest, SessionStore } from "./store";
import type { DeliveryResult } from "./webhook-delivery";

type LinkRow = {
  link_id: string;
  perm_id: number;
  tool_call_id: string | null;
  target_id: string;
  target_name: string;
  expires_at: number;
  used_at: number | null;
  used_option: string | null;
};

/** Over the tables `approval_links` and `withdrawn_links` (store-migrations.ts). */
export class ApprovalLinks {
  constructor(
    private readonly sql: SqlStorage,
    private readonly env: Env,
    private readonly store: SessionStore,
  ) {}

  /** A link to request `permId` for `target`, recorded before its notification is sent. */
  issue(linkId: string, permId: number, toolCallId: string | null, target: NotificationTargetRow, expiresAt: number): void {
    this.sql.exec(
      "INSERT INTO approval_links (link_id, perm_id, tool_call_id, target_id, target_name, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
      linkId,
      permId,
      toolCallId,
      target.id,
      target.name,
      expiresAt,
    );
  }

  /** How the link's notification was delivered (shown to admins). */
  delivered(linkId: string, result: DeliveryResult): void {
    this.sql.exec(
      "UPDATE approval_links SET delivered = ?, attempts = ?, last_result = ? WHERE link_id = ?",
      result.ok ? 1 : 0,
      result.attempts,
      result.last,
      linkId,
    );
  }

  /**
   * What a link shows now: the request, or why it can no longer answer. A link of a deleted session
   * (no meta, or withdrawn when it was deleted) is withdrawn; whether its target still exists is
   * D1's to say (`targetGone`), asked only of a link that could answer.
   */
  view(permId: number, linkId: string, now = Date.now()): ApprovalView {
    const link = this.link(permId, linkId);
    if (!link) return { state: "unknown" };
    const withdrawn = this.withdrawal(linkId);
    if (withdrawn) return { state: "withdrawn", reason: withdrawn };
    if (!this.store.meta) return { state: "withdrawn", reason: "session_deleted" };
    if (link.used_at !== null) return { state: "used", usedAt: link.used_at, option: link.used_option };
    const pending = this.store.pendingById(permId);
    if (!pending) return { state: "answered", ...this.resolutionOf(link) };
    if (link.expires_at <= now) return { state: "expired" };
    return { state: "pending", ...requestView(this.store.meta, pending), target: link.target_name, expiresAt: link.expires_at };
  }

  /**
   * Checks an answer through a link and, if it may answer, marks the link used (before the caller
   * resolves the request, in the same synchronous event: two answers cannot both pass).
   */
  takeAnswer(
    permId: number,
    linkId: string,
    optionId: string,
    now = Date.now(),
  ): { ok: true; pending: PendingRequest; by: LinkDecidedBy } | { ok: false; view: LinkRefusal } {
    const view = this.view(permId, linkId, now);
    if (view.state !== "pending") return { ok: false, view };
    const option = view.linkOptions.find((o) => o.optionId === optionId);
    if (!option) return { ok: false, view: { state: "invalid_option", offered: view.linkOptions.map((o) => o.optionId) } };
    const pending = this.store.pendingById(permId);
    const link = this.link(permId, linkId);
    if (!pending || !link) return { ok: false, view: { state: "unknown" } };
    this.sql.exec("UPDATE approval_links SET used_at = ?, used_option = ? WHERE link_id = ?", now, option.name, linkId);
    return { ok: true, pending, by: { type: "link", linkId, targetId: link.target_id, target: link.target_name } };
  }

  /** What the link shows (the SessionObject's `approvalView`): one that could answer is checked against D1 first, its target deleted, it is withdrawn. */
  async checkedView(permId: number, linkId: string): Promise<ApprovalView> {
    const view = this.view(permId, linkId);
    if (view.state !== "pending") return view;
    return (await this.targetGone(permId, linkId)) ?? this.view(permId, linkId);
  }

  /**
   * An answer through the link (the SessionObject's `answerFromLink`): checked against D1, then checked
   * again and taken in one synchronous step (`takeAnswer`: two answers cannot both pass) and handed to
   * `resolve` (the permission machine's `answerFromLink`) with the person's reason, read again here:
   * the object trusts no caller's bound (a display-safe text passes unchanged).
   */
  async answer(
    permId: number,
    linkId: string,
    optionId: string,
    reason: string | null | undefined,
    resolve: (pending: PendingRequest, optionId: string, by: LinkDecidedBy) => void,
  ): Promise<LinkRefusal | { state: "answered_by_you" }> {
    const view = this.view(permId, linkId);
    if (view.state !== "pending") return view;
    const gone = await this.targetGone(permId, linkId);
    if (gone) return gone;
    const taken = this.takeAnswer(permId, linkId, optionId);
    if (!taken.ok) return taken.view;
    const given = readReason(reason);
    resolve(taken.pending, optionId, given.ok && given.reason ? { ...taken.by, reason: given.reason } : taken.by);
    return { state: "answered_by_you" };
  }

  /** The link's notification target was deleted (DELETE /v1/notification-targets/{id}): withdrawn, for good. */
  async targetGone(permId: number, linkId: string): Promise<LinkRefusal | undefined> {
    const link = this.link(permId, linkId);
    const tenantId = this.store.meta?.tenantId;
    if (!link || !tenantId || (await targetExists(this.env.DB, tenantId, link.target_id))) return undefined;
    this.withdraw([linkId], "target_deleted");
    return { state: "withdrawn", reason: "target_deleted" };
  }

  /** session/delete: every link the session issued is withdrawn (a session made again under its id never inherits them). */
  withdrawAll(reason: LinkWithdrawal): void {
    this.withdraw(
      this.sql
        .exec<{ link_id: string }>("SELECT link_id FROM approval_links")
        .toArray()
        .map((r) => r.link_id),
      reason,
    );
  }

  private withdraw(linkIds: string[], reason: LinkWithdrawal): void {
    const now = Date.now();
    for (const linkId of linkIds)
      this.sql.exec("INSERT OR IGNORE INTO withdrawn_links (link_id, reason, at) VALUES (?, ?, ?)", linkId, reason, now);
  }

  private withdrawal(linkId: string): LinkWithdrawal | undefined {
    return this.sql.exec<{ reason: LinkWithdrawal }>("SELECT reason FROM withdrawn_links WHERE link_id = ?", linkId).toArray()[0]?.reason;
  }

  private link(permId: number, linkId: string): LinkRow | undefined {
    return this.sql.exec<LinkRow>("SELECT * FROM approval_links WHERE link_id = ? AND perm_id = ?", linkId, permId).toArray()[0];
  }

  /** Who answered a request that is no longer pending, from the session's log of resolutions. */
  private resolutionOf(link: LinkRow): { decidedBy: unknown; outcome: unknown } {
    const body = this.store.resolutionOf(link.perm_id, link.tool_call_id);
    if (body === undefined) return { decidedBy: null, outcome: null };
    const entry = JSON.parse(body) as Record<string, unknown>;
    const params = isObject(entry.params) ? entry.params : entry;
    return { decidedBy: params.decidedBy ?? null, outcome: params.outcome ?? null };
  }
}
