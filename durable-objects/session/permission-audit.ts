// The decision audit row of one resolved permission request (db/queries/audit.ts), built from the
// parsed request, the tool call as the session's table holds it, and who decided. Entries wait in
// their request's own log entry (audit-outbox.ts) until D1 takes them.

import type { AuditEntry } from "../../db/queries/audit";
import { isObject } from "../../protocol/jsonrpc";
import { randomId } from "../../protocol/ids";
import { operationSummary } from "../../protocol/operation";
import type { PermissionOption } from "../../protocol/permissions";
import type { ToolCallRow } from "../../protocol/tool-calls";
import { MAX_STORED_ROW_BYTES } from "../../protocol/limits";
import type { DecidedBy } from "./contract";
import type { PendingRequest, SessionMeta } from "./store";

export function auditEntry(
  meta: SessionMeta,
  pending: PendingRequest,
  row: ToolCallRow | undefined,
  outcome: unknown,
  by: DecidedBy,
  chosen?: PermissionOption,
): AuditEntry {
  const kindOfOutcome = isObject(outcome) && typeof outcome.outcome === "string" ? outcome.outcome : "withdrawn";
  const selected = isObject(outcome) && outcome.outcome === "selected" ? String(outcome.optionId) : null;
  const option = chosen ?? pending.options.find((o) => o.optionId === selected);
  return {
    id: randomId("aud"),
    tenantId: meta.tenantId,
    sessionId: meta.sessionId,
    agent: meta.agent,
    toolCallId: pending.toolCallId,
    kind: typeof row?.kind === "string" ? row.kind : null,
    name: typeof row?.name === "string" ? row.name : null,
    // The operation in full, as the audit shows it: the command, else the paths (protocol/operation.ts).
    operation: row ? operationSummary(row, meta.cwd) : null,
    outcome: kindOfOutcome === "selected" || kindOfOutcome === "cancelled" ? kindOfOutcome : "withdrawn",
    optionId: option?.optionId ?? null,
    optionKind: option?.kind ?? null,
    decidedBy: by.type,
    decidedByKey: by.type === "person" ? by.keyId : by.type === "link" ? by.linkId : null,
    decidedByUser: by.type === "person" ? by.user : by.type === "link" ? `approval link via ${by.target}` : null,
    ruleId: by.type === "rule" ? by.ruleId : null,
    at: Date.now(),
  };
}

/** Room in the request's log row for all but the agent's frame and the operation (request, resolution, the audit's other fields). */
const ROW_MARGIN = 64 * 1024;

/**
 * The entry is stored in its request's log row, next to the agent's frame (`params`, within the
 * frame limit), and together they must stay within SQLite's row cap. An operation too long for that
 * (a command near the frame limit in a request near it too) is cut to fit, saying so; the full
 * command stays in the request's log entry and the tool call's row.
 */
export function fitToRow(entry: AuditEntry, params: string): AuditEntry {
  const operation = entry.operation;
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most entries are decided without encoding anything.
  if (!operation || (params.length + operation.length) * 3 + ROW_MARGIN <= MAX_STORED_ROW_BYTES) return entry;
  const encoder = new TextEncoder();
  const bytes = encoder.encode(operation);
  const room = MAX_STORED_ROW_BYTES - ROW_MARGIN - encoder.encode(params).length;
  if (bytes.length <= room) return entry;
  const note = ` … (cut to fit: ${bytes.length} bytes in full, in the request's log entry)`;
  // A cut inside a character decodes to U+FFFD: still valid text.
  const kept = new TextDecoder().decode(bytes.subarray(0, Math.max(0, room - 3 * note.length)));
  return { ...entry, operation: kept + note };
}
