// What the agents changed that no person saw, and which rule-answered steps that stops (issue 35,
// decision 0046). Pure: the tenant's RulesObject keeps the changes (durable-objects/rules/unseen-changes.ts),
// the session's rules port asks it (durable-objects/session/tenant-rules.ts), the machine asks people.
//
// The property, with where each half is enforced:
// - **No chain of automatic steps runs what no person saw.** A step an allow rule answers whose effect
//   may depend on files (`readsProjectContent`: every command but the few that read no file's content,
//   every tool of a kind the gateway cannot read) is not answered while the tenant holds an unseen
//   change: people are asked, and shown what changed, where and by which step. Checked and noted in
//   the tenant's one RulesObject root, or by the session under its clean lease from that root, which
//   anything noting a change revokes first (protocol/unseen-lease.ts, decision 0058).
// - **An unseen change is what an automatic step may have written with content the agent chose.** A
//   file operation answered by a rule: every path it names (none known: anything). A command answered by a
//   rule: nothing when the closed-world table understands every word (tools.ts: git's read-only forms,
//   `npm test`, `make test`, `cargo check` — they write only what the project's own code writes, and
//   that code had no unseen change when it ran, by the first point); anything else (an exact-argv rule
//   on a program the table does not know, an exact tool call): anything. Kinds that read only: nothing.
// - **A run and an unseen change never overlap.** A step that reads, once a rule let it go, is an open
//   reader until its tool call is reported finished (or its turn ends); a rule-answered step that would
//   write while a reader is open is held for people instead (agents run tool calls in parallel: an
//   edit and `make test` answered together would race). A write is let go only once every session
//   that may answer readers itself has reported them (unseen-lease.ts).
// - **Seen means a person allowed a step whose card showed it** (decision 0064). The server sends what
//   can be shown: a request held by unseen changes carries the first few, each with the diff the agent
//   reported for it (kept with the change when it was noted, `diffOf`) or without one when none can be
//   shown (a command's `*`, an edit whose diff was not sent or is too large to carry), under a list id
//   drawn when the list was made. A person's allow (once or always, from a client) clears exactly the
//   listed changes its answer says its card showed, named against that list id (`seenBy`): a client
//   cannot claim a change it was not sent, nor one it was sent before the list reached it; a change
//   whose diff was carried was shown as its diff. One no diff can show is cleared only when the person
//   explicitly accepted what that step may have written (`accepted`, decision 0068), and only once the
//   step finished: a step still running may write after they looked. A client that says nothing, an
//   approval link (its page shows no list), and a reject clear nothing; changes past the listed few
//   stay unseen. A person's own allow of an edit adds nothing (they saw its diff) and clears nothing
//   (a diff shows a part of a file).
// Both the kind and the tool's fields are the agent's to choose: the operation is read by the same
// adapters the rules read (protocol/operation.ts), and whatever it cannot read is anything.

import { isObject } from "./jsonrpc";
import type { Operation } from "./operation";
import { derivablePrefix } from "./rules/coverage";
import { resolveAgainst, resolvePath } from "./rules/paths";

/** A change no person saw, as the tenant keeps it. */
export interface UnseenChange {
  /** Increasing per tenant: a person who saw the changes up to an id saw every one before it. */
  id: number;
  /** An absolute path, or ANYTHING when what the step changed cannot be named. */
  path: string;
  sessionId: string;
  toolCallId: string | null;
  /** The rule that answered the step. */
  ruleId: string | null;
  at: number;
  /** What the step's tool call reported it wrote there, carried to people; absent when none can be shown. */
  diff?: UnseenDiff;
  /** A change no diff can show: the step's command and the directory it ran in, when it had one (what a card says of it). */
  command?: string;
  cwd?: string;
  /**
   * Set when listed: the step that made it has not reported finishing (its tool call is still an open
   * reader), so it may still be writing and cannot be accepted yet (decision 0068).
   */
  running?: boolean;
}

/** A change's diff as the agent reported it on the (frozen) tool call that made it: what a card shows. */
export interface UnseenDiff {
  oldText: string | null;
  newText: string;
}

/** A change to note: what an automatic step may have written. */
export type NewUnseenChange = Omit<UnseenChange, "id" | "running">;

