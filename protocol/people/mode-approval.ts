// Four eyes on a mode change (decision 0061). A tenant that sets `settings.modes.fourEyes` holds every
// governed mode or configuration change (protocol/people/modes.ts) of an approver until a second person
// approves it. Pure: what a proposal is, who may decide it, and what the proposer and the clients are
// told. Guarantees (model-tested in test/unit/people/mode-approval.test.ts):
// - Nothing is relayed before a second person approved: only `approve` by someone else yields `relay`.
// - People, not keys: the proposer (by `personKey`, decision 0041) never approves their own change, and
//   a credential that names nobody approves only where the tenant lets keys approve
//   (settings.fourEyes.keysApprove). Anyone with the approver role may refuse, the proposer too (a withdrawal).
// - A proposal is decided once: after a decision or its deadline, every later decision is `gone`.
// - At or after its deadline nothing approves it: it is `expired`, and the proposer told so.

import { RpcError } from "../jsonrpc";
import { ErrorCode } from "../../core/rpc-errors";
import type { ModeSettings, Role } from "../../core/principal";
import { leastRoleFor, may } from "./roles";
import { namesNobody } from "./answering";
import type { ModeChange } from "./modes";

/** How long a held mode change waits for a second person when the edge named no deadline (it sends the tenant's permission deadline). */
export const MODE_APPROVAL_MS = 10 * 60_000;

/** The wrapper the edge sends the session in place of a held request (clients may not send it: connection/mode-gate.ts). */
export const HOLD_MODE_CHANGE = "_acp_gateway/hold_mode_change";
/** A client's decision on a held mode change: `{sessionId, proposalId, decision: "approve" | "refuse"}`. */
export const DECIDE_MODE_CHANGE = "_acp_gateway/decide_mode_change";

/** Whether the tenant holds governed mode changes for a second person. Settings no API would store hold them (closed world). */
export function fourEyesHoldsModes(settings: ModeSettings | undefined): boolean {
  const fourEyes: unknown = settings?.fourEyes;
  return fourEyes !== undefined && fourEyes !== false;
}

/** One held change, as the session keeps it. */
export interface ModeProposal {
  id: string;
  /** `session/set_mode modeId=bypassPermissions`, as the audit records it. */
  operation: string;
  change: Pick<ModeChange, "method" | "setting" | "value">;
  /** The proposer as a person (`personKey`) and a name people read. */
  proposer: { who: string; label: string | null };
  proposedAt: number;
  expiresAt: number;
}

/** Who decides: their role, who they are (`personKey`), and whether the tenant lets keys approve. */
export interface ModeDecider {
  role: Role | null;
  who: string;
  label: string | null;
  keysApprove: boolean;
}

export type Decision = "approve" | "refuse";

export type Decided =
  /** A second person approved: audit it, then relay the original request to the agent. */
  | { kind: "relay" }
  /** Refused (by a person): audit it, answer the proposer with `error`. */
  | { kind: "refused"; error: RpcError }
  /** Past its deadline: audit it, answer the proposer with `error`; the decider is told it expired. */
  | { kind: "expired"; error: RpcError }
  /** This person may not make this decision: the proposal stays held. */
  | { kind: "not_permitted"; error: RpcError };

const nameOf = (who: { who: string; label: string | null }) => who.label ?? who.who;

function describe(p: ModeProposal): string {
  return p.change.setting === "mode" ? `the session's mode to ${p.change.value}` : `the session's ${p.change.setting} to ${p.change.value}`;
}

