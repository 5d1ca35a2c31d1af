// What the agent changed that nobody saw, as a permission card shows it (decisions 0046, 0062, 0064):
// a request asked because of unseen changes carries them (`_meta.acpGateway.unseen`, or the
// `_acp_gateway/unseen_changes` notice), each naming the session and tool call that made it. Per change
// the card shows the diff the gateway sent with it (what the gateway knows the card was sent), else the
// diff of that tool call when it was made in this session and the transcript has it, a link to the
// other session's card when it was made elsewhere, and says which it cannot show: a command's writes
// (`*`: it may have written anything), or a tool call whose diff this page never got. The answer names
// the listed changes the card showed, against the list's id (`shownClaim`): only those become seen.
// Pure: the card renders what this returns.

import { type JsonObject, isObject } from "../../protocol/jsonrpc";
import { type Diff, commandOf, diffsOf } from "./operation";
import { sessionAddress } from "./session-address";

/** One unseen change as the gateway lists it (protocol/unseen.ts `UnseenChange`). */
interface UnseenChangeRef {
  /** The gateway's id of the change, named back when the card showed it; null from a gateway that sends none. */
  id: number | null;
  path: string;
  sessionId: string;
  toolCallId: string | null;
  /** The diff the gateway sent with it; null when it has none to show. */
  diff: { oldText: string | null; newText: string } | null;
  /** What the gateway knows of a change no diff shows (decision 0068): the step's command and directory, the rule that answered it, when. */
  command: string | null;
  cwd: string | null;
  ruleId: string | null;
  at: number | null;
  /** Its step had not reported finishing when the list was made: the gateway does not let it be accepted. */
  running: boolean;
}

/** The unseen changes a request was shown: the first few listed, how many there are, and the list's id. */
export interface UnseenShown {
  total: number;
  changes: UnseenChangeRef[];
  listId: string | null;
}

/** The path the gateway lists for a change whose extent is unknown (protocol/unseen.ts `ANYTHING`). */
const ANYTHING = "*";

/**
 * A change the gateway sent no diff for is cleared only by the person accepting what its step may have
 * written (decision 0068): its id, what the gateway knows of the step, and whether it still ran when listed.
 */
export interface Acceptance {
  id: number;
  cwd: string | null;
  ruleId: string | null;
  at: number | null;
  running: boolean;
}

export type UnseenView = (
  | /** The diff the gateway sent with the change, or (made in this session) of the tool call that made it; `elsewhere`: the other session's card. */
    { type: "diff"; toolCallId: string | null; diff: Diff; elsewhere?: string }
    /** Made in another session: where its card is. */
  | { type: "elsewhere"; path: string; sessionId: string; href: string }
  /** A command's writes (or another tool's whose extent is unknown): no diff can show them. */
  | { type: "anything"; sessionId: string; toolCallId: string | null; command: string | null; here: boolean; href: string | null }
  /** Made in this session, but the transcript holds no diff of it (not sent by the agent, or not loaded). */
  | { type: "missing"; path: string; toolCallId: string | null }
) & {
  /** Set when the gateway sent no diff: only an explicit acceptance clears it. */
  accept?: Acceptance;
};

/** The `unseen` object of a request or notice, read defensively (it is the gateway's, but a page must not break on it). */
export function unseenShownOf(value: unknown): UnseenShown | null {
  if (!isObject(value) || !Array.isArray(value.changes)) return null;
  const changes = value.changes.filter(isObject).flatMap((c): UnseenChangeRef[] =>
    typeof c.path === "string" && typeof c.sessionId === "string"
      ? [
          {
            id: typeof c.id === "number" && Number.isSafeInteger(c.id) ? c.id : null,
            path: c.path,
            sessionId: c.sessionId,
            toolCallId: typeof c.toolCallId === "string" ? c.toolCallId : null,
            diff: sentDiffOf(c.diff),
            command: typeof c.command === "string" ? c.command : null,
            cwd: typeof c.cwd === "string" ? c.cwd : null,
            ruleId: typeof c.ruleId === "string" ? c.ruleId : null,
            at: typeof c.at === "number" && Number.isFinite(c.at) ? c.at : null,
            running: c.running === true,
          },
        ]
      : [],
  );
  const total = typeof value.total === "number" && value.total >= changes.length ? value.total : changes.length;
  const listId = typeof value.listId === "string" ? value.listId : null;
  return changes.length > 0 || total > 0 ? { total, changes, listId } : null;
}

