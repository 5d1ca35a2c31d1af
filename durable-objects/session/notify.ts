// Notifications of one session. A permission request that people are asked
// (after the tenant's rules) is tracked here when the tenant has notification targets. Whether it
// has, and its notifyAfterMs, are read from D1 once and kept for SETTINGS_TTL_MS, so a request costs
// no D1 call (and, for a tenant without targets, nothing at all); a target added reaches a live
// session's requests asked from at most that long after. When a tracked request has
// waited the tenant's notifyAfterMs (default 60 s) with no client attached, each target is sent the
// operation in full and a link to an approval page for that one request, once (recorded here).
// A client attached at that moment suppresses it; when the last client leaves, the wait starts again.
//
// Each notification carries an approval link, recorded in approval-links.ts.

import { notifySettings, targetsOfTenant } from "../../db/queries/notification-targets";
import type { NotificationTargetRow } from "../../db/schema";
import { isObject } from "../../protocol/jsonrpc";
import { DEFAULT_NOTIFY_AFTER_MS } from "../../protocol/effective-settings";
import { randomId } from "../../protocol/ids";
import { signApprovalToken, usableSecret } from "../../protocol/approval-token";
import type { Env } from "../../core/env";
import { deliverWebhook } from "./webhook-delivery";
import { allowPrivateWebhooks } from "../../protocol/webhook-url";
import { waitingRequestPayload } from "../../protocol/webhook-payload";
import type { LinkWithdrawal } from "./contract";
import type { SessionStore } from "./store";
import { sessionLog } from "./session-log";
import { type LimitError, limitsOf, targetsPerRequest, webhookPostsPerMinute, webhooksPaced } from "../../protocol/tenant-limits";
import { paceWebhooks } from "./webhook-pacing";
import { ApprovalLinks } from "./approval-links";

/** How long a session uses the tenant's notification settings (targets or not, notifyAfterMs) before reading them again. */
const SETTINGS_TTL_MS = 10_000;

interface NotifySettings {
  hasTargets: boolean;
  afterMs: number;
  readAt: number;
}
/** A link lives until its request's deadline, and never longer than this. */
const LINK_MAX_TTL_MS = 3600_000;

export class Notifier {
  private readonly sql: SqlStorage;
  /** The approval links the notifications carry: what each shows, and the one answer it may give. */
  readonly links: ApprovalLinks;
  private settings?: NotifySettings;
  private reading?: Promise<NotifySettings>;
  /**
   * No row can be due (none unsent with a notify time): `nextDue` answers without reading, as it is
   * asked every time the alarm is (twice a client-answered request, issue 40). Only an insert or an
   * update that gives a row a notify time again clears it.
   */
  private noneDue = false;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly store: SessionStore,
    /** Sets the object's alarm to the earliest of deadlines and notify times. */
    private readonly reschedule: () => void,
    /** Requests' webhooks wait for the next minute (the tenant's webhookPostsPerMinute): the session says so. */
    private readonly paced: (notice: LimitError) => void,
  ) {
    this.sql = ctx.storage.sql; // its table `notify`: store-migrations.ts
    this.links = new ApprovalLinks(this.sql, env, store);
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
    this.noneDue = false;
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
    if (this.noneDue) return undefined;
    // Pending requests are held in memory (store.ts), not in a table: filtered here.
    let next: number | undefined;
    const rows = this.sql
      .exec<{ perm_id: number; due_at: number }>("SELECT perm_id, due_at FROM notify WHERE sent_at IS NULL AND due_at IS NOT NULL")
      .toArray();
    this.noneDue = rows.length === 0;
    for (const r of rows) {
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

  /** session/delete: every link the session issued is withdrawn, and nothing is sent any more. */
  withdrawAll(reason: LinkWithdrawal): void {
    this.links.withdrawAll(reason);
    this.sql.exec("DELETE FROM notify");
  }

  /** A client left; if none is left, unsent requests wait notifyAfterMs from now (at the least). */
  onDetach(remainingClients: number, now = Date.now()): void {
    if (remainingClients > 0) return;
    const changed = this.sql.exec(
      "UPDATE notify SET due_at = max(coalesce(due_at, 0), ? + after_ms) WHERE sent_at IS NULL AND perm_id IN (SELECT value FROM json_each(?))",
      now,
      JSON.stringify(this.store.pending().map((p) => p.permId)),
    ).rowsWritten;
    if (changed > 0) this.noneDue = false;
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
      this.noneDue = false;
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
        this.links.issue(linkId, permId, pending.toolCallId, target, expiresAt);
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
    this.links.delivered(linkId, result);
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
