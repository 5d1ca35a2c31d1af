// A mode change held for a second person (decision 0061) as the console shows it, read from
// `_acp_gateway/mode_change_waiting` and `_acp_gateway/mode_change_decided`, and the agent's mode for
// the session's header. Whether this person may approve or refuse is judged as the session judges it
// (protocol/people/mode-approval.ts): only what the gateway would refuse for certain is greyed out,
// with its reason. A key that names nobody is left enabled, because only the tenant's settings say
// whether it counts (`fourEyes.keysApprove`): the gateway's refusal is shown if it does not.

import type { Role } from "../../core/principal";
import { type SessionModes, modeGoverned } from "../../protocol/people/session-modes";
import { personKey } from "../../protocol/people/answering";
import { leastRoleFor, may } from "../../protocol/people/roles";
import type { Choice } from "./answerable";

type JsonObject = { [key: string]: unknown };

/** `withdrawn`: the session was deleted while the change waited. */
type ModeOutcome = "approved" | "refused" | "expired" | "withdrawn";
const OUTCOMES: readonly unknown[] = ["approved", "refused", "expired", "withdrawn"] satisfies ModeOutcome[];

export interface HeldModeChange {
  proposalId: string;
  /** `mode`, or the configuration option's id. */
  setting: string;
  value: string;
  /** Who proposed it, as people read it. */
  proposedBy: string;
  /** The proposer as a person (`personKey`); null from a gateway that does not say. */
  proposer: string | null;
  expiresAt: number;
  /** `sent`: this person's decision is on its way; `decided`: the gateway said how it ended. */
  state: "waiting" | "sent" | "decided";
  outcome?: ModeOutcome;
  decidedBy?: string | null;
  /** The gateway refused this person's decision: why (the change still waits). */
  refused?: string;
}

/** Who this page is signed in as, as the gateway judges a decision (GET /v1/me); null fields: not known yet. */
export interface Decider {
  role: Role | null | undefined;
  who: string | null;
}

/** This page's `personKey`, from GET /v1/me: a person's (a token's subject, or the user a key was issued to), else the key's. */
export function deciderOf(me: { keyId: string; person: { issuer: string; subject: string } | null; role?: Role | null }): Decider {
  return { role: me.role, who: personKey({ keyId: me.keyId, person: me.person ?? undefined }) };
}

/** A `mode_change_waiting` notice read, or null when it names no proposal. */
export function heldModeChangeOf(params: JsonObject): HeldModeChange | null {
  if (typeof params.proposalId !== "string" || params.proposalId === "") return null;
  return {
    proposalId: params.proposalId,
    setting: typeof params.setting === "string" ? params.setting : "mode",
    value: typeof params.value === "string" ? params.value : "an unknown value",
    proposedBy: typeof params.proposedBy === "string" ? params.proposedBy : "someone",
    proposer: typeof params.proposer === "string" ? params.proposer : null,
    expiresAt: typeof params.expiresAt === "number" ? params.expiresAt : 0,
    state: "waiting",
  };
}

/** A `mode_change_decided` notice applied to its card (unchanged when it is not this card's or says nothing usable). */
export function modeChangeDecided(change: HeldModeChange, params: JsonObject): HeldModeChange {
  const outcome = params.outcome;
  if (params.proposalId !== change.proposalId || !OUTCOMES.includes(outcome)) return change;
  // SAFETY: OUTCOMES lists exactly ModeOutcome's members.
  const decided: HeldModeChange = {
    ...change,
    state: "decided",
    outcome: outcome as ModeOutcome,
    decidedBy: typeof params.by === "string" ? params.by : null,
  };
  delete decided.refused;
  return decided;
}

/**
 * A `mode_change_decided` notice replayed from the session's log (decision 0064) with no card to end:
 * the waiting notice is told only while a change waits, so the decided one carries the card whole and
 * the card is made from it, as the live card ends. Null when it names no proposal or no known outcome.
 */
export function replayedModeChange(params: JsonObject): HeldModeChange | null {
  const card = heldModeChangeOf(params);
  const decided = card ? modeChangeDecided(card, params) : null;
  return decided?.state === "decided" ? decided : null;
}

/** This person's decision is on its way (`refused`: null), or the gateway refused it and the change still waits (why). A decided card stays decided. */
export function decisionSent(change: HeldModeChange, refused: string | null): HeldModeChange {
  if (change.state === "decided") return change;
  const next: HeldModeChange = refused === null ? { ...change, state: "sent" } : { ...change, state: "waiting", refused };
  if (refused === null) delete next.refused;
  return next;
}

/** How many of the changes still wait for a decision. */
export function stillWaiting(changes: Readonly<Record<string, HeldModeChange>>): number {
  return Object.values(changes).filter((c) => c.state !== "decided").length;
}

/** What is proposed, in words: "switching the session's mode to bypassPermissions". */
export function proposedText(c: Pick<HeldModeChange, "setting" | "value">): string {
  return c.setting === "mode" ? `switching the session's mode to ${c.value}` : `setting the session's ${c.setting} to ${c.value}`;
}

/** How it ended, in words. */
export function outcomeText(c: HeldModeChange): string {
  switch (c.outcome) {
    case "approved":
      return `Approved by ${c.decidedBy ?? "a second person"}: the change went to the agent.`;
    case "refused":
      return `Refused by ${c.decidedBy ?? "an approver"}: it was not made.`;
    case "expired":
      return "Expired: no second person approved it in time, so it was not made.";
    case "withdrawn":
      return `Withdrawn: the session was deleted${c.decidedBy ? ` by ${c.decidedBy}` : ""}, so it was not made.`;
    default:
      return "";
  }
}

/** Whether this person may make `decision` on the change, and if not, the gateway's reason. */
export function decisionChoice(c: HeldModeChange, me: Decider, decision: "approve" | "refuse"): Choice {
  if (me.role !== undefined && !may(me.role, "oversight")) {
    return {
      enabled: false,
      reason: `Your role (${me.role ?? "none"}) may not decide a mode change: it needs ${leastRoleFor("oversight")} or higher.`,
    };
  }
  if (decision === "approve" && c.proposer !== null && me.who !== null && c.proposer === me.who) {
    return {
      enabled: false,
      reason: "You proposed this change: four eyes needs a second person to approve it. You may refuse (withdraw) it.",
    };
  }
  return { enabled: true };
}

/** The agent's current mode as the header shows it: its name (and id when they differ), or null when the agent advertised none. */
export function currentModeText(modes: SessionModes | null): string | null {
  if (!modes || modes.currentModeId === null) return null;
  const id = modes.currentModeId;
  const name = modes.available.find((m) => m.id === id)?.name;
  return name && name !== id ? `${name} (${id})` : id;
}

/**
 * The modes after the agent reported `currentModeId` (`current_mode_update`), marked governed exactly
 * as the session marks it (protocol/people/session-modes.ts), advertised or not.
 */
export function modeReported(modes: SessionModes | null, update: JsonObject): SessionModes | null {
  const id = update.currentModeId;
  if (typeof id !== "string") return modes;
  return { currentModeId: id, currentGoverned: modeGoverned(id), available: modes?.available ?? [] };
}

/** `_acp_gateway/agent_mode_changed`: the agent is in a governed mode now. */
export function agentModeChanged(modes: SessionModes | null, params: JsonObject): SessionModes | null {
  if (typeof params.to !== "string") return modes;
  return { currentModeId: params.to, currentGoverned: true, available: modes?.available ?? [] };
}
