// What a tenant does with an agent that decides approvals itself (decision 0056): the first tool call
// it reports finished that nobody was asked about (`_acp_gateway/ran_unasked`, decision 0046) either
// stops the session (`stop`, the default) or is only told (`tell`). A stopped session is held: its
// turn is cancelled and it takes no prompt until a person who may lift oversight resumes it.
// A session is held the same way when its agent switches itself into a mode the tenant forbids
// (`mode_forbidden`, decision 0061; durable-objects/session/agent-modes.ts).
// Pure: the SessionObject's shell (durable-objects/session/unasked-runs.ts) reads the setting and acts.

import { RpcError } from "./jsonrpc";
import { ErrorCode } from "../core/rpc-errors";

export const UNASKED_RUNS = ["stop", "tell"] as const;
export type UnaskedRuns = (typeof UNASKED_RUNS)[number];

/** The tenant's choice; absent or unknown is `stop` (the safe side: the team's rules govern, or nothing runs). */
export function unaskedRunsOf(settings: { unaskedRuns?: unknown } | undefined): UnaskedRuns {
  return settings?.unaskedRuns === "tell" ? "tell" : "stop";
}

/** Why a session is held, kept in its meta until a person resumes it. */
export type SessionHold = RanUnaskedHold | ModeForbiddenHold;

/** The agent ran a tool call nobody was asked about (decision 0056). */
export interface RanUnaskedHold {
  reason: "ran_unasked";
  toolCallId: string;
  kind: string;
  command?: string;
  /** What it may have changed (at most the few the notice listed). */
  changes: string[];
  at: number;
}

/** The agent switched itself into a mode the tenant forbids (settings.modes, decision 0061). */
interface ModeForbiddenHold {
  reason: "mode_forbidden";
  mode: string;
  at: number;
}

/** The `_acp_gateway/ran_unasked` notice's params as a hold, or null when they do not name a tool call. */
export function holdOf(notice: Record<string, unknown>, at: number): RanUnaskedHold | null {
  const { toolCallId, kind, command, changes } = notice;
  if (typeof toolCallId !== "string") return null;
  return {
    reason: "ran_unasked",
    toolCallId,
    kind: typeof kind === "string" ? kind : "other",
    ...(typeof command === "string" ? { command } : {}),
    changes: Array.isArray(changes) ? changes.filter((c): c is string => typeof c === "string") : [],
    at,
  };
}

/** How a person lifts the hold: the REST call and the console's button. */
function resumeHint(sessionId: string): string {
  return `a person with the approver role resumes it (Resume in the console, or DELETE /v1/sessions/${sessionId}/hold)`;
}

/** What ran, as one phrase: the kind and its command or first change. */
function ranText(hold: RanUnaskedHold): string {
  const what = hold.command ?? hold.changes[0];
  return what === undefined ? `a tool call (${hold.kind})` : `a tool call (${hold.kind}: ${what})`;
}

/** Told to every client when the session is held; the turn, if one ran, ended with the same words. */
export function heldMessage(sessionId: string, hold: SessionHold): string {
  if (hold.reason === "mode_forbidden")
    return (
      `The agent switched this session's mode to ${hold.mode} by itself, which this tenant forbids (settings.modes). ` +
      `The gateway cancelled the turn; the session takes no prompt until ${resumeHint(sessionId)} (and switches the mode back).`
    );
  return (
    `The agent ran ${ranText(hold)} without asking anyone, and this tenant refuses agents that decide approvals ` +
    `themselves (settings.unaskedRuns is "stop"). The gateway cancelled the turn; the session takes no prompt ` +
    `until ${resumeHint(sessionId)}.`
  );
}

/** A prompt in a held session: refused, saying why and who can resume it. */
export function refusePromptWhileHeld(sessionId: string, hold: SessionHold | undefined): void {
  if (!hold) return;
  throw new RpcError(
    ErrorCode.invalidRequest,
    hold.reason === "mode_forbidden"
      ? `Session ${sessionId} is stopped: the agent switched its mode to ${hold.mode}, which this tenant forbids. It takes no prompt until ${resumeHint(sessionId)}.`
      : `Session ${sessionId} is stopped: the agent ran ${ranText(hold)} without asking anyone. It takes no prompt until ${resumeHint(sessionId)}.`,
    { reason: "session_held", hold },
  );
}
