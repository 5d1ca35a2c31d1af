// ACP `notice` session updates (schema 1.23's `Notice`, RFD "Session Notices", decision 0063) for what
// the gateway does on its own: a request answered by a rule, a first approval waiting for a second
// person, an answer refused for who gave it, a mode change held for four eyes and its decision, and
// the rest of its notifications a person can act on (a rule made or not, a turn ended, a session held,
// a limit reached…: `SAID`). They go
// beside the gateway's own `_acp_gateway/*` notifications, which stay, and only to clients that
// advertised `clientCapabilities.session.notices` (the schema: "Agents MUST only send notices when the
// Client advertised the `session.notices` Client capability"). A notice is live, never history: not
// logged, not replayed. Pure: each builder takes the facts the gateway already sent as its own
// notification or frame, and returns the notice; every string a person reads is display-safe.

import { GATEWAY_NOTIFICATIONS } from "../core/gateway-notifications";
import { displayString } from "./display-text";
import { isObject } from "./jsonrpc";
import { CLIENT_METHODS } from "./methods";
import { type SessionHold, heldMessage } from "./unasked-runs";

/** The schema's severities; it is open (`_`-prefixed custom ones), the gateway uses these three. */
type NoticeSeverity = "info" | "warning" | "error";

/** The schema's `Notice`: a non-empty title that stands alone, an optional description. */
export interface Notice {
  severity: NoticeSeverity;
  title: string;
  description?: string;
}

/** The `session/update` notification carrying `notice` in session `sessionId`. */
export function noticeFrame(sessionId: string, notice: Notice): string {
  const update = {
    sessionUpdate: "notice",
    severity: notice.severity,
    title: notice.title.length > 0 ? notice.title : "Notice",
    ...(notice.description !== undefined ? { description: notice.description } : {}),
  };
  return JSON.stringify({ jsonrpc: "2.0", method: CLIENT_METHODS.sessionUpdate, params: { sessionId, update } });
}