/** The path of a change whose extent is unknown: the step may have written anything the agent can. */
export const ANYTHING = "*";

/** A step a rule let go that may be reading the project now: open until its tool call finished or its turn ended. */
export interface OpenReader {
  sessionId: string;
  toolCallId: string;
  at: number;
}

/** A request an allow rule would answer, held for people: what they are shown. */
export interface UnseenHold {
  /** How many unseen changes the tenant holds (the first few are listed). */
  total: number;
  changes: UnseenChange[];
  /** The newest change's id (0: none). */
  upTo: number;
  /** Drawn when the changes were listed: an answer names the changes its card showed against it (`seenBy`). */
  listId?: string;
  /** A write held because these rule-answered steps may be reading the project now (the first few). */
  readers: OpenReader[];
}

/** What a rule-answered step asks of the tenant's unseen changes (durable-objects/rules/unseen-changes.ts). */
export interface UnseenGateRequest {
  /** It may read content: held while any change is unseen; let go, it is an open reader. */
  reads: boolean;
  /** What it may write: held while a reader is open; let go, noted as unseen. */
  note: NewUnseenChange[];
  /** Its session and tool call: the reader to open, and the one reader that cannot race itself. */
  sessionId: string;
  toolCallId: string | null;
}

/** How many changes a held request lists (the count says the rest). */
export const UNSEEN_LISTED = 20;

/** Kinds whose tools read and report, and change no file. */
const READ_ONLY_KINDS = new Set(["read", "search", "think"]);
/** Kinds the rules read by their paths: a file operation does not run what it touches. */
const FILE_KINDS = new Set(["read", "edit", "delete", "move"]);
const WRITING_FILE_KINDS = new Set(["edit", "delete", "move"]);

/**
 * Programs whose output never depends on a file's content: they list names and print where they are.
 * Closed world: every other program may read a file the agent wrote (make its makefile, git its
 * config and attributes and any repository it discovers, a test runner its tests, cat what it prints).
 */
const CONTENT_BLIND = new Set(["ls", "pwd"]);

/** Whether the step's effect may depend on a file's content, so an unseen change stops a rule answering it. */
export function readsProjectContent(op: Operation): boolean {
  if (FILE_KINDS.has(op.kind)) return false;
  if (op.kind !== "execute") return true;
  if (op.commands === null || op.commands.length === 0) return true;
  // The bare name only: `./ls` is a file in the project, and `/bin/ls` is judged like any path.
  return !op.commands.every((c) => CONTENT_BLIND.has(c.argv[0] ?? "") && !c.fuzzy[0]);
}

/** What the step may have written when an allow rule answered it: the paths, [ANYTHING], or none. */
export function changesOf(op: Operation): string[] {
  if (READ_ONLY_KINDS.has(op.kind)) return [];
  if (WRITING_FILE_KINDS.has(op.kind)) return op.paths && op.paths.length > 0 ? [...op.paths] : [ANYTHING];
  if (op.kind !== "execute" || op.commands === null || op.workdir === null) return [ANYTHING];
  const where = { workdir: op.workdir, project: op.workdir };
  // Every command a form the table understands in full (a prefix could be derived from it): it writes
  // what the project's own code writes.
  return op.commands.every((c) => derivablePrefix(c, where) !== null) ? [] : [ANYTHING];
}

/** What a held request's people are told, in one line. */
export function unseenMessage(hold: UnseenHold): string {
  if (hold.total === 0) {
    const n = hold.readers.length;
    return `A command a remembered rule allowed may be reading the project now (${n} step${n === 1 ? "" : "s"} not yet finished); a change made now would reach it unseen, so a person decides this one.`;
  }
  const named = hold.changes.slice(0, 3).map((c) => (c.path === ANYTHING ? "files a command may have written" : c.path));
  const more = hold.total > named.length ? ` and ${hold.total - named.length} more` : "";
  return `The agent changed ${named.join(", ")}${more} since anyone looked, with no person asked; a remembered rule does not answer a step that may read them. Allowing this from a card that shows them marks them seen; what cannot be shown, only once a person accepts it.`;
}

