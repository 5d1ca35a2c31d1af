// Who may answer a permission request, with which options (decision 0028). Pure: the SessionObject
// asks it when it sends each copy of a request (`answerable`, in `_meta.acpGateway.answerable`) and
// again when an answer commits (`authorise`) — the second is the one that counts: a role, a turn or a
// policy that changed between the two is judged as it is when the answer arrives. Guarantees
// (property-tested in test/unit/people/answering.test.ts):
// - `authorise` accepts exactly the options `answerable` lists, for the same inputs.
// - An observer chooses nothing; a member only in a turn they prompted; approvers and up anywhere.
// - Declining (a reject option, or the outcome `cancelled`) is never harder than approving: whoever
//   may choose any option may decline.
// - Under four eyes nobody approves alone: `not_prompter` refuses the prompter's approval (and every
//   member's), and that of whoever else prompted into the turn (decision 0067: a prompt the agent queued); `two_approvals` needs two distinct approvers, so the first approval is recorded, not
//   committed, and the same person approving again is refused.
// - An option kind the gateway does not know is treated as an approval (closed world).
// - Four eyes counts people, not credentials (decision 0041): a person is their subject, whether
//   signed in or holding a key issued to them; a credential that names nobody approves nothing that
//   needs four eyes unless the tenant lets it (settings.fourEyes.keysApprove).

import type { PermissionOption } from "../permissions";
import { isObject } from "../jsonrpc";
import type { Role } from "../../core/principal";
import { may } from "./roles";
import type { FourEyesNeed } from "./four-eyes";

/** The person answering, as the session knows them from their client's attachment. */
export interface Answerer {
  role: Role;
  /** Who they are across keys and connections (`personKey`). */
  who: string;
}

/** What the session knows of the request when it is answered. */
export interface RequestFacts {
  options: readonly PermissionOption[];
  /** Who prompted the turn the request belongs to (`personKey`), if known. */
  prompter: string | null;
  /**
   * Who else prompted into that turn (decision 0067: prompts an agent that queues them took while it
   * ran). Under four eyes none of them approves; a member still answers only a turn they started.
   */
  alsoPrompted?: readonly string[];
  fourEyes: FourEyesNeed | null;
  /** Who approved already (two_approvals): their `personKey`s. */
  approvals: readonly string[];
}

/** The `_meta.acpGateway.answerable` of one client's copy (the console greys out the rest). */
export interface Answerable {
  optionIds: string[];
  reason?: string;
}

export type Authorised =
  /** Commit the answer. `once`: an "always" choice applies once and no rule is stored, for `why`. */
  | { ok: true; commit: true; once: string | null }
  /** A first approval of two: recorded, the request stays pending for a second person. */
  | { ok: true; commit: false }
  | { ok: false; reason: string };

export function isApproval(option: PermissionOption): boolean {
  return option.kind !== "reject_once" && option.kind !== "reject_always";
}

/**
 * Who someone is for the purposes of answering: the same person across keys, sign-ins and
 * connections (decision 0041). A tenant has one identity provider, and a key issued to a person
 * names them by their subject at it (`POST /v1/keys {user}`), so the subject alone is the person: a
 * sign-in and a key issued to the same subject are one person, not two. A credential that names
 * nobody (the admin key, a key issued to nobody) is only itself, `key:<id>`.
 */
export function personKey(client: { keyId: string; person?: { issuer: string; subject: string } | undefined }): string {
  return client.person ? `subject:${client.person.subject}` : `key:${client.keyId}`;
}

/** A `personKey` as stored before decision 0041 (`person:<issuer>|<subject>`, in pending requests) read as today's. */
function current(who: string): string {
  if (!who.startsWith("person:")) return who;
  const bar = who.indexOf("|");
  return bar < 0 ? who : `subject:${who.slice(bar + 1)}`;
}

/** Whether `who` names no person: four eyes does not count such a credential as a second person. */
export function namesNobody(who: string): boolean {
  return current(who).startsWith("key:");
}

/** Why `answerer` may not choose `option` (null: they may), and whether choosing it only records a first approval. */
function refusal(answerer: Answerer, facts: RequestFacts, option: PermissionOption | null): string | null {
  if (!may(answerer.role, "answer_own")) {
    return "You are an observer: observers watch and do not answer permission requests.";
  }
  const who = current(answerer.who);
  const ownTurn = facts.prompter !== null && current(facts.prompter) === who;
  if (!may(answerer.role, "answer_any") && !ownTurn) {
    return "You are a member: members answer only the requests of a turn they prompted, and someone else prompted this one. An approver may answer it.";
  }
  if (option === null || !isApproval(option) || facts.fourEyes === null) return null;
  const need = facts.fourEyes;
  if (!may(answerer.role, "answer_any")) {
    return `This operation needs a second person's approval (${need.why}); members may reject it, and an approver approves it.`;
  }
  if (namesNobody(who) && need.keysApprove !== true) {
    return `This operation needs a second person's approval (${need.why}), and four eyes counts people: your credential names nobody (an admin key, or a key issued to no person). Sign in, or use a key issued to you; a tenant admin may let such keys approve (settings.fourEyes.keysApprove). You may reject it.`;
  }
  const prompted = ownTurn || (facts.alsoPrompted ?? []).some((p) => current(p) === who);
  if (need.require === "not_prompter" && prompted) {
    return `This operation needs a second person's approval (${need.why}): you prompted this turn, so another approver approves it. You may reject it.`;
  }
  if (need.require === "two_approvals" && facts.approvals.some((a) => current(a) === who)) {
    return `This operation needs two approvals from distinct people (${need.why}); yours is recorded, a second approver's is awaited.`;
  }
  return null;
}

