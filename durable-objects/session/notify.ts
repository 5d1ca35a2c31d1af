// Notifications and approval links of one session. A permission request that people are asked
// (after the tenant's rules) is tracked here when the tenant has notification targets. Whether it
// has, and its notifyAfterMs, are read from D1 once and kept for SETTINGS_TTL_MS, so a request costs
// no D1 call (and, for a tenant without targets, nothing at all); a target added reaches a live
// session's requests asked from at most that long after. When a tracked request has
// waited the tenant's notifyAfterMs (default 60 s) with no client attached, each target is sent the
// operation in full and a link to an approval page for that one request, once (recorded below).
// A client attached at that moment suppresses it; when the last client leaves, the wait starts again.
//
// Links are recorded here too: a token (protocol/approval-token.ts) proves who issued a link and
// when it expires; this table says whether it was used. The SessionObject answers through a link
// with its own resolve path, so a link's answer is exactly a client's answer.

import { notifySettings, targetExists, targetsOfTenant } from "../../db/queries/notification-targets";
import type { NotificationTargetRow } from "../../db/schema";
import { isObject } from "../../protocol/jsonrpc";
import { DEFAULT_NOTIFY_AFTER_MS } from "../../protocol/effective-settings";
import { randomId } from "../../protocol/ids";
import { signApprovalToken, usableSecret } from "../../protocol/approval-token";
import type { Env } from "../../core/env";
import { deliverWebhook } from "./webhook-delivery";
import { allowPrivateWebhooks } from "../../protocol/webhook-url";
import { requestView, waitingRequestPayload } from "../../protocol/webhook-payload";
import type { ApprovalView, LinkDecidedBy, LinkRefusal, LinkWithdrawal } from "./contract";
import type { PendingRequest, SessionStore } from "./store";
import { sessionLog } from "./session-log";
import { type LimitError, limitsOf, targetsPerRequest, webhookPostsPerMinute, webhooksPaced } from "../../protocol/tenant-limits";
import { paceWebhooks } from "./webhook-pacing";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS notify (perm_id INTEGER PRIMARY KEY, after_ms INTEGER NOT NULL, due_at INTEGER, sent_at INTEGER);
CREATE TABLE IF NOT EXISTS approval_links (
  link_id TEXT PRIMARY KEY, perm_id INTEGER NOT NULL, tool_call_id TEXT, target_id TEXT NOT NULL, target_name TEXT NOT NULL,
  expires_at INTEGER NOT NULL, used_at INTEGER, used_option TEXT, delivered INTEGER, attempts INTEGER NOT NULL DEFAULT 0, last_result TEXT);
