// One session as the console shows it, built from what the gateway sends: messages, thoughts, the
// plan, tool calls (merged by id), permission requests and notices. Pure functions returning new
// objects, so the view re-renders; no DOM here.

import { type JsonObject, isObject } from "./acp";
import { type Answerable, answerableOf } from "./answerable";
import {
  type HeldModeChange,
  decisionSent,
  heldModeChangeOf,
  modeChangeDecided as decidedCard,
  replayedModeChange,
  stillWaiting,
} from "./mode-changes";
import { operationLine } from "./operation";
import { type UnseenShown, unseenShownOf } from "./unseen-diffs";

type Item =
  /** `by`: who prompted, as the gateway names them; `keyId`: their key (a person's derived one), to tell this person's own prompts. */
  | { type: "message"; role: "user" | "agent"; text: string; by?: string | null; keyId?: string | null }
  | { type: "thought"; text: string }
  | { type: "tool"; toolCallId: string }
  | { type: "permission"; key: string }
  | { type: "mode_change"; proposalId: string }
  | { type: "notice"; text: string; tone: "info" | "warn" };

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: string;
}

export interface Permission {
  key: string;
  /** The gateway's id of this copy of the request: what the answer carries. */
  requestId: number | string;
  toolCall: JsonObject;
  options: PermissionOption[];
  /** Which options this person may choose, when the gateway says (null: all). */
  answerable: Answerable | null;
  /** What the gateway says of the operation: why it is asked of a person, what it replaces (decision 0040). */
  note?: string;
  /** The unseen changes it was asked with (decision 0046): the card shows each one's diff or where it is (decision 0062). */
  unseen?: UnseenShown;
  state: "open" | "sent" | "withdrawn" | "resolved";
  /** Set once resolved by the gateway's word (`_acp_gateway/permission_resolved`, live or replayed): who or what answered, and what. */
  decided?: Decided;
  /** Set once resolved without the gateway's word (the turn ended first): why, in words. */
  resolution?: string;
}

/** A resolution as the gateway told it: who or what decided, the option in words, the person's reason. */
export interface Decided {
  by: DecidedBy;
  what: string;
  reason: string | null;
}

/** Who this page is signed in as, to say "you": the key id the gateway marks prompts and answers with (GET /v1/me), and this connection. */
export interface Me {
  keyId: string | null;
  connectionId: string | null;
}

export interface PlanEntry {
  content: string;
  status: string;
  priority: string;
}

export interface Transcript {
  items: Item[];
  tools: Record<string, JsonObject>;
  permissions: Record<string, Permission>;
  /** Mode changes held for a second person (decision 0061), by proposal id. */
  modeChanges: Record<string, HeldModeChange>;
  plan: PlanEntry[] | null;
}

export const EMPTY: Transcript = { items: [], tools: {}, permissions: {}, modeChanges: {}, plan: null };

/** Who resolved a permission request, as the gateway's `decidedBy` says it. */
interface DecidedBy {
  type: string;
  user?: string | null;
  keyId?: string;
  connectionId?: string;
  description?: string;
  /** A person's (or an approval link's) reason for the answer; why the agent was disconnected. */
  reason?: string;
  target?: string;
}

export function userMessage(t: Transcript, text: string, by: string | null): Transcript {
  return { ...t, items: [...t.items, { type: "message", role: "user", text, by }] };
}

export function notice(t: Transcript, text: string, tone: "info" | "warn" = "info"): Transcript {
  return { ...t, items: [...t.items, { type: "notice", text, tone }] };
}

export function applyUpdate(t: Transcript, update: JsonObject, meta: JsonObject | undefined): Transcript {
  switch (update.sessionUpdate) {
    case "user_message_chunk":
    case "agent_message_chunk": {
      const role = update.sessionUpdate === "user_message_chunk" ? "user" : "agent";
      const by = role === "user" ? gatewayMark(meta, "user") : undefined;
      return appendText(t, role, textOf(update.content), by, role === "user" ? gatewayMark(meta, "keyId") : undefined);
    }
    case "agent_thought_chunk":
      return appendThought(t, textOf(update.content));
    case "plan":
      return { ...t, plan: Array.isArray(update.entries) ? update.entries.filter(isObject).map(planEntry) : [] };
    case "tool_call":
    case "tool_call_update":
      return typeof update.toolCallId === "string" ? mergeTool(t, update.toolCallId, update) : t;
    default:
      return t;
  }
}