/** The options this person may choose now, and a sentence saying why some or all are not choosable. */
export function answerable(answerer: Answerer, facts: RequestFacts): Answerable {
  const optionIds: string[] = [];
  let reason: string | undefined;
  for (const option of facts.options) {
    const why = refusal(answerer, facts, option);
    if (why === null) optionIds.push(option.optionId);
    else reason ??= why;
  }
  if (optionIds.length > 0 && reason === undefined) {
    const always = onceReason(answerer, facts);
    const offersAlways = facts.options.some((o) => o.kind === "allow_always" || o.kind === "reject_always");
    if (always !== null && offersAlways) reason = always;
  }
  return reason === undefined ? { optionIds } : { optionIds, reason };
}

/** Why an "always" choice of this person applies once and stores no rule (null: it may store one). */
function onceReason(answerer: Answerer, facts: RequestFacts): string | null {
  if (!may(answerer.role, "rules"))
    return `An "always" choice of yours applies to this request only: only approvers store rules (you are ${answerer.role}).`;
  if (facts.fourEyes !== null)
    return `An "always" choice applies to this request only: no rule may cover an operation that needs four eyes (${facts.fourEyes.why}).`;
  return null;
}

/**
 * Whether the request waits on this person ("waiting on you", GET /v1/approvals?waiting=me): they may
 * approve it now, or it offers no approval and they may choose an option. A request they may only
 * decline (four eyes holds their approval, or they approved already and a second approver is awaited)
 * waits on someone else: declining is always possible and does not make a request theirs.
 */
export function waitsOn(answerer: Answerer, facts: RequestFacts): boolean {
  const { optionIds } = answerable(answerer, facts);
  const approvals = facts.options.filter(isApproval);
  if (approvals.length === 0) return optionIds.length > 0;
  return approvals.some((o) => optionIds.includes(o.optionId));
}

type Outcome = { outcome: "cancelled" } | { outcome: "selected"; optionId: string; option: PermissionOption };

export type JudgedAnswer = { ok: true; outcome: Outcome } | { ok: false; reason: string };

/**
 * Judges the `result` of a client's response against the options the request offered. Only two
 * outcomes exist: `selected` with an optionId that the request offered, and `cancelled`. Anything
 * else is never approval (TC-17): the gateway refuses it and the request stays pending.
 */
export function judgeAnswer(result: unknown, options: readonly PermissionOption[]): JudgedAnswer {
  if (!isObject(result) || !isObject(result.outcome)) {
    return { ok: false, reason: 'the result has no "outcome" object' };
  }
  const outcome = result.outcome;
  if (outcome.outcome === "cancelled") return { ok: true, outcome: { outcome: "cancelled" } };
  if (outcome.outcome !== "selected") {
    return { ok: false, reason: `unknown outcome ${JSON.stringify(outcome.outcome)}; expected "selected" or "cancelled"` };
  }
  const option = options.find((o) => o.optionId === outcome.optionId);
  if (!option) {
    const offered = options.map((o) => o.optionId).join(", ");
    return { ok: false, reason: `optionId ${JSON.stringify(outcome.optionId)} was not offered; offered: ${offered}` };
  }
  return { ok: true, outcome: { outcome: "selected", optionId: option.optionId, option } };
}

/**
 * A client's answer judged whole, as it commits: against the options offered (`judgeAnswer`: not
 * ok, it is no answer and never approval), then whether this person may choose it now (`authorise`).
 * The permission machine's one call for a person's answer.
 */
export function authoriseAnswer(
  answerer: Answerer,
  facts: RequestFacts,
  result: unknown,
): { ok: false; reason: string } | { ok: true; outcome: Outcome; chosen: PermissionOption | null; authorised: Authorised } {
  const judged = judgeAnswer(result, facts.options);
  if (!judged.ok) return judged;
  const chosen = judged.outcome.outcome === "selected" ? judged.outcome.option : null;
  return { ok: true, outcome: judged.outcome, chosen, authorised: authorise(answerer, facts, chosen) };
}

/**
 * Whether the answer commits: `option` is the chosen one (null for the outcome `cancelled`, which
 * declines). Judged with the facts as they are when the answer arrives.
 */
export function authorise(answerer: Answerer, facts: RequestFacts, option: PermissionOption | null): Authorised {
  const why = refusal(answerer, facts, option);
  if (why !== null) return { ok: false, reason: why };
  if (option !== null && isApproval(option) && facts.fourEyes?.require === "two_approvals" && facts.approvals.length === 0) {
    return { ok: true, commit: false };
  }
  const always = option !== null && (option.kind === "allow_always" || option.kind === "reject_always");
  return { ok: true, commit: true, once: always ? onceReason(answerer, facts) : null };
}

/**
 * Whether anyone attached could approve the request now (four eyes): null when someone can, else a
 * sentence for everyone waiting. Only approvals need a second person; a rejection is always possible.
 */
export function unsatisfiable(facts: RequestFacts, attached: readonly Answerer[]): string | null {
  if (facts.fourEyes === null) return null;
  const approval = facts.options.find(isApproval);
  if (approval === undefined) return null;
  if (attached.some((a) => refusal(a, facts, approval) === null)) return null;
  const who =
    facts.fourEyes.require === "two_approvals" && facts.approvals.length > 0
      ? "a second approver"
      : "an approver other than the person who prompted the turn";
  return `This request needs four eyes (${facts.fourEyes.why}) and nobody attached can approve it now: it waits for ${who} to attach (the console, or an approval link's sign-in).`;
}
