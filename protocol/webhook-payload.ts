// The body of a notification webhook (documented in the README, "Notifications"). Built from what
// the session holds when the request has waited long enough; pure, so its shape is tested on its own.

import { displayText } from "./display-text";
import type { OperationView } from "./operation-view";
import type { PermissionOption } from "./permissions";

export const NOTIFICATION_EVENT = "permission.waiting";

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

export interface DisplayFields {
  sessionTitle: string | null;
  agentTitle: string | null;
  command: string | null;
  paths: string[];
  options: string[];
  escaped: boolean;
}

/** The human-readable fields of a payload, display-safe: for a chat message or a pager line. */
export function displayFields(sessionTitle: string | null, operation: OperationView, options: PermissionOption[]): DisplayFields {
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

export function optionsForPayload(options: PermissionOption[], onLink: PermissionOption[]): WaitingRequestPayload["options"] {
  return options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind, onLink: onLink.includes(o) }));
}
