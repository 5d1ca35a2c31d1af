// The body of a notification webhook (documented in the README, "Notifications"). Built from what
// the session holds when the request has waited long enough; pure, so its shape is tested on its own.

import { displayText } from "./display-text";
import { type OperationView, linkOptions, operationView } from "./operation-view";
import type { PermissionOption } from "./permissions";
import { type PendingRequest, toolCallOf } from "./pending-permission";

const NOTIFICATION_EVENT = "permission.waiting";

export interface WaitingRequestPayload {
  type: typeof NOTIFICATION_EVENT;
  /** The delivery's id; the same on every retry of it, so a receiver can drop duplicates. */
  deliveryId: string;
  sentAt: number;
  tenantId: string;
  session: { id: string; agent: string; cwd: string; title: string | null };
  request: { id: number; toolCallId: string | null; createdAt: number; deadlineAt: number };
  /** What the agent sent, raw: data for a program, never to be shown to a person as it is. */
  operation: OperationView;
  /**
   * The same words made safe to show a person (protocol/display-text.ts): terminal escapes,
   * direction overrides and invisible characters replaced by symbols. `escaped` says something was.
   */
  display: DisplayFields;
  /** Every option the agent offered, with its kind; `onLink` says whether the approval page offers it. */
  options: { optionId: string; name: string; kind: string; onLink: boolean }[];
  /** The approval page for this one request, or null when the gateway has no APPROVAL_LINK_SECRET. */
  link: { url: string; expiresAt: number } | null;
  target: { id: string; name: string };
}

interface DisplayFields {
  sessionTitle: string | null;
  agentTitle: string | null;
  command: string | null;
  paths: string[];
  options: string[];
  escaped: boolean;
}

/** The human-readable fields of a payload, display-safe: for a chat message or a pager line. */
function displayFields(sessionTitle: string | null, operation: OperationView, options: PermissionOption[]): DisplayFields {
  let escaped = false;
  const t = (raw: string) => {
    const s = displayText(raw);
    escaped ||= s.escaped > 0;
    return s.text;
  };
  const fields = {
    sessionTitle: sessionTitle === null ? null : t(sessionTitle),
    agentTitle: operation.agentTitle === null ? null : t(operation.agentTitle),
    command: operation.command === null ? null : t(operation.command.text),
    paths: operation.paths.map(t),
    options: options.map((o) => t(o.name)),
  };
  return { ...fields, escaped };
}

function optionsForPayload(options: PermissionOption[], onLink: PermissionOption[]): WaitingRequestPayload["options"] {
  return options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind, onLink: onLink.includes(o) }));
}

/** What a notification and an approval link show of a session (its meta). */
export interface SessionFacts {
  tenantId: string;
  sessionId: string;
  agent: string;
  cwd: string;
  title?: string | null;
}

/**
 * A waiting request as a notification and its approval link show it: the operation frozen when it
 * was asked (decision 0040: what the link approves, whatever the agent updated since). Under four
 * eyes a link only rejects (decision 0028): whoever holds it is not known to be an approver, nor a
 * second person; approving needs a signed-in approver's client or console.
 */
export function requestView(meta: SessionFacts | undefined, pending: PendingRequest) {
  const options = pending.options;
  return {
    session: { id: meta?.sessionId ?? "", agent: meta?.agent ?? "", cwd: meta?.cwd ?? "", title: meta?.title ?? null },
    request: { id: pending.permId, toolCallId: pending.toolCallId, createdAt: pending.createdAt, deadlineAt: pending.deadlineAt },
    operation: operationView(toolCallOf(pending), meta?.cwd ?? ""),
    options,
    linkOptions: pending.fourEyes ? linkOptions(options).filter((o) => o.kind === "reject_once") : linkOptions(options),
  };
}

/** The webhook's body for one target: the request's view, made safe to show, and its link (or null). */
export function waitingRequestPayload(
  meta: SessionFacts | undefined,
  pending: PendingRequest,
  target: { id: string; name: string },
  deliveryId: string,
  link: WaitingRequestPayload["link"],
  now: number,
): WaitingRequestPayload {
  const view = requestView(meta, pending);
  return {
    type: NOTIFICATION_EVENT,
    deliveryId,
    sentAt: now,
    tenantId: meta?.tenantId ?? "",
    session: view.session,
    request: view.request,
    operation: view.operation,
    display: displayFields(view.session.title, view.operation, view.options),
    options: optionsForPayload(view.options, view.linkOptions),
    link,
    target: { id: target.id, name: target.name },
  };
}
