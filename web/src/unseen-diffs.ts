// What the agent changed that nobody saw, as a permission card shows it (decisions 0046, 0062): a
// request asked because of unseen changes carries them (`_meta.acpGateway.unseen`, or the
// `_acp_gateway/unseen_changes` notice), each naming the session and tool call that made it. Per change
// the card shows the diff of that tool call when it was made in this session and the transcript has
// it, a link to the other session's card when it was made elsewhere, and says which it cannot show: a
// command's writes (`*`: it may have written anything), or a tool call whose diff this page never got.
// Pure: the card renders what this returns.

import { type JsonObject, isObject } from "../../protocol/jsonrpc";
import { type Diff, commandOf, diffsOf } from "./operation";
import { sessionAddress } from "./session-address";

/** One unseen change as the gateway lists it (protocol/unseen.ts `UnseenChange`). */
interface UnseenChangeRef {
  path: string;
  sessionId: string;
  toolCallId: string | null;
}

/** The unseen changes a request was shown: the first few listed, and how many there are. */
export interface UnseenShown {
  total: number;
  changes: UnseenChangeRef[];
}

/** The path the gateway lists for a change whose extent is unknown (protocol/unseen.ts `ANYTHING`). */
const ANYTHING = "*";

export type UnseenView =
  /** Made in this session: the diff of the tool call that made it. */
  | { type: "diff"; toolCallId: string; diff: Diff }
  /** Made in another session: where its card is. */
  | { type: "elsewhere"; path: string; sessionId: string; href: string }
  /** A command's writes (or another tool's whose extent is unknown): no diff can show them. */
  | { type: "anything"; sessionId: string; toolCallId: string | null; command: string | null; here: boolean; href: string | null }
  /** Made in this session, but the transcript holds no diff of it (not sent by the agent, or not loaded). */
  | { type: "missing"; path: string; toolCallId: string | null };

/** The `unseen` object of a request or notice, read defensively (it is the gateway's, but a page must not break on it). */
export function unseenShownOf(value: unknown): UnseenShown | null {
  if (!isObject(value) || !Array.isArray(value.changes)) return null;
  const changes = value.changes
    .filter(isObject)
    .flatMap((c): UnseenChangeRef[] =>
      typeof c.path === "string" && typeof c.sessionId === "string"
        ? [{ path: c.path, sessionId: c.sessionId, toolCallId: typeof c.toolCallId === "string" ? c.toolCallId : null }]
        : [],
    );
  const total = typeof value.total === "number" && value.total >= changes.length ? value.total : changes.length;
  return changes.length > 0 || total > 0 ? { total, changes } : null;
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
    if (change.path === ANYTHING) {
      views.push({
        type: "anything",
        sessionId: change.sessionId,
        toolCallId: change.toolCallId,
        command: call ? commandOf(call) : null,
        here,
        href,
      });
      continue;
    }
    if (!here) {
      views.push({
        type: "elsewhere",
        path: change.path,
        sessionId: change.sessionId,
        href: sessionAddress(change.sessionId, change.toolCallId),
      });
      continue;
    }
    const diff = call ? diffsOf(call).find((d) => absolute(d.path, session.cwd) === change.path) : undefined;
    views.push(
      diff && change.toolCallId
        ? { type: "diff", toolCallId: change.toolCallId, diff }
        : { type: "missing", path: change.path, toolCallId: change.toolCallId },
    );
  }
  return { views, unlisted: Math.max(0, shown.total - shown.changes.length) };
}