function appendText(t: Transcript, role: "user" | "agent", text: string, by: string | null | undefined, keyId?: string | null): Transcript {
  const last = t.items.at(-1);
  if (last?.type === "message" && last.role === role) {
    return { ...t, items: [...t.items.slice(0, -1), { ...last, text: last.text + text }] };
  }
  const marks = { ...(by !== undefined ? { by } : {}), ...(keyId !== undefined ? { keyId } : {}) };
  return { ...t, items: [...t.items, { type: "message", role, text, ...marks }] };
}

/** Who a user message is labelled with: "You" for this person's own (sent here, or marked with their key), else who the gateway says. */
export function authorOf(item: { by?: string | null; keyId?: string | null }, me: Me): string {
  if (item.by === undefined || item.by === null) return item.keyId && item.keyId !== me.keyId ? "someone" : "You";
  return item.keyId && me.keyId && item.keyId === me.keyId ? "You" : item.by;
}

function appendThought(t: Transcript, text: string): Transcript {
  const last = t.items.at(-1);
  if (last?.type === "thought") return { ...t, items: [...t.items.slice(0, -1), { ...last, text: last.text + text }] };
  return { ...t, items: [...t.items, { type: "thought", text }] };
}

function mergeTool(t: Transcript, id: string, patch: JsonObject): Transcript {
  const previous = t.tools[id];
  const merged: JsonObject = { ...(previous ?? { toolCallId: id, status: "pending" }) };
  for (const [key, value] of Object.entries(patch))
    if (key !== "sessionUpdate" && value !== null && value !== undefined) merged[key] = value;
  const items = previous ? t.items : [...t.items, { type: "tool" as const, toolCallId: id }];
  return { ...t, items, tools: { ...t.tools, [id]: merged } };
}

export function permissionRequested(t: Transcript, requestId: number | string, params: JsonObject): Transcript {
  const toolCall = isObject(params.toolCall) ? params.toolCall : {};
  const id = typeof toolCall.toolCallId === "string" ? toolCall.toolCallId : null;
  // The gateway froze the operation when it was asked and sends it (decision 0040): the card shows
  // exactly that, never the tool-call stream's later state. From a gateway that does not: the call as
  // the stream knows it, completed by what the request says.
  const gateway = isObject(params._meta) && isObject(params._meta.acpGateway) ? params._meta.acpGateway : {};
  const operation = isObject(gateway.operation) ? gateway.operation : null;
  const frozen = operation !== null;
  const known = id && !frozen ? t.tools[id] : undefined;
  const key = id ? `tool:${id}` : `request:${requestId}`;
  const options = Array.isArray(params.options)
    ? params.options
        .filter(isObject)
        .map((o) => ({ optionId: String(o.optionId), name: String(o.name ?? o.optionId), kind: String(o.kind ?? "") }))
    : [];
  const unseen = unseenShownOf(gateway.unseen);
  const permission: Permission = {
    key,
    requestId,
    toolCall: { ...(known ?? {}), ...toolCall },
    options,
    answerable: answerableOf(params),
    state: "open",
    ...noteOf(operation ?? {}, isObject(gateway.unseen) ? gateway.unseen : null),
    ...(unseen ? { unseen } : {}),
  };
  const items = t.permissions[key] ? t.items : [...t.items, { type: "permission" as const, key }];
  return { ...t, items, permissions: { ...t.permissions, [key]: permission } };
}

/**
 * The gateway's words on a frozen operation: asked again after the agent changed it, without raw input,
 * or asked although a rule matched because the agent changed files nobody saw (decision 0046).
 */
function noteOf(operation: JsonObject, unseen: JsonObject | null): { note?: string } {
  const notes: string[] = [];
  if (unseen && typeof unseen.message === "string") notes.push(unseen.message);
  if (Array.isArray(operation.changed) && operation.changed.length > 0)
    notes.push(`The agent changed this request (${operation.changed.map(String).join(", ")}) after it was asked; this is the new one.`);
  if (typeof operation.rawInputMissing === "string") notes.push(`Always asked: ${operation.rawInputMissing}.`);
  // Decision 0068: a command that may keep running after its step is asked every time and never remembered.
  if (typeof operation.outlivesItsStep === "string")
    notes.push(`Always asked: ${operation.outlivesItsStep}, and what it writes then cannot be known; no rule answers or remembers it.`);
  return notes.length > 0 ? { note: notes.join(" ").slice(0, 500) } : {};
}