CREATE TABLE IF NOT EXISTS withdrawn_links (link_id TEXT PRIMARY KEY, reason TEXT NOT NULL, at INTEGER NOT NULL);
`;

/** How long a session uses the tenant's notification settings (targets or not, notifyAfterMs) before reading them again. */
const SETTINGS_TTL_MS = 10_000;

interface NotifySettings {
  hasTargets: boolean;
  afterMs: number;
  readAt: number;
}
/** A link lives until its request's deadline, and never longer than this. */
const LINK_MAX_TTL_MS = 3600_000;

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

export class Notifier {
  private readonly sql: SqlStorage;
  private settings?: NotifySettings;
  private reading?: Promise<NotifySettings>;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly store: SessionStore,
    /** Sets the object's alarm to the earliest of deadlines and notify times. */
    private readonly reschedule: () => void,
    /** Requests' webhooks wait for the next minute (the tenant's webhookPostsPerMinute): the session says so. */
    private readonly paced: (notice: LimitError) => void,
  ) {
    this.sql = ctx.storage.sql;
    this.sql.exec(SCHEMA);
  }

  /** People are being asked: if the tenant has targets, the notify time of this request is set. */
  async track(permId: number): Promise<void> {
    const meta = this.store.meta;
    if (!meta) return;
    const held = this.settings;
    const tenant = held && Date.now() - held.readAt < SETTINGS_TTL_MS ? held : await this.readSettings(meta.tenantId);
    if (!tenant.hasTargets) return;
    const pending = this.store.pendingById(permId);
    if (!pending) return;
    const after = tenant.afterMs;
    this.sql.exec("INSERT OR IGNORE INTO notify (perm_id, after_ms, due_at) VALUES (?, ?, ?)", permId, after, pending.createdAt + after);
    this.reschedule();
  }

  /** The tenant's notification settings from D1, one read at a time; a failed read is not kept (the next request reads again). */
  private readSettings(tenantId: string): Promise<NotifySettings> {
    const reading = (this.reading ??= notifySettings(this.env.DB, tenantId)
      .then((row) => {
        const settings = { hasTargets: (row?.targets ?? 0) > 0, afterMs: notifyAfterMs(row?.settings ?? "{}"), readAt: Date.now() };
        this.settings = settings;
        return settings;
      })
      .finally(() => {
        if (this.reading === reading) this.reading = undefined;
      }));
    return reading;
  }

  /** The earliest notify time of a request still pending and not yet sent. */
  nextDue(): number | undefined {
    // Pending requests are held in memory (store.ts), not in a table: filtered here.
    let next: number | undefined;
    for (const r of this.sql
      .exec<{ perm_id: number; due_at: number }>("SELECT perm_id, due_at FROM notify WHERE sent_at IS NULL AND due_at IS NOT NULL")
      .toArray()) {
      if (this.store.isPending(r.perm_id)) next = next === undefined ? r.due_at : Math.min(next, r.due_at);
    }
    return next;
  }

  /** Due requests are sent now if nobody is attached; otherwise they wait for the last client to leave. */
  onAlarm(now: number, someoneAttached: boolean): void {
    const due = this.sql
      .exec<{ perm_id: number }>("SELECT perm_id FROM notify WHERE sent_at IS NULL AND due_at <= ?", now)
      .toArray()
      .map((r) => r.perm_id)
      .filter((permId) => this.store.isPending(permId));
    if (due.length === 0) return;
    if (someoneAttached) {
      for (const permId of due) this.sql.exec("UPDATE notify SET due_at = NULL WHERE perm_id = ?", permId);
      return;
    }
    for (const permId of due) this.sql.exec("UPDATE notify SET sent_at = ? WHERE perm_id = ?", now, permId);
    this.ctx.waitUntil(
      this.send(due, now).catch((e: unknown) =>
        sessionLog(this.store).error("session.notify_failed", "sending notifications failed", {}, e),
      ),
    );
  }

  /** A client left; if none is left, unsent requests wait notifyAfterMs from now (at the least). */
  onDetach(remainingClients: number, now = Date.now()): void {
    if (remainingClients > 0) return;
    const changed = this.sql.exec(
      "UPDATE notify SET due_at = max(coalesce(due_at, 0), ? + after_ms) WHERE sent_at IS NULL AND perm_id IN (SELECT value FROM json_each(?))",
      now,
      JSON.stringify(this.store.pending().map((p) => p.permId)),
    ).rowsWritten;
    if (changed > 0) this.reschedule();
  }

  private async send(permIds: number[], now: number): Promise<void> {
    const meta = this.store.meta;
    if (!meta) return;
    // Bounded per request and paced per tenant (decision 0061): the first targets by id, and the requests past the minute's posts wait.
    const limits = limitsOf(meta.limits);
    const targets = (await targetsOfTenant(this.env.DB, meta.tenantId)).slice(0, targetsPerRequest(limits));
    const waiting = permIds.filter((permId) => this.store.isPending(permId));
    const perMinute = webhookPostsPerMinute(limits);
    const paced = await paceWebhooks(
      this.env,
      this.store,
      meta.tenantId,
      waiting.map(() => targets.length),
      perMinute,
    );
    const later = waiting.slice(paced.admitted);
    if (later.length > 0) {
      this.sql.exec(
        "UPDATE notify SET sent_at = NULL, due_at = ? WHERE perm_id IN (SELECT value FROM json_each(?))",
        paced.retryAt,
        JSON.stringify(later),
      );
      this.paced(webhooksPaced(perMinute, later.length, paced.retryAt));
      this.reschedule();
    }
    const secret = this.env.APPROVAL_LINK_SECRET;
    if (!usableSecret(secret))
      sessionLog(this.store).warn(
        "session.approval_links_off",
        "APPROVAL_LINK_SECRET is unset or short; notifications carry no approval link",
      );
    const deliveries: Promise<void>[] = [];
    for (const permId of waiting.slice(0, paced.admitted)) {
      const pending = this.store.pendingById(permId);
      if (!pending) continue; // answered while the targets were read
      for (const target of targets) {
        const linkId = randomId("lnk");
        const expiresAt = Math.min(pending.deadlineAt, now + LINK_MAX_TTL_MS);
        this.sql.exec(
          "INSERT INTO approval_links (link_id, perm_id, tool_call_id, target_id, target_name, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
          linkId,
          permId,
          pending.toolCallId,
          target.id,
          target.name,
          expiresAt,
        );
        const token = usableSecret(secret)
          ? await signApprovalToken(secret, { t: meta.tenantId, s: meta.sessionId, p: permId, l: linkId, e: expiresAt })
          : null;
        const link = token ? { url: `${target.linkBaseUrl}/approve/${token}`, expiresAt } : null;
        const payload = waitingRequestPayload(meta, pending, target, linkId, link, Date.now());
        deliveries.push(this.deliver(target, linkId, JSON.stringify(payload)));
      }
    }
    await Promise.all(deliveries);
  }

  private async deliver(target: NotificationTargetRow, linkId: string, body: string): Promise<void> {
    const result = await deliverWebhook(target, linkId, body, { allowPrivate: allowPrivateWebhooks(this.env.WEBHOOK_ALLOW_PRIVATE) });
    this.sql.exec(
      "UPDATE approval_links SET delivered = ?, attempts = ?, last_result = ? WHERE link_id = ?",
      result.ok ? 1 : 0,
      result.attempts,
      result.last,
      linkId,
    );
    if (!result.ok)
      sessionLog(this.store).warn(
        "session.notification_failed",
        `notification to "${target.name}" failed after ${result.attempts} attempts`,
        {
          target: target.name,
          attempts: result.attempts,
          last: result.last,
        },
      );
  }

  // ── approval links ──────────────────────────────────────────────────────────────────────────
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
    this.sql.exec("DELETE FROM notify");
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

function notifyAfterMs(settingsText: string): number {
  try {
    const settings = JSON.parse(settingsText) as unknown;
    const value = isObject(settings) ? settings.notifyAfterMs : undefined;
    return typeof value === "number" && value >= 0 ? value : DEFAULT_NOTIFY_AFTER_MS;
  } catch {
    return DEFAULT_NOTIFY_AFTER_MS;
  }
}
