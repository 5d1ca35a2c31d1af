// "Waiting on you": the requests the signed-in person may answer now, across the tenant's sessions
// (GET /v1/approvals?waiting=me, worker/api/approvals.ts), and the tab's title that counts them, so
// a person on another tab sees the count change.

import type { Api } from "./api";
import { sessionAddress } from "./session-address";

export interface WaitingRequest {
  sessionId: string;
  title: string | null;
  agent: string;
  cwd: string;
  requestId: number;
  toolCallId: string | null;
  /** The frozen operation as a person reads it (protocol/operation-view.ts). */
  operation: {
    kind: string | null;
    name: string | null;
    agentTitle: string | null;
    command: { text: string; cwd: string } | null;
    paths: string[];
  };
  askedAt: number;
  deadlineAt: number;
  link: string;
}

/** A mode change held for a second person that this person may approve (decision 0061; never their own). */
export interface WaitingModeChange {
  sessionId: string;
  proposalId: string;
  /** `session/set_mode mode=bypassPermissions`, as the audit records it. */
  operation: string;
  proposedBy: string;
  proposedAt: number;
  expiresAt: number;
}

interface WaitingPage {
  items: WaitingRequest[];
  /** Absent from a gateway older than this console. */
  modeChanges?: WaitingModeChange[];
  incomplete: boolean;
}

export async function waitingOnMe(api: Api): Promise<WaitingPage> {
  return api.get<WaitingPage>("/v1/approvals?waiting=me");
}

/** The console's title with the count first, so it shows in a crowded tab strip. */
export function titleWith(count: number, base: string): string {
  return count > 0 ? `(${count}) ${base}` : base;
}

/** What the request would do, in one line: the command, else the kind and what it touches. */
export function whatItDoes(w: WaitingRequest): string {
  const op = w.operation;
  if (op.command) return op.command.text;
  const kind = op.kind ?? op.name ?? "tool call";
  return op.paths.length > 0 ? `${kind} ${op.paths.join(", ")}` : (op.agentTitle ?? kind);
}

/** The link to a held mode change's card in its session. */
export function modeChangeHash(m: WaitingModeChange): string {
  return sessionAddress(m.sessionId, `mode:${m.proposalId}`);
}

/** The link to the request's card in its session (session-address.ts): without a tool call id, the session's first waiting request. */
export function requestHash(w: WaitingRequest): string {
  return sessionAddress(w.sessionId, w.toolCallId ?? "");
}
