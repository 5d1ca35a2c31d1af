// The files an apply_patch names: in codex's patch text (`*** Update File: path`, `*** Move to:`),
// or in codex's approval event (`changes`, keyed by path, an update maybe moving the file). Null
// when the text or the object is not one the gateway can read in full: a file it missed could be
// one the patch writes.

import { isObject } from "../jsonrpc";

const FILE_LINE = /^\*\*\* (Add File|Update File|Delete File|Move to): (.+)$/;

/** Every path a patch text names, or null when it is not a well-formed patch. */
export function patchFiles(text: string): string[] | null {
  const lines = text.replace(/\r\n/g, "\n").replace(/\n$/, "").split("\n");
  if (lines[0]?.trim() !== "*** Begin Patch" || lines[lines.length - 1]?.trim() !== "*** End Patch") return null;
  const files: string[] = [];
  for (const line of lines.slice(1, -1)) {
    if (!line.startsWith("***")) continue;
    const m = FILE_LINE.exec(line);
    if (m) files.push((m[2] as string).trim());
    else if (line !== "*** End of File") return null;
  }
  return files.length > 0 ? files : null;
}

/** Every path of codex's `changes` (keys and move targets), or null when one change is not understood. */
export function changeFiles(changes: unknown): string[] | null {
  if (!isObject(changes)) return null;
  const files: string[] = [];
  for (const [path, change] of Object.entries(changes)) {
    files.push(path);
    const move = moveTarget(change);
    if (move === undefined) return null;
    if (move !== null) files.push(move);
  }
  return files.length > 0 ? files : null;
}

/** A change's move target, null for none, undefined when the change is not one codex sends. */
function moveTarget(change: unknown): string | null | undefined {
  if (!isObject(change)) return undefined;
  // codex serialises FileChange tagged by `type` (add, delete, update); older builds wrapped it by name.
  const body = typeof change.type === "string" ? change : Object.keys(change).length === 1 ? Object.values(change)[0] : undefined;
  const type = typeof change.type === "string" ? change.type : Object.keys(change)[0];
  if (!isObject(body)) return undefined;
  const allowed =
    type === "update" ? ["type", "unified_diff", "move_path"] : type === "add" || type === "delete" ? ["type", "content"] : null;
  if (allowed === null || Object.keys(body).some((k) => !allowed.includes(k))) return undefined;
  const move = body.move_path;
  if (move === undefined || move === null) return null;
  return typeof move === "string" ? move : undefined;
}