/** The judgement of one decision on a held proposal at `now`. */
export function decide(p: ModeProposal, by: ModeDecider, decision: Decision, now: number): Decided {
  const data = { proposalId: p.id, setting: p.change.setting, value: p.change.value };
  if (now >= p.expiresAt) return { kind: "expired", error: expiredError(p) };
  if (!may(by.role, "oversight")) {
    const least = leastRoleFor("oversight");
    return {
      kind: "not_permitted",
      error: new RpcError(
        ErrorCode.notPermitted,
        `Your role (${by.role ?? "none"}) may not decide a mode change: it needs ${least} or higher.`,
        { ...data, role: by.role, needs: least },
      ),
    };
  }
  if (decision === "refuse") {
    const withdrawn = by.who === p.proposer.who;
    const sentence = withdrawn
      ? `You withdrew switching ${describe(p)}; it was not made.`
      : `${nameOf(by)} refused switching ${describe(p)}; it was not made.`;
    return { kind: "refused", error: new RpcError(ErrorCode.notPermitted, sentence, { ...data, refusedBy: nameOf(by) }) };
  }
  if (by.who === p.proposer.who) {
    return {
      kind: "not_permitted",
      error: new RpcError(
        ErrorCode.notPermitted,
        `You proposed switching ${describe(p)}: your tenant's four eyes (settings.modes.fourEyes) needs a second person to approve it. You may refuse (withdraw) it.`,
        { ...data, fourEyes: true },
      ),
    };
  }
  if (namesNobody(by.who) && !by.keysApprove) {
    return {
      kind: "not_permitted",
      error: new RpcError(
        ErrorCode.notPermitted,
        "Four eyes counts people: your credential names nobody (an admin key, or a key issued to no person). Sign in, or use a key issued to you; a tenant admin may let such keys approve (settings.fourEyes.keysApprove). You may refuse it.",
        { ...data, fourEyes: true },
      ),
    };
  }
  return { kind: "relay" };
}

/** What the proposer gets when nobody decided in time. */
export function expiredError(p: ModeProposal): RpcError {
  const ms = p.expiresAt - p.proposedAt;
  const within = ms < 120_000 ? `${Math.round(ms / 1000)} seconds` : `${Math.round(ms / 60_000)} minutes`;
  return new RpcError(
    ErrorCode.notPermitted,
    `Switching ${describe(p)} expired: no second person approved it within ${within}, so it was not made. Propose it again when an approver can look.`,
    { proposalId: p.id, setting: p.change.setting, value: p.change.value, expired: true },
  );
}

/** A held change's card, as every notice of it carries it: who proposed what, when, until when. */
function cardOf(sessionId: string, p: ModeProposal) {
  return {
    sessionId,
    proposalId: p.id,
    method: p.change.method,
    setting: p.change.setting,
    value: p.change.value,
    proposedBy: nameOf(p.proposer),
    /** The proposer as a person (`personKey`), as GET /v1/sessions/{id}/mode-changes names them: a client greys out their own approval. */
    proposer: p.proposer.who,
    proposedAt: p.proposedAt,
    expiresAt: p.expiresAt,
  };
}

/** The notice every client gets while a change waits (`_acp_gateway/mode_change_waiting`). */
export function waitingNotice(sessionId: string, p: ModeProposal) {
  return {
    ...cardOf(sessionId, p),
    message: `${nameOf(p.proposer)} proposes switching ${describe(p)}; it waits for a second approver (four eyes). Answer with ${DECIDE_MODE_CHANGE} or POST /v1/sessions/${sessionId}/mode-changes/${p.id}.`,
  };
}

/** What the proposer gets when the session is deleted while their change waits: withdrawn at once, never left to expire. */
export function deletedError(p: ModeProposal, deletedBy: string | null): RpcError {
  const who = deletedBy ? ` by ${deletedBy}` : "";
  return new RpcError(
    ErrorCode.notPermitted,
    `Switching ${describe(p)} was withdrawn: the session was deleted${who}, so it was not made.`,
    {
      proposalId: p.id,
      setting: p.change.setting,
      value: p.change.value,
      sessionDeleted: true,
    },
  );
}

/** How a held change ended. `withdrawn`: its session was deleted while it waited. */
export type ModeOutcome = "approved" | "refused" | "expired" | "withdrawn";

/**
 * The notice every client gets when a change is decided (`_acp_gateway/mode_change_decided`). It is
 * kept in the session's log, so it carries the card whole — who proposed what, when, until when — and
 * a replay (a reload, a reconnect, a teammate's attach) shows the outcome without the waiting notice,
 * which is told only while the change waits.
 */
export function decidedNotice(sessionId: string, p: ModeProposal, outcome: ModeOutcome, by: string | null) {
  return { ...cardOf(sessionId, p), outcome, by };
}