/** The most text (old and new together) a change's diff may have to be carried to people; a larger one cannot be shown. */
export const UNSEEN_DIFF_CHARS = 8192;

/**
 * The diff a rule-answered file operation reported for `path` (a `content` item of type `diff` whose
 * path resolves to it, as the rules resolve paths): what a card can show of the change. None when the
 * tool call reported none for that path, several (no one diff is the change), or one too large to carry.
 */
export function diffOf(toolCall: Record<string, unknown>, cwd: string, path: string): UnseenDiff | undefined {
  const content = Array.isArray(toolCall.content) ? toolCall.content : [];
  const base = resolvePath(cwd);
  const diffs = content.filter(
    (c): c is Record<string, unknown> =>
      isObject(c) && c.type === "diff" && typeof c.path === "string" && resolveAgainst(c.path, base) === path,
  );
  const [only] = diffs;
  if (diffs.length !== 1 || !only || typeof only.newText !== "string") return undefined;
  const oldText = typeof only.oldText === "string" ? only.oldText : null;
  if ((oldText?.length ?? 0) + only.newText.length > UNSEEN_DIFF_CHARS) return undefined;
  return { oldText, newText: only.newText };
}

/** The most characters of a command a change keeps to be shown (a longer one is cut, and says so). */
export const UNSEEN_COMMAND_CHARS = 2000;

/** What a card can say of a change no diff shows: the step's command and its directory, when it ran one. */
export function stepOf(op: Pick<Operation, "command" | "workdir">): { command?: string; cwd?: string } {
  if (op.command === null) return {};
  const command = op.command.length > UNSEEN_COMMAND_CHARS ? `${op.command.slice(0, UNSEEN_COMMAND_CHARS)}… (cut)` : op.command;
  return { command, ...(op.workdir !== null ? { cwd: op.workdir } : {}) };
}

/**
 * What an answer says its card showed: `_meta.acpGateway.shown {list, changes: [ids], accepted: [ids]}`.
 * `changes`: the listed changes whose diff the card showed. `accepted`: the listed changes no diff can
 * show that the person ticked "I accept what this may have written" for (decision 0068).
 */
export interface ShownClaim {
  list: string;
  changes: number[];
  accepted: number[];
}

/** The answer's claim, or null when it makes none (or one that cannot be read: nothing is claimed). */
export function shownClaimOf(result: unknown): ShownClaim | null {
  const meta = isObject(result) && isObject(result._meta) ? result._meta : undefined;
  const gateway = meta && isObject(meta.acpGateway) ? meta.acpGateway : undefined;
  const shown = gateway && isObject(gateway.shown) ? gateway.shown : undefined;
  if (!shown || typeof shown.list !== "string" || !Array.isArray(shown.changes)) return null;
  return { list: shown.list, changes: idsOf(shown.changes), accepted: Array.isArray(shown.accepted) ? idsOf(shown.accepted) : [] };
}

function idsOf(values: unknown[]): number[] {
  return values.filter((id): id is number => Number.isSafeInteger(id)).slice(0, UNSEEN_LISTED);
}

/**
 * Which unseen changes a person's allow marks seen: of the changes the request's copies listed (`held`,
 * as the server sent them), those the answer's card showed (`claim`, named against the list's id).
 * A listed change sent with its diff is seen when the answer names it in `changes`: what the card
 * showed of it is that diff. One no diff can show (a command's `*`, an edit without a diff to carry)
 * is seen only when the answer names it in `accepted` — the person ticked "I accept what this may have
 * written" for that change — and only once the step that made it finished (not `running`: a step
 * still running may write after the person looked). Naming it in `changes` alone clears nothing
 * (decision 0068). Nothing else: not a change the list did not carry (past the first few, or noted
 * since), not a claim against another list, not an answer without one.
 */
export function seenBy(held: UnseenHold | undefined, claim: ShownClaim | null): number[] {
  if (!held?.listId || !claim || claim.list !== held.listId) return [];
  const named = new Set(claim.changes);
  const accepted = new Set(claim.accepted);
  const seen = held.changes.filter((c) => (c.diff ? named.has(c.id) : accepted.has(c.id) && !c.running));
  return [...new Set(seen.map((c) => c.id))].sort((a, b) => a - b);
}
