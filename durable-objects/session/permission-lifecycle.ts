// The SessionObject's permission requests: protocol/permission-machine.ts decides everything about
// them; this file only builds its ports from the object's parts — the store (the pending rows), the
// client sockets, the agent link, the rules link, the audit outbox, notices, the alarm — and turns
// the ports that take time (the rules, the tenant's policy, remembering a rule, the audit's flush)
// into callbacks and `waitUntil`s.

import { type ClientAttachment } from "../../protocol/session-wire";
import { LATER, PermissionMachine, RULES_UNAVAILABLE, type PermissionPorts } from "../../protocol/permission-machine";
import type { ToAgent } from "../agent/contract";
import type { AuditOutbox } from "./audit-outbox";
import { type AttachedClients, attachmentOf } from "./clients";
import type { Notifier } from "./notify";
import { auditEntry, boundedEntry, outsideTurnSummary } from "./permission-audit";
import type { TenantRules } from "./tenant-rules";
import type { SessionInfo } from "./session-info";
import type { SessionStore } from "./store";
import type { TurnWatch } from "./turn-watch";
import type { TenantPolicy } from "./tenant-policy";
import { type MetricsDataset, recordMetric } from "../../core/metrics";
import type { AuditEntry } from "../../db/queries/audit";
import { sessionLog } from "./session-log";
import type { UnaskedRuns } from "./unasked-runs";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";

/** The machine as the SessionObject, the agent link and the turn use it. */
export type PermissionLifecycle = PermissionMachine<WebSocket>;

export interface LifecycleParts {
  ctx: DurableObjectState;
  store: SessionStore;
  clients: AttachedClients;
  notifier: Notifier;
  turnWatch: TurnWatch;
  audits: AuditOutbox;
  rules: TenantRules;
  info: SessionInfo;
  policy: TenantPolicy;
  /** What the tenant does with a tool call the agent ran unasked (decision 0056). */
  unasked: UnaskedRuns;
  /** To the agent, in order; `after` learns whether the frame reached it (`threw`: the hand-off failed). */
  toAgent(frame: ToAgent, after?: (delivered: boolean, threw: boolean) => void): void;
  /** Sets the object's alarm to the earliest deadline, notify time, audit retry or idle time. */
  scheduleDeadline(): void;
  /** Where the permission metrics go (core/metrics.ts); unbound: log lines. */
  metrics: MetricsDataset | undefined;
}

/**
 * Audit rows written within this long of each other go to D1 in one batch: an agent running tool
 * call after tool call under a rule pays one D1 write per batch, not one per request (each row is
 * in the session's SQLite first, so the wait loses nothing).
 */
const AUDIT_BATCH_MS = 100;

/** How often each pending request was re-sent to this client after a refused answer; kept in the socket's attachment (it survives hibernation). */
type WithResends = ClientAttachment & { resends?: Record<string, number> };

/** Kept in the session until D1 takes it (audit-outbox.ts); a failure is retried by the alarm. */
export async function flushAudit(parts: Pick<LifecycleParts, "audits" | "scheduleDeadline">): Promise<void> {
  if (!(await parts.audits.flush())) parts.scheduleDeadline();
}