/** `_acp_gateway/unseen_changes`: the request may read what the agent changed unseen (decision 0046): said on its card. */
export function unseenChanges(t: Transcript, params: JsonObject): Transcript {
  const key = typeof params.toolCallId === "string" ? `tool:${params.toolCallId}` : null;
  const card = key ? t.permissions[key] : undefined;
  const unseen = isObject(params.unseen) ? params.unseen : {};
  if (!key || !card || typeof unseen.message !== "string") return t;
  const note = [unseen.message, card.note]
    .filter((n) => n !== undefined)
    .join(" ")
    .slice(0, 500);
  const shown = unseenShownOf(unseen);
  return { ...t, permissions: { ...t.permissions, [key]: { ...card, note, ...(shown ? { unseen: shown } : {}) } } };
}

export function permissionAnswered(t: Transcript, key: string): Transcript {
  const p = t.permissions[key];
  return p ? { ...t, permissions: { ...t.permissions, [key]: { ...p, state: "sent" } } } : t;
}

/** `$/cancel_request`: this copy of the request no longer wants an answer; the resolution follows. */
export function permissionWithdrawn(t: Transcript, requestId: unknown): Transcript {
  const p = Object.values(t.permissions).find((x) => x.requestId === requestId && x.state !== "resolved");
  return p ? { ...t, permissions: { ...t.permissions, [p.key]: { ...p, state: "withdrawn" } } } : t;
}

/**
 * `_acp_gateway/permission_resolved`: the card says who answered and how, and the person's reason. A
 * replayed one (session/load) carries its request: the card is made from it, as it was shown live.
 * With neither a card nor a request, a notice.
 */
export function permissionResolved(t: Transcript, params: JsonObject): Transcript {
  const toolCallId = typeof params.toolCallId === "string" ? params.toolCallId : null;
  const key = toolCallId ? `tool:${toolCallId}` : null;
  let next = t;
  if (key && !t.permissions[key] && isObject(params.request)) next = replayedCard(t, key, params.request);
  const card = key ? next.permissions[key] : undefined;
  const call = card?.toolCall ?? (toolCallId ? t.tools[toolCallId] : undefined) ?? {};
  const options = card?.options ?? [];
  const outcome = isObject(params.outcome) ? params.outcome : {};
  const optionId =
    typeof params.chosenOptionId === "string" ? params.chosenOptionId : typeof outcome.optionId === "string" ? outcome.optionId : null;
  const option = options.find((o) => o.optionId === optionId);
  const by = isObject(params.decidedBy) ? (params.decidedBy as unknown as DecidedBy) : { type: "unknown" };
  const what =
    outcome.outcome === "selected" ? `“${option?.name ?? optionId ?? "an option"}”${option ? ` (${option.kind})` : ""}` : "cancelled";
  const reason = (by.type === "person" || by.type === "link") && typeof by.reason === "string" && by.reason !== "" ? by.reason : null;
  const decided: Decided = { by, what, reason };
  next =
    card && key
      ? { ...next, permissions: { ...next.permissions, [key]: { ...card, state: "resolved" as const, decided } } }
      : notice(next, `Permission to ${operationLine(call)}: ${resolutionText(decided, { keyId: null, connectionId: null })}`);
  if (outcome.outcome !== "selected" && toolCallId) next = cancelTool(next, toolCallId);
  return next;
}

/** A resolved request's card, made from the request a replayed resolution carries. */
function replayedCard(t: Transcript, key: string, request: JsonObject): Transcript {
  const asked = permissionRequested(t, key, { toolCall: request.toolCall, options: request.options });
  const p = asked.permissions[key];
  return p ? { ...asked, permissions: { ...asked.permissions, [key]: { ...p, state: "resolved" } } } : asked;
}

/** A resolution in words, "you" where this person decided it (their key, or this very connection). */
export function resolutionText(decided: Decided, me: Me): string {
  return `${capitalize(whoDecided(decided.by, me))} — ${decided.what}`;
}

/** `_acp_gateway/operation_changed`: the agent changed a request after it was asked; it is asked again. */
export function operationChanged(t: Transcript, params: JsonObject): Transcript {
  const message =
    typeof params.message === "string" ? params.message : "The agent changed a request after it was asked; it is asked again.";
  return notice(t, message, "warn");
}

export function ruleCreated(t: Transcript, params: JsonObject): Transcript {
  const rule = isObject(params.rule) ? params.rule : {};
  const by = typeof params.createdBy === "string" ? params.createdBy : "someone";
  return notice(t, `Remembered for the team by ${by}: ${String(rule.description ?? "a rule")}`);
}

