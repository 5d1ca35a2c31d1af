// The decision audit row of one resolved permission request (db/queries/audit.ts), built from the
// parsed request, the operation frozen when it was asked (decision 0040: what people were shown and
// the rules judged, not the row as the agent changed it since), and who decided. Entries wait in
// their request's own log entry (audit-outbox.ts) until D1 takes them.

import type { AuditEntry } from "../../db/queries/audit";
import { isObject } from "../../protocol/jsonrpc";
import { randomId } from "../../protocol/ids";
import { operationSummary } from "../../protocol/operation";
import type { PermissionOption } from "../../protocol/permissions";
import { sha256HexSync } from "../../protocol/sha256";
import type { DecidedBy, PendingRequest } from "../../protocol/pending-permission";
import type { SessionMeta } from "./store-meta";

export function auditEntry(
  meta: SessionMeta,
  pending: PendingRequest,
  outcome: unknown,
  by: DecidedBy,
  chosen?: PermissionOption,
): AuditEntry {
  const kindOfOutcome = isObject(outcome) && typeof outcome.outcome === "string" ? outcome.outcome : "withdrawn";
  const selected = isObject(outcome) && outcome.outcome === "selected" ? String(outcome.optionId) : null;
  const option = chosen ?? pending.options.find((o) => o.optionId === selected);
  const op = pending.operation;
  return {
    id: randomId("aud"),
    tenantId: meta.tenantId,
    sessionId: meta.sessionId,
    agent: meta.agent,
    toolCallId: pending.toolCallId,
    kind: typeof op.kind === "string" ? op.kind : null,
    name: typeof op.name === "string" ? op.name : null,
    // The operation as the audit shows it: the command, else the paths (protocol/operation.ts), bounded below.
    operation: Object.keys(op).length > 0 ? operationSummary(op, meta.cwd) : null,
    outcome: kindOfOutcome === "selected" || kindOfOutcome === "cancelled" ? kindOfOutcome : "withdrawn",
    optionId: option?.optionId ?? null,
    optionKind: option?.kind ?? null,
    decidedBy: by.type,
    decidedByKey: by.type === "person" ? by.keyId : by.type === "link" ? by.linkId : null,
    decidedByUser: by.type === "person" ? by.user : by.type === "link" ? `approval link via ${by.target}` : null,
    decidedByIssuer: by.type === "person" ? (by.person?.issuer ?? null) : null,
    decidedBySubject: by.type === "person" ? (by.person?.subject ?? null) : null,
    decidedByRole: by.type === "person" ? (by.role ?? null) : null,
    decidedByConnection: by.type === "person" ? by.connectionId : null,
    policy: by.type === "person" ? (by.policy ?? null) : null,
    approvedBy:
      by.type === "person" && by.approvedBefore
        ? JSON.stringify(by.approvedBefore.map((a) => ({ user: a.user, role: a.role, connectionId: a.connectionId, at: a.at })))
        : null,
    ruleId: by.type === "rule" ? by.ruleId : null,
    // A person's own reason for their answer (decision 0048); a refusal's entry says why it was refused instead.
    reason: by.type === "person" || by.type === "link" ? (by.reason ?? null) : null,
    at: Date.now(),
  };
}

/**
 * An audit row holds at most this much of the operation (UTF-8 bytes): one tenant's agent sending
 * 900 KB commands must not fill the shared D1 (decision 0022). Past it the text is cut and followed
 * by its full length and SHA-256; the full command stays in the request's log entry and the tool
 * call's row, in the session's own storage.
 */
export const MAX_AUDIT_OPERATION_BYTES = 4 * 1024;
/** The agent's other free-text fields in the row (kind, tool name, tool call id). */
const MAX_AUDIT_FIELD_BYTES = 256;

/** `text` within `max` UTF-8 bytes: itself, or its head followed by its length and SHA-256. */
function boundedText(text: string, max: number): string {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most texts are bounded without encoding anything.
  if (text.length * 3 <= max) return text;
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= max) return text;
  const note = ` … [cut: ${bytes.length} bytes in full, sha256 ${sha256HexSync(text)}]`;
  // A cut inside a character decodes to U+FFFD (3 bytes): still valid text, and within the bound.
  const kept = new TextDecoder().decode(bytes.subarray(0, Math.max(0, max - note.length - 3)));
  return kept + note;
}

/** The entry with every agent-controlled text bounded (the operation, then the short fields). */
export function boundedEntry(entry: AuditEntry): AuditEntry {
  const short = (v: string | null | undefined) => (typeof v === "string" ? boundedText(v, MAX_AUDIT_FIELD_BYTES) : (v ?? null));
  return {
    ...entry,
    operation: typeof entry.operation === "string" ? boundedText(entry.operation, MAX_AUDIT_OPERATION_BYTES) : (entry.operation ?? null),
    kind: short(entry.kind),
    name: short(entry.name),
    toolCallId: short(entry.toolCallId),
  };
}

/**
 * The one audit row that counts a session's out-of-turn requests past the rate in one window: its
 * id is the window's, so each later request replaces it (audit-outbox.ts writes only the last of
 * a batch, db/queries/audit.ts updates the row) and D1 holds one row per window, not one per request.
 */
export function outsideTurnSummary(latest: AuditEntry, windowStart: number, over: number, rate: number): AuditEntry {
  const when = new Date(windowStart).toISOString();
  return {
    ...latest,
    id: `aud_ot_${sha256HexSync(`${latest.tenantId}/${latest.sessionId}/${windowStart}`).slice(0, 32)}`,
    toolCallId: null,
    operation: boundedText(
      `${over} more permission request${over === 1 ? "" : "s"} outside a turn in the minute from ${when} (past ${rate} a minute) ${over === 1 ? "was" : "were"} answered cancelled and counted here, not audited one by one; ${latestOf(latest)}`,
      MAX_AUDIT_OPERATION_BYTES,
    ),
  };
}

/** The latest request's operation, when short enough to quote in the summary. */
function latestOf(latest: AuditEntry): string {
  const op = latest.operation ?? latest.name ?? null;
  if (op === null) return "";
  return op.length <= 1024 ? `; the latest: ${op}` : "; the latest was long: it is in the session's log";
}

/**
 * The entry once the tenant's audit budget for the day is spent: who decided, how, and the
 * operation's length and SHA-256 (of the full text, when the bound had cut it), not its text.
 */
export function summarisedEntry(entry: AuditEntry): AuditEntry {
  const op = entry.operation ?? null;
  let digest: string | null = null;
  if (op !== null) {
    const cut = /\[cut: (\d+) bytes in full, sha256 ([0-9a-f]{64})\]$/.exec(op);
    const [bytes, hash] = cut ? [Number(cut[1]), cut[2]] : [new TextEncoder().encode(op).length, sha256HexSync(op)];
    digest = `[text not kept: the tenant's audit budget for today is spent; ${bytes} bytes, sha256 ${hash}]`;
  }
  const short = (v: string | null | undefined) => (typeof v === "string" ? boundedText(v, 64) : (v ?? null));
  return { ...entry, operation: digest, name: short(entry.name), kind: short(entry.kind) };
}