export function permissionLifecycle(parts: LifecycleParts): PermissionLifecycle {
  const { ctx, store } = parts;
  const failed = (event: string, message: string) => (error: unknown) => sessionLog(store).error(event, message, {}, error);
  let flushWaiting = false;
  const ports: PermissionPorts<WebSocket> = {
    table: store,
    clients: {
      all: () => parts.clients.all(),
      attachment: attachmentOf,
      send: (ws, text) => parts.clients.sendForMachine(ws, text),
      resends: (ws) => {
        const attachment = ws.deserializeAttachment() as WithResends | undefined;
        return attachment ? (attachment.resends ?? {}) : undefined;
      },
      setResends: (ws, resends) => ws.serializeAttachment({ ...(ws.deserializeAttachment() as WithResends), resends }),
    },
    toAgent: parts.toAgent,
    rules: {
      consult: (pending, then) => {
        const decided = parts.rules.consultRules(pending);
        if (!(decided instanceof Promise)) return decided;
        const answered = decided.then(then, (error: unknown) => {
          sessionLog(store).warn("session.rules_unavailable", "consulting the rules failed; asking people", {}, error);
          then(RULES_UNAVAILABLE);
        });
        ctx.waitUntil(answered);
        return LATER;
      },
      remember: (pending, made, then) => {
        const remembered = parts.rules.remember(pending, made).then(then);
        ctx.waitUntil(remembered.catch(failed("session.remember_failed", "remembering the decision failed")));
      },
      watch: () => parts.rules.watch(),
      gate: (request, then) => {
        // Decided at once under the session's clean lease (decision 0058), else by the tenant's root.
        const decided = parts.rules.gate(request);
        if (!(decided instanceof Promise)) return decided;
        const gated = decided.then(then, (error: unknown) => {
          sessionLog(store).warn("session.unseen_unavailable", "consulting the unseen changes failed; asking people", {}, error);
          then(RULES_UNAVAILABLE);
        });
        ctx.waitUntil(gated);
        return LATER;
      },
      note: (changes) =>
        ctx.waitUntil(
          parts.rules.note(changes).catch(failed("session.unseen_note_failed", "noting what the agent changed unasked failed")),
        ),
      unseenNow: (then) => {
        const read = parts.rules.unseenNow().then(then, (error: unknown) => {
          sessionLog(store).warn("session.unseen_unavailable", "reading the unseen changes failed; asking people", {}, error);
          then(RULES_UNAVAILABLE);
        });
        ctx.waitUntil(read);
        return LATER;
      },
      seen: (upTo) =>
        ctx.waitUntil(parts.rules.seen(upTo).catch(failed("session.unseen_seen_failed", "marking unseen changes seen failed"))),
      readerDone: (toolCallId) =>
        ctx.waitUntil(parts.rules.readerDone(toolCallId).catch(failed("session.reader_done_failed", "closing a reader failed"))),
    },
    audit: {
      entry: (pending, outcome, by, chosen) => {
        const meta = store.meta;
        if (!meta) return null;
        // The operation as frozen when it was asked: what people were shown and the rules judged.
        return boundedEntry(auditEntry(meta, pending, outcome, by, chosen));
      },
      // SAFETY: the machine hands back what `entry` made.
      outsideTurnSummary: (latest, start, over, rate) => outsideTurnSummary(latest as AuditEntry, start, over, rate),
      hold: (permId) => parts.audits.hold(permId),
      release: (permId) => parts.audits.release(permId),
      // Every resolution goes to the tenant's decision audit in D1, off the hot path, batched (AUDIT_BATCH_MS).
      queued: () => {
        if (flushWaiting) return;
        flushWaiting = true;
        ctx.waitUntil(
          scheduler.wait(AUDIT_BATCH_MS).then(() => {
            flushWaiting = false;
            return flushAudit(parts);
          }),
        );
      },
    },
    session: {
      now: () => Date.now(),
      notice: (method, params) => {
        parts.info.notice(method, params);
        if (method === GATEWAY_NOTIFICATIONS.ranUnasked) parts.unasked.ran(params);
      },
      deadlineChanged: () => parts.scheduleDeadline(),
      progress: () => parts.turnWatch.touch(),
      peopleAsked: (permId) =>
        ctx.waitUntil(
          parts.notifier.track(permId).catch(failed("session.notify_track_failed", "tracking a request for notification failed")),
        ),
      policy: (gwId, then) => {
        const policy = parts.policy.forTurn(gwId);
        if (!(policy instanceof Promise)) return policy;
        ctx.waitUntil(policy.then(then));
        return LATER;
      },
      metric: (metric, detail) => {
        const meta = store.meta;
        if (meta) recordMetric(parts.metrics, { tenantId: meta.tenantId, metric, detail, agent: meta.agent });
      },
    },
  };
  return new PermissionMachine(ports);
}