/** The turn ended without finishing (cancelled, deadline, agent gone): nothing is left pending. */
export function turnEnded(t: Transcript, message: string | null): Transcript {
  let next = message ? notice(t, message, "warn") : t;
  for (const [id, call] of Object.entries(next.tools))
    if (call.status === "pending" || call.status === "in_progress") next = cancelTool(next, id);
  const permissions = { ...next.permissions };
  for (const p of Object.values(permissions)) {
    if (p.state !== "resolved")
      permissions[p.key] = { ...p, state: "resolved", resolution: p.resolution ?? "The turn ended before anyone answered" };
  }
  return { ...next, permissions };
}

function cancelTool(t: Transcript, id: string): Transcript {
  const call = t.tools[id];
  if (!call || (call.status !== "pending" && call.status !== "in_progress")) return t;
  return { ...t, tools: { ...t.tools, [id]: { ...call, status: "cancelled" } } };
}

function whoDecided(by: DecidedBy, me: Me): string {
  switch (by.type) {
    case "person": {
      const name = by.user ?? "someone with a key";
      const mine =
        (by.keyId !== undefined && by.keyId === me.keyId) || (by.connectionId !== undefined && by.connectionId === me.connectionId);
      return mine ? `answered by you (${name})` : `answered by ${name}`;
    }
    case "link":
      return by.user ? `answered through an approval link by ${by.user}` : "answered through an approval link";
    case "rule":
      return `auto-answered by the team rule “${by.description ?? "a rule"}”`;
    case "cancel":
      return by.user ? `the turn was cancelled by ${by.user}` : "the turn was cancelled";
    case "deadline":
      return "nobody answered before the deadline";
    case "turn_end":
      return "the turn ended";
    case "agent_disconnected":
      return "the agent disconnected";
    case "agent_withdrew":
      return "the agent withdrew the request";
    case "operation_changed":
      return "the agent changed the operation after it was asked; it was asked again";
    default:
      return "resolved";
  }
}

export function pendingCount(t: Transcript): number {
  return Object.values(t.permissions).filter((p) => p.state === "open").length;
}

/** `_acp_gateway/mode_change_waiting`: a held mode change's card, made once however often it is told (each attach tells it again). */
export function modeChangeWaiting(t: Transcript, params: JsonObject): Transcript {
  const change = heldModeChangeOf(params);
  if (!change || t.modeChanges[change.proposalId]) return t;
  return {
    ...t,
    items: [...t.items, { type: "mode_change", proposalId: change.proposalId }],
    modeChanges: { ...t.modeChanges, [change.proposalId]: change },
  };
}

/**
 * `_acp_gateway/mode_change_decided`: the card says how it ended and who decided. Replayed from the
 * session's log (a reload, a reconnect, a teammate's attach) it finds no card — the waiting notice is
 * told only while a change waits — and makes one from the notice, which carries the card whole.
 */
export function modeChangeDecided(t: Transcript, params: JsonObject): Transcript {
  const card = typeof params.proposalId === "string" ? t.modeChanges[params.proposalId] : undefined;
  if (card) return { ...t, modeChanges: { ...t.modeChanges, [card.proposalId]: decidedCard(card, params) } };
  const decided = replayedModeChange(params);
  if (!decided) return t;
  return {
    ...t,
    items: [...t.items, { type: "mode_change", proposalId: decided.proposalId }],
    modeChanges: { ...t.modeChanges, [decided.proposalId]: decided },
  };
}

/** This person's decision is on its way (`refused`: null), or the gateway refused it and the change still waits (why). */
export function modeChangeDecision(t: Transcript, proposalId: string, refused: string | null): Transcript {
  const card = t.modeChanges[proposalId];
  return card ? { ...t, modeChanges: { ...t.modeChanges, [proposalId]: decisionSent(card, refused) } } : t;
}

/** Mode changes waiting for a second person in this session. */
export function modeChangesWaiting(t: Transcript): number {
  return stillWaiting(t.modeChanges);
}

function textOf(content: unknown): string {
  if (!isObject(content)) return "";
  if (content.type === "text" && typeof content.text === "string") return content.text;
  if (content.type === "resource_link" && typeof content.uri === "string")
    return `[${String(content.name ?? content.uri)}](${content.uri})`;
  return `[${String(content.type)}]`;
}

/** A string the gateway marked a synthesized update with (`_meta.acpGateway`), or null. */
function gatewayMark(meta: JsonObject | undefined, name: "user" | "keyId"): string | null {
  const gateway = meta && isObject(meta.acpGateway) ? meta.acpGateway : undefined;
  const value = gateway?.[name];
  return typeof value === "string" ? value : null;
}

function planEntry(e: JsonObject): PlanEntry {
  return { content: String(e.content ?? ""), status: String(e.status ?? "pending"), priority: String(e.priority ?? "medium") };
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
