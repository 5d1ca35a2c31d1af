// Multi-client attach as the draft RFD "Multi-Client Session Attach" (agent-client-protocol PR #533,
// docs/rfds/multi-client-session-attach.mdx on its branch) says it, mapped onto the gateway's roles
// (decision 0054). Pure: what `session/attach` asks and whether it may, what the session answers, and
// the PR's session updates. Guarantees:
// - A role is never raised by asking: a key that may only watch gets -32002 for `controller`; a key
//   that drives may choose `observer`, and is then an observer in that session (answers and prompts refused).
// - Every field a client names is bounded before it reaches a socket's attachment (2 KB).
// - The PR's updates carry both `sessionUpdate` (ACP's discriminator, which SDK clients read) and the
//   PR's `type`: the same value under the two names.

import type { Role } from "../core/principal";
import { AttachErrorCode, ErrorCode } from "../core/rpc-errors";
import { RpcError, isObject } from "./jsonrpc";
import { may } from "./people/roles";

export const ATTACH_METHODS = {
  attach: "session/attach",
  detach: "session/detach",
} as const;

const HISTORY_POLICIES = ["full", "pending_only", "none", "after_message"] as const;
export type HistoryPolicy = (typeof HISTORY_POLICIES)[number];

export type AttachRole = "controller" | "observer";

/** Where `initialize` advertises attach until the PR lands: `agentCapabilities.sessionCapabilities._meta[ATTACH_META]`. */
export const ATTACH_META = "acp/attach";

/** Who a client says it is (the PR's `clientId` and `clientInfo`), bounded; `clientId` the gateway's when the client gave none. */
export interface AttachedAs {
  clientId: string;
  name?: string;
  version?: string;
}

export interface AttachAsk {
  sessionId: string;
  role: AttachRole;
  historyPolicy: HistoryPolicy;
  /** With `after_message`: the agent's `messageId` the client has history up to (the Message ID RFD). */
  afterMessageId?: string;
  /** The gateway's role the client has in this session: its own, or `observer` when it asked for less. */
  sessionRole: Role;
  as: AttachedAs;
}

/**
 * Longest `clientId`, `clientInfo.name` or `clientInfo.version` kept (longer is refused, never cut):
 * the three sit in the socket's attachment beside the key's label and person, under workerd's 2 KB.
 */
const MAX_FIELD = 64;

/** Longest `afterMessageId` looked for: it goes in the attach header and one log query, never into an attachment. */
const MAX_MESSAGE_ID = 256;

/** The capability one caller is offered: the roles its key allows, the history policies. */
export function attachCapability(role: Role | null): { roles: AttachRole[]; historyPolicies: readonly HistoryPolicy[] } {
  return { roles: may(role, "drive") ? ["controller", "observer"] : ["observer"], historyPolicies: HISTORY_POLICIES };
}

/**
 * `session/attach`'s params read and authorised for a caller of `role`, or the error to answer.
 * `after_message` names the agent's `messageId` (the Message ID RFD) in `afterMessageId`; the session
 * finds it in its log or falls back to `full` (durable-objects/session/session-attach.ts, decision 0060).
 */
export function readAttach(params: unknown, role: Role | null, newClientId: () => string): AttachAsk {
  if (!isObject(params) || typeof params.sessionId !== "string" || params.sessionId === "")
    throw RpcError.invalidParams("session/attach needs params.sessionId (a string)");
  const historyPolicy = params.historyPolicy ?? "full";
  if (!isHistoryPolicy(historyPolicy))
    throw RpcError.invalidParams(`session/attach: historyPolicy must be one of ${HISTORY_POLICIES.join(", ")}`, { historyPolicy });
  const afterMessageId = historyPolicy === "after_message" ? bounded(params.afterMessageId, "afterMessageId", MAX_MESSAGE_ID) : undefined;
  if (historyPolicy === "after_message" && afterMessageId === undefined)
    throw RpcError.invalidParams("session/attach: historyPolicy after_message needs afterMessageId (a message's id)");
  const drives = may(role, "drive");
  const wanted = params.role ?? (drives ? "controller" : "observer");
  if (wanted !== "controller" && wanted !== "observer")
    throw RpcError.invalidParams(`session/attach: role must be controller or observer`, { role: wanted });
  if (wanted === "controller" && !drives)
    throw new RpcError(
      AttachErrorCode.notAuthorised,
      `Not authorised to attach to this session as controller: your role (${role ?? "none"}) may only watch. Attach as observer, or ask a tenant admin for a member role.`,
      { sessionId: params.sessionId, role: wanted, yourRole: role },
    );
  return {
    sessionId: params.sessionId,
    role: wanted,
    historyPolicy,
    ...(afterMessageId !== undefined ? { afterMessageId } : {}),
    sessionRole: wanted === "observer" || role === null ? "observer" : role,
    as: attachedAs(params, newClientId),
  };
}

