// A client's answer to its copy of a permission request: judged against the options offered (never
// approval when invalid: TC-10, TC-17), then authorised as it commits (decision 0028: the person's
// role, whose turn it is, four eyes — protocol/people/answering.ts), and a person's *_always choice
// remembered as a tenant rule when they may make rules and the operation may be covered by one.
// A refused answer is audited (who, role, why) and the request stays pending for the others.

import { RpcError, errorResponse } from "../../protocol/jsonrpc";
import { type PermissionOption, judgeAnswer } from "../../protocol/permissions";
import { sendRewritable } from "./clients";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { DecidedBy } from "./contract";
import type { RulesLink } from "./rules-link";
import type { SessionInfo } from "./session-info";
import { type PendingRequest, type SessionStore, copyId } from "./store";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { sessionLog } from "./session-log";
import { ErrorCode } from "../../core/rpc-errors";
import type { AuditEntry } from "../../db/queries/audit";
import { authorise } from "../../protocol/people/answering";
import { answererOf, factsOf } from "./answer-authority";

type PersonDecidedBy = Extract<DecidedBy, { type: "person" }>;

/** How many times a client that answered a permission request wrongly is asked again. */
const MAX_RESENDS = 3;

/**
 * How often each pending request was re-sent to this client after a refused answer. Kept in the
 * socket's attachment (it survives hibernation and goes with the socket), not in a table.
 */
type WithResends = ClientAttachment & { resends?: Record<string, number> };

/** What judging an answer needs of the permission lifecycle (permission-lifecycle.ts passes itself and its ports). */
export interface AnswerContext {
  store: SessionStore;
  rules: RulesLink;
  info: SessionInfo;
  ctx: DurableObjectState;
  resolve(pending: PendingRequest, result: unknown, by: DecidedBy, chosen?: PermissionOption): void;
  sendCopy(ws: WebSocket, pending: PendingRequest): void;
  /** The audit entry of an outcome of the request (permission-audit.ts). */
  audit(pending: PendingRequest, outcome: unknown, by: DecidedBy, chosen?: PermissionOption): AuditEntry | null;
  /** An audit entry was written to the log: it goes to D1 with the next flush. */
  audited(): void;
  /** Tells everyone when nobody attached can approve the request any more (four eyes). */
  checkApprovable(pending: PendingRequest): void;
}

export function answerPermission(
  d: AnswerContext,
  ws: WebSocket,
  client: ClientAttachment,
  permId: number,
  response: { result?: unknown; error?: unknown },
): void {
  const pending = d.store.pendingById(permId);
  // Answered already (the first answer won), withdrawn, or never asked: nothing to do.
  if (!pending?.asking) return;
  // The client declined to answer (closed its dialog, or cancelled its copy): others still may.
  if (response.error !== undefined) return;
  const judged = judgeAnswer(response.result, pending.options);
  if (!judged.ok) {
    // Never approval (TC-10, TC-17): tell this client, keep the request pending, and ask it again.
    const requestId = copyId(permId);
    const error = RpcError.invalidParams(
      `Your answer to permission request ${requestId} was refused: ${judged.reason}. The request is still pending.`,
      { requestId, sessionId: d.store.meta?.sessionId, toolCallId: pending.toolCallId },
    );
    sendRewritable(ws, JSON.stringify(errorResponse(null, error)));
    if (countResend(ws, d.store, permId)) d.sendCopy(ws, pending);
    return;
  }
  const answerer = answererOf(client);
  const by: PersonDecidedBy = {
    type: "person",
    connectionId: client.connId,
    user: client.user,
    keyId: client.keyId,
    ...(client.person ? { person: client.person } : {}),
    role: answerer.role,
    ...(pending.fourEyes ? { policy: `four_eyes:${pending.fourEyes.require}` } : {}),
    ...(pending.approvals && pending.approvals.length > 0 ? { approvedBefore: pending.approvals } : {}),
  };
  const outcome = judged.outcome;
  const chosen = outcome.outcome === "selected" ? outcome.option : null;
  // Authorised as it commits: the role, the turn and the policy as they are now, not as when the copy was sent.
  const authorised = authorise(answerer, factsOf(d.store, pending), chosen);
  if (!authorised.ok) return refuse(d, ws, pending, by, chosen, authorised.reason, outcome.outcome);
  if (!authorised.commit) {
    if (chosen) recordFirstApproval(d, ws, pending, by, answerer.who, chosen);
    return;
  }
  if (chosen && authorised.once !== null) {
    // "Always" from someone who may not make rules, or for an operation no rule may cover: applied once, every client told why.
    d.info.notice(GATEWAY_NOTIFICATIONS.ruleNotCreated, {
      sessionId: d.store.meta?.sessionId,
      toolCallId: pending.toolCallId,
      reason: authorised.once,
      chosenBy: client.user,
    });
    const forwarded = onceOf(chosen.kind, pending.options);
    if (forwarded) {
      const result = { ...(response.result as object), outcome: { outcome: "selected", optionId: forwarded.optionId } };
      d.resolve(pending, result, by, chosen);
      return;
    }
    // Only "always" was offered: it is what the agent gets, but the gateway stores nothing.
    d.resolve(pending, response.result, by);
    return;
  }
  if (outcome.outcome === "selected" && (outcome.option.kind === "allow_always" || outcome.option.kind === "reject_always")) {
    // The gateway is the single authority for what the tenant remembers: it stores the rule and,
    // unless the tenant says otherwise, tells the agent only "once", so a revoked rule really stops.
    remember(d, pending, outcome.option, client);
    const forwarded = d.store.meta?.relayAlwaysAsMade ? undefined : onceOf(outcome.option.kind, pending.options);
    if (forwarded) {
      const result = { ...(response.result as object), outcome: { outcome: "selected", optionId: forwarded.optionId } };
      d.resolve(pending, result, by, outcome.option);
      return;
    }
  }
  d.resolve(pending, response.result, by);
}