/** A value as a person reads it: a string shown safely (cut past 200 characters), anything else named by its type. */
function shown(value: unknown, fallback: string): string {
  if (typeof value !== "string" || value.length === 0) return fallback;
  return displayString(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}

const toolCall = (toolCallId: unknown) => (typeof toolCallId === "string" ? `tool call ${shown(toolCallId, "")}` : "a tool call");

/**
 * A rule answered the agent's request (the `_acp_gateway/permission_resolved` params, `decidedBy` a
 * rule): which rule, by its description and id, and what it chose. Nobody was asked.
 */
export function ruleAnsweredNotice(resolved: Record<string, unknown>): Notice | undefined {
  const by = resolved.decidedBy;
  if (!isObject(by) || by.type !== "rule") return undefined;
  const outcome = isObject(resolved.outcome) ? resolved.outcome : {};
  const chose =
    outcome.outcome === "selected" ? `chose option "${shown(outcome.optionId, "?")}"` : `answered "${shown(outcome.outcome, "?")}"`;
  const rule = typeof by.description === "string" && by.description.length > 0 ? `"${shown(by.description, "")}" ` : "";
  return {
    severity: "info",
    title: "Answered by a rule",
    description: `The tenant's rule ${rule}(${shown(by.ruleId, "no id")}) answered the agent's permission request for ${toolCall(resolved.toolCallId)}: it ${chose}. Nobody was asked.`,
  };
}

/** A first approval of two was recorded (`_acp_gateway/approval_recorded`): the request waits for a second person. */
export function approvalRecordedNotice(params: Record<string, unknown>): Notice {
  const who = isObject(params.approvedBy) ? shown(params.approvedBy.user, "someone") : "someone";
  return {
    severity: "info",
    title: "Waiting for a second approval",
    description: `${who} approved ${toolCall(params.toolCallId)}. Four eyes: it reaches the agent only when a second person approves it too.`,
  };
}

/** A client's answer to a permission request was refused for who gave it (-32003): to that client, with the reason. */
export function answerRefusedNotice(message: string): Notice {
  return { severity: "warning", title: "Your answer was refused", description: displayString(message) };
}

/** A governed mode change is held for a second person (`_acp_gateway/mode_change_waiting`). */
export function modeChangeWaitingNotice(params: Record<string, unknown>): Notice {
  const what = `${shown(params.setting, "mode")} → ${shown(params.value, "?")}`;
  return {
    severity: "info",
    title: "Mode change waiting for a second person",
    description:
      typeof params.message === "string"
        ? displayString(params.message)
        : `${shown(params.proposedBy, "someone")} proposes ${what}; four eyes: a second approver decides.`,
  };
}

/** A held mode change was decided (`_acp_gateway/mode_change_decided`): approved, refused, withdrawn or expired; by whom. */
export function modeChangeDecidedNotice(params: Record<string, unknown>): Notice {
  const what = `${shown(params.setting, "mode")} → ${shown(params.value, "?")}`;
  const by = typeof params.by === "string" ? ` by ${shown(params.by, "")}` : "";
  if (params.outcome === "approved")
    return { severity: "info", title: "Mode change approved", description: `${what} was approved${by}; it goes to the agent.` };
  if (params.outcome === "refused")
    return { severity: "warning", title: "Mode change refused", description: `${what} was refused${by}; the agent was not asked.` };
  if (params.outcome === "withdrawn")
    return { severity: "warning", title: "Mode change withdrawn", description: `${what} was withdrawn${by}; the agent was not asked.` };
  return {
    severity: "warning",
    title: "Mode change expired",
    description: `${what} expired before a second person decided; the agent was not asked.`,
  };
}

/** A person's *_always answer became a tenant rule (`_acp_gateway/rule_created`): who, which rule, what it will do unasked. */
export function ruleCreatedNotice(params: Record<string, unknown>): Notice {
  const rule = isObject(params.rule) ? params.rule : {};
  const who = shown(params.createdBy, "Someone");
  const does = rule.decision === "reject" ? "reject" : "allow";
  return {
    severity: "info",
    title: "A rule was remembered",
    description: `${who}'s answer to ${toolCall(params.toolCallId)} became the tenant's rule "${shown(rule.description, "?")}" (${shown(rule.id, "no id")}): from now on it will ${does} matching requests without asking anyone. An admin can revoke it.`,
  };
}

/**
 * The rest of the gateway's notifications a person can act on, each carrying the sentence it already
 * says (`message`, or `reason` where that is its sentence, decision 0063): the notice's severity, its
 * title, and where that sentence is. `session_held` is an error: the session takes no prompt until a
 * person resumes it.
 */
const SAID: Partial<Record<string, { severity: NoticeSeverity; title: string; text: (p: Record<string, unknown>) => unknown }>> = {
  [GATEWAY_NOTIFICATIONS.fourEyesUnsatisfiable]: {
    severity: "warning",
    title: "Nobody here can give the second approval",
    text: (p) => p.reason,
  },
  [GATEWAY_NOTIFICATIONS.rulesUnavailable]: { severity: "warning", title: "Rules unavailable: people are asked", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.operationChanged]: { severity: "warning", title: "A request changed and is asked again", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.ruleNotCreated]: { severity: "info", title: "Not remembered as a rule", text: (p) => p.reason },
  [GATEWAY_NOTIFICATIONS.turnEnded]: { severity: "warning", title: "The gateway ended the turn", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.ranUnasked]: { severity: "warning", title: "The agent ran a tool call without asking", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.unseenChanges]: {
    severity: "warning",
    title: "This request may read unseen changes",
    text: (p) => (isObject(p.unseen) ? p.unseen.message : undefined),
  },
  [GATEWAY_NOTIFICATIONS.sessionHeld]: { severity: "error", title: "Session held: it takes no prompts", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.sessionResumed]: { severity: "info", title: "Session resumed", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.agentModeChanged]: { severity: "warning", title: "The agent switched its mode by itself", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.limitReached]: { severity: "warning", title: "A limit was reached", text: (p) => p.message },
  [GATEWAY_NOTIFICATIONS.sessionDeleted]: { severity: "warning", title: "Session deleted", text: (p) => p.message },
};

/** The notice for a notification in SAID: its sentence shown safely (cut past 2,000 characters), none when it has none. */
function saidNotice(method: string, params: Record<string, unknown>): Notice | undefined {
  const said = SAID[method];
  if (!said) return undefined;
  const text = said.text(params);
  if (typeof text !== "string" || text.length === 0) return { severity: said.severity, title: said.title };
  return { severity: said.severity, title: said.title, description: displayString(text.length > 2000 ? `${text.slice(0, 2000)}…` : text) };
}

/**
 * The notice beside a gateway notification sent to every client, or undefined for one that has none
 * (decision 0063 says why each is left out: a request answered after cancel builds its own,
 * answered-by-gateway.ts; `history_compacted` describes one client's replay to its code; a resolution
 * by a person is no doing of the gateway's, and one by a rule has its notice handed beside the machine's
 * frame, permission-machine.ts `noticeFor`).
 */
export function noticeOfNotification(method: string, params: object): string | undefined {
  const p = params as Record<string, unknown>;
  const sessionId = typeof p.sessionId === "string" ? p.sessionId : undefined;
  if (sessionId === undefined) return undefined;
  switch (method) {
    case GATEWAY_NOTIFICATIONS.approvalRecorded:
      return noticeFrame(sessionId, approvalRecordedNotice(p));
    case GATEWAY_NOTIFICATIONS.modeChangeWaiting:
      return noticeFrame(sessionId, modeChangeWaitingNotice(p));
    case GATEWAY_NOTIFICATIONS.modeChangeDecided:
      return noticeFrame(sessionId, modeChangeDecidedNotice(p));
    case GATEWAY_NOTIFICATIONS.ruleCreated:
      return noticeFrame(sessionId, ruleCreatedNotice(p));
    default: {
      const notice = saidNotice(method, p);
      return notice ? noticeFrame(sessionId, notice) : undefined;
    }
  }
}

/**
 * What a client attaching to a held session is told where it advertised notices: a new live notice of
 * a condition still true (the RFD allows it after reconnecting), as for a held mode change; the
 * `session_held` it may see in the replay is history, and a client asking for none gets no replay.
 */
export function heldNoticeOnAttach(sessionId: string, hold: SessionHold): string | undefined {
  return noticeOfNotification(GATEWAY_NOTIFICATIONS.sessionHeld, { sessionId, hold, message: heldMessage(sessionId, hold) });
}
