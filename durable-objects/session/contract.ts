// The SessionObject's RPC contract: its methods and their argument and return types, as its callers
// (the AgentObject, the edge Worker's routes, the RulesObject) see them; session-object.ts implements
// it and callers reach the object through ../objects.ts. The agent's own contract (what a session
// sends towards its agent) is durable-objects/agent/contract.ts.

import type { OperationView } from "../../protocol/operation-view";
import type { ModeDecisionBy } from "./mode-approvals";
import type { Decision, ModeProposal } from "../../protocol/people/mode-approval";
import type { SessionModes } from "../../protocol/people/session-modes";
import type { Answerer } from "../../protocol/people/answering";
import type { PermissionOption } from "../../protocol/permissions";
import type { SessionMeta } from "./store";
import type { ResumedBy } from "./unasked-runs";
import type { SessionHold } from "../../protocol/unasked-runs";
import type { ReaderReport } from "../../protocol/unseen-lease";

/**
 * Who a session is: its object's name `${tenantId}/${sessionId}` (the session's RPC methods read it
 * from `ctx.id.name` and take no such argument); still passed to the AgentObject's `toAgent`.
 */
export interface SessionRef {
  tenantId: string;
  sessionId: string;
}

/** What the AgentObject stores in a session it created or loaded (`init`); the rest of the meta is the ref's. */
export type SessionInit = Omit<SessionMeta, "tenantId" | "sessionId" | "createdAt">;

/** `init` refused: the session belongs to another tenant or agent, or session/new named one that exists (ownership.ts). */
export type InitResult = { ok: true } | { ok: false; message: string };

/**
 * What the AgentObject delivers to a session (`fromAgentBatch`), in order: the agent's frames, its
 * answers, and the news that its connection is gone. `seq` is the AgentObject's own increasing number
 * for each item (set when the item is stored in its outbox): an item can be delivered twice after a
 * restart, and the session applies each seq once.
 */
export type FromAgent = (
  | { kind: "frame"; epoch: number; text: string }
  /** `agentId`: the AgentObject's id of the request, whose map entry goes once the session has the answer. */
  | { kind: "response"; gwId: number; text: string; agentId?: number }
  | { kind: "gone"; epoch: number; reason: string; gwIds: number[] }
) & { seq?: number };

/** What the REST API shows of a live session (`snapshot`, GET /v1/sessions/:id). */
export interface SessionSnapshot {
  sessionId: string;
  agent: string;
  cwd: string;
  title: string | null;
  createdAt: number;
  turn: { state: string; startedAt?: number; user?: string | null };
  toolCalls: object[];
  pendingPermissions: {
    requestId: number;
    toolCallId: string | null;
    toolCall: object | null;
    options: object | null;
    createdAt: number;
    deadlineAt: number;
  }[];
  clients: { connectionId: string; user: string | null; attachedAt: number }[];
  lastSeq: number;
  /** Stopped after the agent ran a tool call unasked (decision 0056): what ran; absent when it takes prompts. */
  held?: SessionHold;
  /** The agent's modes (decision 0061): current, and each advertised one marked governed; null when it advertised none. */
  modes: SessionModes | null;
}

import type { StreamTurnState } from "../../protocol/turn-state";

export type { LinkDecidedBy } from "../../protocol/pending-permission";

/** A request that waits on one person now ("waiting on you", GET /v1/approvals?waiting=me). */
export interface WaitingRequest {
  requestId: number;
  toolCallId: string | null;
  /** The frozen operation, as a person reads it (protocol/operation-view.ts). */
  operation: OperationView;
  askedAt: number;
  deadlineAt: number;
}

/** What the approval page shows for a link (`approvalView`). */
export type ApprovalView =
  | {
      state: "pending";
      session: { id: string; agent: string; cwd: string; title: string | null };
      request: { id: number; toolCallId: string | null; createdAt: number; deadlineAt: number };
      operation: OperationView;
      options: PermissionOption[];
      /** The options this page may answer with (the *_once kinds). */
      linkOptions: PermissionOption[];
      target: string;
      expiresAt: number;
    }
  | { state: "used"; usedAt: number; option: string | null }
  | { state: "expired" }
  | { state: "answered"; decidedBy: unknown; outcome: unknown }
  | { state: "invalid_option"; offered: string[] }
  /** The link was withdrawn: its notification target was deleted, or its session was. */
  | { state: "withdrawn"; reason: LinkWithdrawal }
  | { state: "unknown" };

export type LinkWithdrawal = "target_deleted" | "session_deleted";

/** Why a link did not answer (`answerFromLink`). */
export type LinkRefusal = Exclude<ApprovalView, { state: "pending" }>;

/** The SessionObject's RPC methods; a client's attach and the agent's and edge's links are its `fetch` (WebSocket upgrades). */
export interface SessionContract extends Rpc.DurableObjectBranded {
  /** The AgentObject stores what it knows of a session it created or loaded (ownership.ts decides). */
  init(meta: SessionInit, opening?: "new" | "load"): InitResult;
  exists(): boolean;
  /** The agent's traffic for this session, in order, each item applied once by its seq. */
  fromAgentBatch(items: FromAgent[]): void;
  /** The tenant's rules changed (its rules shard tells it): true while it has requests waiting on people. */
  rulesChanged(generation: number): boolean;
  /** The tenant's rules root revokes the session's clean leases up to `leaseId` (decision 0058): its open readers. */
  unseenRevoke(leaseId: number): ReaderReport;
  approvalView(permId: number, linkId: string): Promise<ApprovalView>;
  /** `reason`: the person's reason for the answer, read by protocol/answer-reason.ts `readReason` (display-safe, bounded). */
  answerFromLink(
    permId: number,
    linkId: string,
    optionId: string,
    reason?: string | null,
  ): Promise<LinkRefusal | { state: "answered_by_you" }>;
  snapshot(): SessionSnapshot | null;
  /** The requests asked of people that wait on this person now (null: no such session). */
  waitingOn(answerer: Answerer): { title: string | null; requests: WaitingRequest[] } | null;
  /** Lifts the hold of a session stopped after its agent ran a tool call unasked (decision 0056); null: no such session. */
  resumeHeld(by: ResumedBy): { resumed: boolean } | null;
  /** A person decides a held mode change (decision 0061); null: no such session. */
  decideModeChange(by: ModeDecisionBy, proposalId: string, decision: Decision): Promise<ModeDecisionResultView | null>;
  /** The mode changes held for a second person, oldest first (null: no such session). */
  modeChangesWaiting(): ModeProposal[] | null;
  /** The turn's state as a client resuming a stream is told it (protocol/turn-state.ts); null for a session that does not exist. */
  turnState(connId: string): StreamTurnState | null;
}

/** A held mode change's decision as RPC returns it (an RpcError does not cross RPC as a class). */
export type ModeDecisionResultView =
  { ok: true; outcome: "approved" | "refused" | "expired" } | { ok: false; code: number; message: string; gone: boolean };
