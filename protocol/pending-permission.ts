// A permission request the agent asked, as the session keeps it while it waits (its log entry's
// `request` column, durable-objects/session/store.ts), and who or what resolved it. Pure data and
// the two id conversions, and the operation it is judged on; protocol/permission-machine.ts is what
// happens to it.

import { type JsonRpcId, isObject } from "./jsonrpc";
import { type PermissionOption, offeredOptions } from "./permissions";
import type { FourEyesNeed } from "./people/four-eyes";
import type { UnseenHold } from "./unseen";

/** A first approval of a request that needs two (four eyes, decision 0028): who, from where, when. */
export interface Approval {
  who: string;
  user: string | null;
  role: string;
  connectionId: string;
  at: number;
}

/**
 * A permission request waiting for an answer: its own log entry (kind `permission`), whose `request`
 * column holds these fields, written once when it is asked (and once more only when the rules are
 * consulted asynchronously and people are asked after). `permId` is the entry's seq, so it never
 * repeats in a session; the copies clients hold carry it as their id (`copyId`), so no row per copy
 * is needed.
 */
interface PendingRow {
  permId: number;
  agentReqId: JsonRpcId;
  agentEpoch: number;
  toolCallId: string | null;
  params: string;
  createdAt: number;
  deadlineAt: number;
  /** 0 while the tenant's rules are consulted, 1 once people are asked (copies sent), 2 asked because the rules could not be consulted. */
  asking: number;
  /** What the tenant's four-eyes policy asks of it (decided when it is asked; absent: nothing). */
  fourEyes?: FourEyesNeed | null;
  /** The approvals recorded so far, when it needs two. */
  approvals?: Approval[];
  /** The operation frozen when it was asked, and its digest (protocol/frozen-operation.ts, decision 0040). */
  operation: Record<string, unknown>;
  operationHash: string;
  /** Asked again because the agent changed the operation of an earlier request (its permId), and what changed. */
  replaces?: { permId: number; changed: string[] };
  /** Asked of people although an allow rule matched: what the agent changed that no person saw (decision 0046). */
  unseen?: UnseenHold;
}

/** A pending request's params, parsed once when its row is read: the tool call it names and the options it offers. */
export interface ParsedParams {
  /** The request's `toolCall` object as the agent sent it (the table's row may know more). */
  toolCall: Record<string, unknown> | null;
  /** The options offered that have an optionId and a kind: the only ones an answer may choose. */
  options: PermissionOption[];
}

/** A pending request as the session uses it: its params parsed once, when it is read. */
export type PendingRequest = PendingRow & ParsedParams;

export function parsePermissionParams(text: string): ParsedParams {
  return parsedParams(JSON.parse(text));
}

export function parsedParams(params: unknown): ParsedParams {
  const toolCall = isObject(params) && isObject(params.toolCall) ? params.toolCall : null;
  return { toolCall, options: offeredOptions(params) };
}

/**
 * The operation a request is judged on — by the rules, the four-eyes policy, an "always", the audit,
 * and what every client is shown: frozen when it was asked (protocol/frozen-operation.ts), never the
 * session's row as the agent changed it since.
 */
export function toolCallOf(request: Pick<PendingRequest, "operation">): Record<string, unknown> {
  return request.operation;
}

/** The id of every client's copy of a pending request: negative, so it never meets the positive ids of the session's nextId(). */
export function copyId(permId: number): number {
  return -permId;
}

/** The pending request a copy's id names, if the id is a copy's. */
export function permIdOfCopy(id: number): number | undefined {
  return id < 0 ? -id : undefined;
}

/** An approval link's answer: which link, sent to which notification target. */
export type LinkDecidedBy = {
  type: "link";
  linkId: string;
  targetId: string;
  target: string;
  /** The person's reason for their answer, display-safe (answer-reason.ts). */
  reason?: string;
};

/** Who or what resolved a permission request; sent to clients and kept in the log and the audit. */
export type DecidedBy =
  | {
      type: "person";
      connectionId: string;
      user: string | null;
      keyId: string;
      person?: { issuer: string; subject: string };
      /** Their role when they answered (decision 0028). */
      role?: string;
      /** The policy that applied: `four_eyes:not_prompter` or `four_eyes:two_approvals`. */
      policy?: string;
      /** Under two_approvals: the first approval, recorded before this one committed. */
      approvedBefore?: Approval[];
      /** Their reason for the answer, display-safe (answer-reason.ts). */
      reason?: string;
    }
  | { type: "rule"; ruleId: string; description: string }
  | { type: "cancel"; connectionId?: string; user?: string | null }
  | { type: "deadline" }
  | { type: "turn_end" }
  | { type: "agent_disconnected"; reason: string }
  | { type: "agent_withdrew" }
  /** The agent changed the operation while it waited: withdrawn and asked again as a new request (decision 0040); which fields. */
  | { type: "operation_changed"; changed: string[] }
  | LinkDecidedBy;
