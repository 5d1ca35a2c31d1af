// The body of a notification webhook (documented in the README, "Notifications"). Built from what
// the session holds when the request has waited long enough; pure, so its shape is tested on its own.

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
  operation: OperationView;
  /** Every option the agent offered, with its kind; `onLink` says whether the approval page offers it. */
  options: { optionId: string; name: string; kind: string; onLink: boolean }[];
  /** The approval page for this one request, or null when the gateway has no APPROVAL_LINK_SECRET. */
  link: { url: string; expiresAt: number } | null;
  target: { id: string; name: string };
}

export function optionsForPayload(options: PermissionOption[], onLink: PermissionOption[]): WaitingRequestPayload["options"] {
  return options.map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind, onLink: onLink.includes(o) }));
}
