// The session's durable state, in the Durable Object's own SQLite database.
// Everything the object needs to answer a message lives here, so an evicted or hibernated object
// comes back whole: what is kept in memory (the pending permission requests, the audit cursor, the
// id block) is rebuilt from these tables when the object starts, and the meta rows are read once,
// then held (written through). The tables' layout and its migrations are in store-migrations.ts.
// One class to its callers, in three layers of one concern each: the meta rows (store-meta.ts), the
// log and the tool calls (store-log.ts), and here the permission requests.
//
// Rows written (docs/decisions/0008-performance.md, "Rows per permission request"): a permission request is ONE
// log row, inserted once with what the request needs while pending (`request`) and updated once
// when it is resolved (`resolved`, `resolved_at`, and its decision audit entry `audit`, which is the
// audit outbox: audit-outbox.ts). Pending requests are held in memory and found again at start by
// one scan of the log from `scan_from`, a lower bound every log write carries (like `agent_seq`).
// Every statement is synchronous (ctx.storage.sql), so a handler that only touches the store runs
// atomically with respect to other events delivered to the object.

import { type JsonRpcId, isObject } from "../../protocol/jsonrpc";
import { type Approval, type PendingRequest, parsePermissionParams } from "../../protocol/pending-permission";
import type { Decided, Resolution } from "../../protocol/permission-machine";
import { freezeOperation } from "../../protocol/frozen-operation";
import type { FourEyesNeed } from "../../protocol/people/four-eyes";
import type { UnseenHold } from "../../protocol/unseen";
import { type MigrationOutcome, type MigrationStorage, migrateStorage } from "./store-migrations";
import { type LogKind, SessionLogRows } from "./store-log";
import { auditEntry, boundedEntry } from "./permission-audit";

export type { SessionMeta } from "./store-meta";
export type { LogKind } from "./store-log";

/** What a permission request's `request` column holds (the rest of a PendingRow is in its entry). */
interface RequestColumn {
  agentReqId: JsonRpcId;
  agentEpoch: number;
  toolCallId: string | null;
  createdAt: number;
  deadlineAt: number;
  asking: number;
  fourEyes?: FourEyesNeed | null;
  approvals?: Approval[];
  /** The digest of the operation frozen when it was asked (decision 0040); absent in entries written before it. */
  operationHash?: string;
  /** The frozen operation itself when it is small (no row of its own to write and delete); else it is in `frozen_operations`. */
  operation?: Record<string, unknown>;
  replaces?: { permId: number; changed: string[] };
  /** Held for people by the tenant's unseen changes (decision 0046). */
  unseen?: UnseenHold;
}

export type { Approval, PendingRequest } from "../../protocol/pending-permission";

export class SessionStore extends SessionLogRows {
  /** What this start did to the storage's layout (store-migrations.ts): the version found and left, the migrations run. */
  readonly schema: MigrationOutcome;

  constructor(storage: MigrationStorage) {
    // The layout first: every layer reads its tables as it is built.
    const schema = migrateStorage(storage);
    super(storage.sql);
    this.schema = schema;
    // The one scan at start: the unresolved requests, from the lower bound the newest entry carries.
    const rows = this.sql
      .exec<{ seq: number; body: string; request: string }>(
        "SELECT seq, body, request FROM log WHERE seq >= ? AND kind = 'permission' AND request IS NOT NULL AND resolved IS NULL ORDER BY seq",
        this.startScanFrom,
      )
      .toArray();
    for (const r of rows) this.open.set(r.seq, this.pendingOf(r.seq, r.body, JSON.parse(r.request) as RequestColumn));
  }
  /** session/delete: the session, its log, tool calls and requests are gone (audit entries not yet in D1 stay until they are). */
  forget(): void {
    for (const table of ["meta", "tool_calls", "agent_requests", "inflight", "frozen_operations"]) this.sql.exec(`DELETE FROM ${table}`);
    this.forgetMeta();
    this.sql.exec("DELETE FROM log WHERE audit IS NULL OR seq <= ?", this.auditCursor);
    // Seqs restart above what is left: the cursor must not stand above entries written from now on.
    this.auditCursor = Math.min(this.auditCursor, this.lastSeq());
    this.open.clear();
  }

  /** How many pending requests are asked of people (not those the rules are still deciding). */
  waitingOnPeople(): number {
    let n = 0;
    for (const p of this.open.values()) if (p.asking > 0) n++;
    return n;
  }