function sentDiffOf(value: unknown): UnseenChangeRef["diff"] {
  if (!isObject(value) || typeof value.newText !== "string") return null;
  return { oldText: typeof value.oldText === "string" ? value.oldText : null, newText: value.newText };
}

/**
 * What the answer says the card showed (`_meta.acpGateway.shown`, decisions 0064, 0068), named against
 * the list's id: `changes`, every listed change whose diff the gateway sent (the card renders each);
 * `accepted`, of the changes sent without one, those the person ticked "I accept what this may have
 * written" for — and only those. Null when the gateway sent no list id (nothing can be named).
 */
export function shownClaim(
  shown: UnseenShown | undefined,
  ticked: readonly number[] = [],
): { list: string; changes: number[]; accepted: number[] } | null {
  if (!shown?.listId) return null;
  const changes = shown.changes.flatMap((c) => (c.id !== null && c.diff !== null ? [c.id] : []));
  const accepted = shown.changes.flatMap((c) => (c.id !== null && c.diff === null && !c.running && ticked.includes(c.id) ? [c.id] : []));
  return changes.length > 0 || accepted.length > 0 ? { list: shown.listId, changes, accepted } : null;
}

function acceptanceOf(change: UnseenChangeRef): Acceptance | undefined {
  if (change.diff !== null || change.id === null) return undefined;
  return { id: change.id, cwd: change.cwd, ruleId: change.ruleId, at: change.at, running: change.running };
}

/** A diff's path as the gateway resolves it: relative ones against the session's directory. */
function absolute(path: string, cwd: string): string {
  return path.startsWith("/") ? path : `${cwd.replace(/\/+$/, "")}/${path}`;
}

/**
 * One view per distinct change (a tool call's path listed twice is shown once), in the gateway's
 * order, and how many changes it did not list.
 */
export function unseenViews(
  shown: UnseenShown,
  session: { sessionId: string; cwd: string },
  tools: Readonly<Record<string, JsonObject>>,
): { views: UnseenView[]; unlisted: number } {
  const seen = new Set<string>();
  const views: UnseenView[] = [];
  for (const change of shown.changes) {
    const key = `${change.sessionId}\u0000${change.toolCallId ?? ""}\u0000${change.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const here = change.sessionId === session.sessionId;
    const href = here
      ? change.toolCallId
        ? sessionAddress(change.sessionId, change.toolCallId)
        : null
      : sessionAddress(change.sessionId, change.toolCallId);
    const call = here && change.toolCallId ? tools[change.toolCallId] : undefined;
    const accept = acceptanceOf(change);
    const push = (view: UnseenView) => views.push(accept ? { ...view, accept } : view);
    // The diff the gateway sent is what it knows this card was shown, wherever the change was made.
    if (change.diff && change.path !== ANYTHING) {
      const diff = { path: change.path, ...change.diff };
      push({
        type: "diff",
        toolCallId: change.toolCallId,
        diff,
        ...(here ? {} : { elsewhere: sessionAddress(change.sessionId, change.toolCallId) }),
      });
      continue;
    }
    if (change.path === ANYTHING) {
      push({
        type: "anything",
        sessionId: change.sessionId,
        toolCallId: change.toolCallId,
        command: change.command ?? (call ? commandOf(call) : null),
        here,
        href,
      });
      continue;
    }
    if (!here) {
      push({
        type: "elsewhere",
        path: change.path,
        sessionId: change.sessionId,
        href: sessionAddress(change.sessionId, change.toolCallId),
      });
      continue;
    }
    const diff = call ? diffsOf(call).find((d) => absolute(d.path, session.cwd) === change.path) : undefined;
    push(
      diff && change.toolCallId
        ? { type: "diff", toolCallId: change.toolCallId, diff }
        : { type: "missing", path: change.path, toolCallId: change.toolCallId },
    );
  }
  return { views, unlisted: Math.max(0, shown.total - shown.changes.length) };
}
