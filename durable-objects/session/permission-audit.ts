// The decision audit row of one resolved permission request (db/queries/audit.ts), built from the
// parsed request, the tool call as the session's table holds it, and who decided. Rows wait in the
// session's outbox (audit-outbox.ts) until D1 takes them.

import type { AuditEntry } from "../../db/queries/audit";
import { isObject } from "../../protocol/jsonrpc";
import { randomId } from "../../protocol/ids";
import { operationSummary } from "../../protocol/operation";
import type { PermissionOption } from "../../protocol/permissions";
import type { ToolCallRow } from "../../protocol/tool-calls";
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