function isHistoryPolicy(value: unknown): value is HistoryPolicy {
  return typeof value === "string" && (HISTORY_POLICIES as readonly string[]).includes(value);
}

function attachedAs(params: Record<string, unknown>, newClientId: () => string): AttachedAs {
  const clientId = bounded(params.clientId, "clientId") ?? newClientId();
  const info = isObject(params.clientInfo) ? params.clientInfo : {};
  const name = bounded(info.name, "clientInfo.name");
  const version = bounded(info.version, "clientInfo.version");
  return { clientId, ...(name !== undefined ? { name } : {}), ...(version !== undefined ? { version } : {}) };
}

function bounded(value: unknown, what: string, max = MAX_FIELD): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.length === 0 || value.length > max)
    throw RpcError.invalidParams(`session/attach: ${what} must be a string of 1 to ${max} characters`);
  return value;
}

/** The -32001 of the PR: no session of this tenant by that id (another tenant's is not found either). */
export function attachNotFound(sessionId: string): RpcError {
  return new RpcError(AttachErrorCode.notFound, "Session not found", { sessionId });
}

/** A peer as the PR names it in `connectedClients`, `resolvedBy` and `client_disconnected`. */
export interface PeerView {
  clientId?: string;
  name: string;
  version?: string;
  /** The gateway's: the person (the key's user label) behind the client. */
  user?: string | null;
}

/** What the session knows of a client socket, as others are shown it: its attach identity, else the key's user. */
export function peerView(client: { user: string | null; attachedAs?: AttachedAs }): PeerView {
  const as = client.attachedAs;
  if (!as) return { name: client.user ?? "client", user: client.user };
  return {
    clientId: as.clientId,
    name: as.name ?? client.user ?? "client",
    ...(as.version ? { version: as.version } : {}),
    user: client.user,
  };
}

/** A prompt as the session's log keeps it (the echo of its content blocks), for the attach answer's history. */
export interface LoggedPrompt {
  blocks: unknown[];
  at: number;
}

/** Longest text of one prompt in the attach answer's history: it is a summary, the replay carries the prompt whole. */
export const MAX_PROMPT_TEXT = 2000;

/** Most prompts listed in the attach answer's history (the newest): the answer is one frame. */
export const MAX_HISTORY_PROMPTS = 500;

/**
 * The PR's `{type: "prompt", content, timestamp}` history item: the prompt's text (its text blocks;
 * any other block named in brackets), cut at MAX_PROMPT_TEXT, and when it was sent (ISO 8601).
 */
export function promptHistoryItem(prompt: LoggedPrompt): { type: "prompt"; content: string; timestamp: string } {
  const parts = prompt.blocks.map((b) => {
    if (!isObject(b)) return "";
    if (b.type === "text" && typeof b.text === "string") return b.text;
    const uri = typeof b.uri === "string" ? b.uri : isObject(b.resource) && typeof b.resource.uri === "string" ? b.resource.uri : null;
    return `[${typeof b.type === "string" ? b.type : "content"}${uri ? `: ${uri}` : ""}]`;
  });
  const text = parts.join("\n");
  const content = text.length > MAX_PROMPT_TEXT ? `${text.slice(0, MAX_PROMPT_TEXT)}…` : text;
  return { type: "prompt", content, timestamp: new Date(prompt.at).toISOString() };
}

/**
 * The answer to `session/attach` (the PR's shape). `history`, omitted for `none`: the prompts the
 * replay carried (`full`, or after the message for `after_message`), then the requests waiting —
 * only those for `pending_only` (the PR: "only items with status pending"). `historyPolicy` is what was
 * served: `full` where an `after_message`'s message was not found.
 */
export function attachResult(args: {
  sessionId: string;
  as: AttachedAs;
  role: AttachRole;
  historyPolicy: HistoryPolicy;
  others: PeerView[];
  prompts?: LoggedPrompt[];
  pending: { toolCallId: string | null }[];
  meta: Record<string, unknown>;
}): Record<string, unknown> {
  const replayed = args.historyPolicy === "full" || args.historyPolicy === "after_message";
  const prompts = replayed ? (args.prompts ?? []).slice(-MAX_HISTORY_PROMPTS).map(promptHistoryItem) : [];
  const pending = args.pending.map((p) => ({ type: "permission_request", toolCallId: p.toolCallId, status: "pending" }));
  return {
    sessionId: args.sessionId,
    clientId: args.as.clientId,
    role: args.role,
    historyPolicy: args.historyPolicy,
    ...(args.historyPolicy === "none" ? {} : { history: [...prompts, ...pending] }),
    connectedClients: args.others,
    ...(Object.keys(args.meta).length > 0 ? { _meta: args.meta } : {}),
  };
}

/** The answer to `session/detach`. */
export function detachResult(sessionId: string): Record<string, unknown> {
  return { sessionId, status: "detached" };
}