/**
 * The person may not choose this (their role, another's turn, four eyes): they get an error naming
 * why (-32003), a fresh copy (its `answerable` says what they may choose), and the refusal is audited;
 * the request stays pending for everyone else.
 */
function refuse(
  d: AnswerContext,
  ws: WebSocket,
  pending: PendingRequest,
  by: PersonDecidedBy,
  chosen: PermissionOption | null,
  reason: string,
  outcome: string,
): void {
  const requestId = copyId(pending.permId);
  const error = new RpcError(
    ErrorCode.notPermitted,
    `Your answer to permission request ${requestId} was refused: ${reason} The request is still pending.`,
    {
      requestId,
      sessionId: d.store.meta?.sessionId,
      toolCallId: pending.toolCallId,
      reason,
    },
  );
  sendRewritable(ws, JSON.stringify(errorResponse(null, error)));
  const entry = d.audit(pending, { outcome }, by, chosen ?? undefined);
  if (entry) {
    d.store.appendAudited("refusal", JSON.stringify({ permId: pending.permId, decidedBy: by, reason }), {
      ...entry,
      outcome: "refused",
      reason,
    });
    d.audited();
  }
  if (countResend(ws, d.store, pending.permId)) d.sendCopy(ws, pending);
}

/**
 * The first of two approvals (four eyes, two_approvals): recorded with the request, audited, every
 * client told (`_acp_gateway/approval_recorded`); the approver gets a fresh copy that says theirs is
 * in and the second must be someone else's. Nothing reaches the agent yet.
 */
function recordFirstApproval(
  d: AnswerContext,
  ws: WebSocket,
  pending: PendingRequest,
  by: PersonDecidedBy,
  who: string,
  chosen: PermissionOption,
): void {
  d.store.recordApproval(pending.permId, {
    who,
    user: by.user,
    role: by.role ?? "approver",
    connectionId: by.connectionId,
    at: Date.now(),
  });
  const entry = d.audit(pending, { outcome: "selected", optionId: chosen.optionId }, by, chosen);
  if (entry) {
    const reason = "the first of two approvals: recorded, waiting for a second person";
    d.store.appendAudited("refusal", JSON.stringify({ permId: pending.permId, decidedBy: by, reason }), {
      ...entry,
      outcome: "approval_recorded",
      reason,
    });
    d.audited();
  }
  d.info.notice(GATEWAY_NOTIFICATIONS.approvalRecorded, {
    sessionId: d.store.meta?.sessionId,
    toolCallId: pending.toolCallId,
    approvedBy: { user: by.user, role: by.role, ...(by.person ? { person: by.person } : {}) },
    optionId: chosen.optionId,
    needed: 2,
    recorded: 1,
  });
  const updated = d.store.pendingById(pending.permId);
  if (updated) {
    d.sendCopy(ws, updated);
    d.checkApprovable(updated);
  }
}

/** Whether this client may be asked again (at most MAX_RESENDS times per request); counts it. */
function countResend(ws: WebSocket, store: SessionStore, permId: number): boolean {
  const attachment = ws.deserializeAttachment() as WithResends | undefined;
  if (!attachment) return false;
  const resends = Object.fromEntries(Object.entries(attachment.resends ?? {}).filter(([id]) => store.isPending(Number(id))));
  const sent = resends[permId] ?? 0;
  if (sent >= MAX_RESENDS) return false;
  ws.serializeAttachment({ ...attachment, resends: { ...resends, [permId]: sent + 1 } });
  return true;
}

/** Stores a person's *_always choice as a tenant rule; every client learns the rule, or why there is none. */
function remember(d: AnswerContext, pending: PendingRequest, chosen: PermissionOption, client: ClientAttachment): void {
  const sessionId = d.store.meta?.sessionId;
  const remembered = d.rules
    .remember(pending, {
      user: client.user,
      chosen: { optionId: chosen.optionId, name: chosen.name, kind: chosen.kind },
      keyId: client.keyId,
      toolCallId: pending.toolCallId,
    })
    .then((rule) => {
      if (!rule) return;
      // Nothing remembered: the person is told why, and will be asked again next time.
      if ("reason" in rule)
        return d.info.notice(GATEWAY_NOTIFICATIONS.ruleNotCreated, { sessionId, toolCallId: pending.toolCallId, reason: rule.reason });
      d.info.notice(GATEWAY_NOTIFICATIONS.ruleCreated, { sessionId, toolCallId: pending.toolCallId, rule, createdBy: client.user });
    })
    .catch((error: unknown) =>
      sessionLog(d.store).error(
        "session.remember_failed",
        "remembering the decision failed",
        { toolCallId: pending.toolCallId ?? undefined },
        error,
      ),
    );
  d.ctx.waitUntil(remembered);
}

/** The *_once option of the same decision as an *_always one, if the request offered it. */
function onceOf(kind: string, options: PermissionOption[]): PermissionOption | undefined {
  const once = kind === "allow_always" ? "allow_once" : "reject_once";
  return options.find((o) => o.kind === once);
}
