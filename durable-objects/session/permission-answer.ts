// A client's answer to its copy of a permission request: judged against the options offered (never
// approval when invalid: TC-10, TC-17), and a person's *_always choice remembered as a tenant rule.

import { RpcError, errorResponse } from "../../protocol/jsonrpc";
import { GATEWAY_NOTIFICATIONS } from "../../protocol/methods";
import { type PermissionOption, judgeAnswer } from "../../protocol/permissions";
import { RULE_NOT_CREATED } from "../rules/types";
import { sendRewritable } from "./clients";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { DecidedBy } from "./pending-request";
import type { LifecycleDeps, PermissionLifecycle } from "./permission-lifecycle";
import type { PendingRequest } from "./store";

/** How many times a client that answered a permission request wrongly is asked again. */
const MAX_RESENDS = 3;

/** The copy a client answered: its id, and how many times it was re-sent after a refused answer. */
export interface AnsweredCopy {
  outId: number;
  permId: number;
  resends: number;
}

export function answerPermission(
  life: PermissionLifecycle,
  d: LifecycleDeps,
  ws: WebSocket,
  client: ClientAttachment,
  copy: AnsweredCopy,
  response: { result?: unknown; error?: unknown },
): void {
  const pending = d.store.pendingById(copy.permId);
  if (!pending) return;
  if (response.error !== undefined) {
    // The client declined to answer (closed its dialog, or cancelled its copy): others still may.
    d.store.removeCopy(copy.outId);
    return;
  }
  const judged = judgeAnswer(response.result, pending.options);
  if (!judged.ok) {
    // Never approval (TC-10, TC-17): tell this client, keep the request pending, and ask it again.
    d.store.removeCopy(copy.outId);
    const error = RpcError.invalidParams(
      `Your answer to permission request ${copy.outId} was refused: ${judged.reason}. The request is still pending.`,
      { requestId: copy.outId, sessionId: d.store.meta?.sessionId, toolCallId: pending.toolCallId },
    );
    sendRewritable(ws, JSON.stringify(errorResponse(null, error)));
    if (copy.resends < MAX_RESENDS) life.sendCopy(ws, client.connId, pending, copy.resends + 1);
    return;
  }
  const by: DecidedBy = { type: "person", connectionId: client.connId, user: client.user, keyId: client.keyId };
  const outcome = judged.outcome;
  if (outcome.outcome === "selected" && (outcome.option.kind === "allow_always" || outcome.option.kind === "reject_always")) {
    // The gateway is the single authority for what the tenant remembers: it stores the rule and,
    // unless the tenant says otherwise, tells the agent only "once", so a revoked rule really stops.
    remember(life, d, pending, outcome.option, client);
    const forwarded = d.store.meta?.relayAlwaysAsMade ? undefined : onceOf(outcome.option.kind, pending.options);
    if (forwarded) {
      const result = { ...(response.result as object), outcome: { outcome: "selected", optionId: forwarded.optionId } };
      life.resolve(pending, result, by, outcome.option);
      return;
    }
  }
  life.resolve(pending, response.result, by);
}

/** Stores a person's *_always choice as a tenant rule; every client learns the rule, or why there is none. */
function remember(
  life: PermissionLifecycle,
  d: LifecycleDeps,
  pending: PendingRequest,
  chosen: PermissionOption,
  client: ClientAttachment,
): void {
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
      if ("reason" in rule) return d.info.notice(RULE_NOT_CREATED, { sessionId, toolCallId: pending.toolCallId, reason: rule.reason });
      d.info.notice(GATEWAY_NOTIFICATIONS.ruleCreated, { sessionId, toolCallId: pending.toolCallId, rule, createdBy: client.user });
    })
    .catch((error: unknown) => console.error("session: remembering the decision failed", error));
  d.ctx.waitUntil(remembered);
}

/** The *_once option of the same decision as an *_always one, if the request offered it. */
function onceOf(kind: string, options: PermissionOption[]): PermissionOption | undefined {
  const once = kind === "allow_always" ? "allow_once" : "reject_once";
  return options.find((o) => o.kind === once);
}