function sessionUpdate(sessionId: string, kind: string, fields: Record<string, unknown>): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId, update: { sessionUpdate: kind, type: kind, ...fields } },
  });
}

/**
 * The PR's `permission_resolved`, from the gateway's `_acp_gateway/permission_resolved` params (the
 * machine's one resolution). `chosenOptionId` is null for an outcome that chose none (cancelled).
 */
function permissionResolvedUpdate(resolved: Record<string, unknown>, resolvedBy: PeerView): string | undefined {
  if (typeof resolved.sessionId !== "string") return undefined;
  const outcome = isObject(resolved.outcome) ? resolved.outcome.outcome : undefined;
  const selected = isObject(resolved.outcome) && outcome === "selected" ? resolved.outcome.optionId : undefined;
  const chosen = typeof resolved.chosenOptionId === "string" ? resolved.chosenOptionId : selected;
  return sessionUpdate(resolved.sessionId, "permission_resolved", {
    toolCallId: resolved.toolCallId ?? null,
    chosenOptionId: typeof chosen === "string" ? chosen : null,
    ...(typeof outcome === "string" ? { outcome } : {}),
    resolvedBy,
  });
}

/**
 * The PR's `permission_resolved` beside the gateway's own `_acp_gateway/permission_resolved`, from its
 * params as the permission machine hands them (its `clients.send` port, never read from the frame).
 */
export function resolvedInPrShape(
  resolved: Record<string, unknown>,
  clientOf: (connectionId: string) => PeerView | undefined,
): string | undefined {
  return permissionResolvedUpdate(resolved, resolverOf(resolved.decidedBy, clientOf));
}

/** Who resolved, from the gateway's `decidedBy`: a person's client (looked up by its connection), a rule, a link, the gateway. */
function resolverOf(decidedBy: unknown, clientOf: (connectionId: string) => PeerView | undefined): PeerView {
  if (!isObject(decidedBy)) return { name: "acp-gateway" };
  if (decidedBy.type === "person" && typeof decidedBy.connectionId === "string") {
    const user = typeof decidedBy.user === "string" ? decidedBy.user : null;
    return clientOf(decidedBy.connectionId) ?? { name: user ?? "client", user };
  }
  if (decidedBy.type === "rule" && typeof decidedBy.ruleId === "string")
    return { clientId: `rule:${decidedBy.ruleId}`, name: "acp-gateway rule" };
  if (decidedBy.type === "link")
    return { name: "acp-gateway approval link", ...(typeof decidedBy.user === "string" ? { user: decidedBy.user } : {}) };
  return { name: "acp-gateway", ...(typeof decidedBy.type === "string" ? { clientId: `gateway:${decidedBy.type}` } : {}) };
}

/**
 * The PR's `prompt_received`: a client's prompt, as it sent it, to the other clients that came by
 * attach, before the agent streams. No `messageId`: the Message ID RFD has the agent make it.
 */
export function promptReceivedUpdate(sessionId: string, prompt: unknown, sentBy: PeerView): string {
  return sessionUpdate(sessionId, "prompt_received", { prompt: Array.isArray(prompt) ? prompt : [], sentBy });
}

/** How a turn ended, as `turn_complete` tells it (decision 0060). */
export type TurnEnd =
  /** The agent answered the prompt: its result (none for an error answer). */
  | { by: "agent"; result: unknown }
  /** The gateway ended the turn (`_acp_gateway/turn_ended`): its reason. */
  | { by: "gateway"; reason: string };

/**
 * The PR's `turn_complete`. `stopReason` mirrors the prompt's answer; a turn that ended without one
 * (the agent answered with an error, or the gateway ended it: `reason`, as `_acp_gateway/turn_ended`
 * says) has `stopReason: null`. `messageId`: the agent's last message of the turn, when it named it.
 */
export function turnCompleteUpdate(sessionId: string, end: TurnEnd, messageId: string | undefined): string {
  const id = messageId !== undefined ? { messageId } : {};
  if (end.by === "gateway") return sessionUpdate(sessionId, "turn_complete", { stopReason: null, reason: end.reason, ...id });
  const stopReason = isObject(end.result) && typeof end.result.stopReason === "string" ? end.result.stopReason : null;
  return sessionUpdate(sessionId, "turn_complete", { stopReason, ...id });
}

/** The PR's `client_disconnected`, for the clients that stay. */
export function clientDisconnectedUpdate(sessionId: string, client: PeerView, at: number): string {
  return sessionUpdate(sessionId, "client_disconnected", { client, timestamp: new Date(at).toISOString() });
}

/** A session-scoped request after `session/detach`: the client left it, and says so by attaching again. */
export function detachedError(sessionId: string): RpcError {
  return new RpcError(
    ErrorCode.resourceNotFound,
    `This connection detached from session ${sessionId}; session/attach (or session/load) it to use it again`,
    { sessionId, detached: true },
  );
}