  // ── permission requests: one log entry each (kind `permission`) ──────────
  /** The seq the next log entry gets (no AUTOINCREMENT: the highest seq plus one; the newest is never removed). */
  nextSeq(): number {
    return this.lastSeq() + 1;
  }
  /**
   * A permission request's log entry, written once: pending (`request` set, it joins the pending
   * requests), already resolved (`resolution`: a rule's answer, a refusal), or neither (refused over
   * the limit: nothing is pending and nothing is audited). `seq` must be nextSeq().
   */
  appendPermission(seq: number, body: string, request: PendingRequest | null, resolution?: Resolution): void {
    const at = Date.now();
    this.lastLogWriteAt = at;
    this.sql.exec(
      "INSERT INTO log (seq, kind, body, at, agent_seq, scan_from, request, resolved, resolved_at, audit) VALUES (?, 'permission', ?, ?, ?, ?, ?, ?, ?, ?)",
      seq,
      body,
      at,
      this.appliedAgentSeq,
      Math.min(this.scanFrom(), seq),
      request ? requestColumn(request) : null,
      resolution?.text ?? null,
      resolution ? at : null,
      resolution?.audit ? JSON.stringify(resolution.audit) : null,
    );
    if (request && !resolution) {
      if (!inlineOperation(request)) this.freeze(request);
      this.open.set(seq, request);
      this.liveChanged?.();
    }
  }
  /**
   * A pending request's frozen operation, in a row of its own: with the agent's frame in the log entry
   * it could pass SQLite's row cap (the machine refuses one that is past it alone: tooLargeToFreeze).
   */
  private freeze(request: PendingRequest): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO frozen_operations (perm_id, operation) VALUES (?, ?)",
      request.permId,
      JSON.stringify(request.operation),
    );
  }
  /**
   * A pending request from its entry: the agent's frame (its params), the request column and its frozen
   * operation. An entry from before operations were frozen is frozen as it is read: its tool call over the row now.
   */
  private pendingOf(seq: number, body: string, r: RequestColumn): PendingRequest {
    const params = JSON.stringify((JSON.parse(body) as { params?: unknown }).params ?? null);
    const parsed = parsePermissionParams(params);
    const kept = r.operation
      ? r.operation
      : (() => {
          const row = this.sql.exec<{ operation: string }>("SELECT operation FROM frozen_operations WHERE perm_id = ?", seq).toArray()[0];
          return row ? (JSON.parse(row.operation) as Record<string, unknown>) : undefined;
        })();
    const frozen =
      kept && r.operationHash
        ? { operation: kept, operationHash: r.operationHash }
        : freezeOperation(r.toolCallId ? this.toolCall(r.toolCallId) : undefined, parsed.toolCall);
    return { ...parsed, ...r, ...frozen, permId: seq, params };
  }
  markAsking(permId: number, asking: number, unseen?: UnseenHold): void {
    const pending = this.open.get(permId);
    if (!pending) return;
    pending.asking = asking;
    if (unseen) pending.unseen = unseen;
    this.sql.exec("UPDATE log SET request = ? WHERE seq = ?", requestColumn(pending), permId);
    this.liveChanged?.();
  }
  /** A first approval of a request that needs two: kept in its request column (it survives eviction). */
  recordApproval(permId: number, approval: Approval): void {
    const pending = this.open.get(permId);
    if (!pending) return;
    pending.approvals = [...(pending.approvals ?? []), approval];
    this.sql.exec("UPDATE log SET request = ? WHERE seq = ?", requestColumn(pending), permId);
  }
  /** What the four-eyes policy asks of a pending request, decided once when people are first asked. */
  setFourEyes(permId: number, need: FourEyesNeed | null): void {
    const pending = this.open.get(permId);
    if (!pending) return;
    pending.fourEyes = need;
    this.sql.exec("UPDATE log SET request = ? WHERE seq = ?", requestColumn(pending), permId);
  }
  /** An entry that is only audit trail (a refused answer): not replayed, its audit row goes to D1 like a resolution's. */
  appendAudited(kind: LogKind, body: string, audit: object): void {
    const at = Date.now();
    this.lastLogWriteAt = at;
    this.sql.exec(
      "INSERT INTO log (kind, body, at, agent_seq, scan_from, audit) VALUES (?, ?, ?, ?, ?, ?)",
      kind,
      body,
      at,
      this.appliedAgentSeq,
      this.scanFrom(),
      JSON.stringify(audit),
    );
  }
  /**
   * A request resolved (or its resolution replaced, while its answer was on its way): one UPDATE of its
   * entry with the resolution's text and audit entry. It is no longer pending.
   */
  resolvePermission(pending: PendingRequest, text: string, decided: Decided): void {
    const { permId } = pending;
    const meta = this.meta;
    // The operation as frozen when it was asked: what people were shown and the rules judged.
    const audit = meta ? boundedEntry(auditEntry(meta, pending, decided.outcome, decided.by, decided.chosen)) : null;
    if (this.open.delete(permId)) this.liveChanged?.();
    // Its audit entry is written with the resolution: the frozen operation is not needed any more (reopened: written again).
    this.sql.exec("DELETE FROM frozen_operations WHERE perm_id = ?", permId);
    this.sql.exec(
      "UPDATE log SET resolved = ?, resolved_at = ?, audit = ? WHERE seq = ?",
      text,
      Date.now(),
      audit ? JSON.stringify(audit) : null,
      permId,
    );
  }
  /** A resolution whose answer never reached the agent: the request is pending again (asked again). */
  reopenPermission(pending: PendingRequest): void {
    if (!inlineOperation(pending)) this.freeze(pending);
    this.open.set(pending.permId, pending);
    this.liveChanged?.();
    this.sql.exec(
      "UPDATE log SET request = ?, resolved = NULL, resolved_at = NULL, audit = NULL WHERE seq = ?",
      requestColumn(pending),
      pending.permId,
    );
  }
  /** The text of a request's resolution, if it has one (approval links: who answered). */
  resolutionOf(permId: number, toolCallId: string | null): string | undefined {
    const own = this.sql.exec<{ resolved: string | null }>("SELECT resolved FROM log WHERE seq = ?", permId).toArray()[0]?.resolved;
    if (own) return own;
    // Sessions from before resolutions were written in place: a separate entry after the request.
    const legacy = this.sql
      .exec<{ body: string }>("SELECT body FROM log WHERE kind = 'resolution' AND seq > ? ORDER BY seq LIMIT 200", permId)
      .toArray();
    for (const { body } of legacy) {
      const entry = JSON.parse(body) as Record<string, unknown>;
      const params = isObject(entry.params) ? entry.params : entry;
      if (entry.permId === permId || (toolCallId !== null && params.toolCallId === toolCallId)) return body;
    }
    return undefined;
  }
  /** The latest resolution time among the requests after `fromSeq` (a person's answer is a turn's progress). */
  lastResolvedAt(fromSeq: number): number | undefined {
    return this.sql.exec<{ at: number | null }>("SELECT max(resolved_at) AS at FROM log WHERE seq > ?", fromSeq).one().at ?? undefined;
  }
  pendingCount(): number {
    return this.open.size;
  }
  /** The text a request's entry was resolved with (its own column; not the separate entries of old sessions). */
  resolvedText(permId: number): string | undefined {
    return this.sql.exec<{ resolved: string | null }>("SELECT resolved FROM log WHERE seq = ?", permId).toArray()[0]?.resolved ?? undefined;
  }
  isPending(permId: number): boolean {
    return this.open.has(permId);
  }
  hasPending(): boolean {
    return this.open.size > 0;
  }
  hasAsking(): boolean {
    for (const p of this.open.values()) if (p.asking > 0) return true;
    return false;
  }
  pending(): PendingRequest[] {
    return [...this.open.values()].sort((a, b) => a.permId - b.permId);
  }
  pendingById(permId: number): PendingRequest | undefined {
    return this.open.get(permId);
  }
  pendingByAgentId(agentReqId: JsonRpcId, epoch: number): PendingRequest | undefined {
    for (const p of this.open.values()) if (p.agentReqId === agentReqId && p.agentEpoch === epoch) return p;
    return undefined;
  }
  nextDeadline(): number | undefined {
    let next: number | undefined;
    for (const p of this.open.values()) next = next === undefined ? p.deadlineAt : Math.min(next, p.deadlineAt);
    return next;
  }
}

function requestColumn(p: PendingRequest): string {
  const column: RequestColumn = {
    agentReqId: p.agentReqId,
    agentEpoch: p.agentEpoch,
    toolCallId: p.toolCallId,
    createdAt: p.createdAt,
    deadlineAt: p.deadlineAt,
    asking: p.asking,
    ...(p.fourEyes ? { fourEyes: p.fourEyes } : {}),
    ...(p.approvals && p.approvals.length > 0 ? { approvals: p.approvals } : {}),
    operationHash: p.operationHash,
    ...(p.replaces ? { replaces: p.replaces } : {}),
    ...(p.unseen ? { unseen: p.unseen } : {}),
    ...(inlineOperation(p) ? { operation: p.operation } : {}),
  };
  return JSON.stringify(column);
}

/**
 * A frozen operation this small is kept in its entry's request column: asking and resolving a request
 * then writes the same rows as before operations were frozen (compaction-cost.test.ts). A larger one
 * gets a row of its own, so that with the agent's frame in the entry it stays under SQLite's row cap.
 */
const INLINE_OPERATION_CHARS = 16 * 1024;
function inlineOperation(p: PendingRequest): boolean {
  return JSON.stringify(p.operation).length <= INLINE_OPERATION_CHARS;
}
