// The session's durable state, in the Durable Object's own SQLite database.
// Everything the object needs to answer a message lives here, so an evicted or hibernated object
// comes back whole: what is kept in memory (the pending permission requests, the audit cursor, the
// id block) is rebuilt from these tables when the object starts, and the meta rows are read once,
// then held (written through). The tables' layout and its migrations are in store-migrations.ts.
//
// Rows written (docs/decisions/0008-performance.md, "Rows per permission request"): a permission request is ONE
// log row, inserted once with what the request needs while pending (`request`) and updated once
// when it is resolved (`resolved`, `resolved_at`, and its decision audit entry `audit`, which is the
// audit outbox: audit-outbox.ts). Pending requests are held in memory and found again at start by
// one scan of the log from `scan_from`, a lower bound every log write carries (like `agent_seq`).
// Every statement is synchronous (ctx.storage.sql), so a handler that only touches the store runs
// atomically with respect to other events delivered to the object.

import { type JsonRpcId, isObject } from "../../protocol/jsonrpc";
import type { Limits } from "../../protocol/tenant-limits";
import { reduceToolCall, type ToolCallRow } from "../../protocol/tool-calls";
import { MAX_STORED_ROW_BYTES, utf8LongerThan } from "../../protocol/limits";
import { type Approval, type PendingRequest, parsePermissionParams } from "../../protocol/pending-permission";
import type { Resolution } from "../../protocol/permission-machine";
import { freezeOperation } from "../../protocol/frozen-operation";
import type { LiveRecord } from "../../protocol/live-state";
import type { FourEyesNeed } from "../../protocol/people/four-eyes";
import type { UnseenHold } from "../../protocol/unseen";
import { type MigrationOutcome, type MigrationStorage, migrateStorage } from "./store-migrations";
import { sessionLog } from "./session-log";
import { MetaTable } from "../meta-table";
import type { LogRow } from "../../protocol/replayed-history";
import type { SessionHold } from "../../protocol/unasked-runs";
import type { TurnState } from "../../protocol/turn-state";

/** Log kinds. `update` and `ext` entries are replayed to attaching clients; the rest is audit trail. */
export type LogKind = "update" | "ext" | "permission" | "resolution" | "prompt" | "turn_end" | "notice" | "refusal";

export interface SessionMeta {
  tenantId: string;
  sessionId: string;
  agent: string;
  cwd: string;
  title?: string | null;
  createdBy?: string | null;
  deadlineMs: number;
  /** Tenant setting: relay a person's *_always choice to the agent as made, instead of as *_once. */
  relayAlwaysAsMade?: boolean;
  /** The tenant's limit overrides when the session was opened (protocol/tenant-limits.ts). */
  limits?: Partial<Limits>;
  /** The agent's session/new or session/load result, answered again on attach (modes, models…). */
  result?: Record<string, unknown>;
  createdAt: number;
}

/** How far back an idle session looks for the request that named a tool call reported finished. */
const WAS_ASKED_WINDOW = 10_000;

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

const IDLE: TurnState = Object.freeze({ state: "idle" });

/** How many ids nextId() reserves with one write. */
const ID_BLOCK = 1000;

export { type Approval, type PendingRequest, permIdOfCopy } from "../../protocol/pending-permission";

export class SessionStore {
  /**
   * The highest AgentObject item number applied (agent-delivery.ts). Every log write carries it in
   * `agent_seq`, so the log's newest entry holds it durably: de-duplication costs no row of its own.
   */
  appliedAgentSeq: number;
  /**
   * Every audit entry at or below this seq is in D1 (audit-outbox.ts). Held in memory; every log
   * write carries a lower bound of it in `scan_from`, so after a restart a few entries may go to D1
   * again, which D1 ignores (each entry carries its own id).
   */
  auditCursor: number;
  /** Seqs of resolutions whose answer is on its way to the agent: not final until it arrives (audit waits). */
  readonly held = new Set<number>();
  /** The pending permission requests, by permId: rebuilt from the log at start. */
  private readonly open = new Map<number, PendingRequest>();
  /** When this instance last wrote the log (turn-watch.ts: such a write is progress recorded). */
  lastLogWriteAt = 0;
  /** The highest id nextId() gave, and the highest reserved in meta. */
  private idNext: number | undefined;
  private idCeiling = 0;

  private readonly sql: SqlStorage;
  /** What this start did to the storage's layout (store-migrations.ts): the version found and left, the migrations run. */
  readonly schema: MigrationOutcome;

  constructor(storage: MigrationStorage) {
    const sql = storage.sql;
    this.sql = sql;
    this.schema = migrateStorage(storage);
    this.metaRows = new MetaTable(sql);
    const newest = sql
      .exec<{ agent_seq: number | null; scan_from: number | null }>("SELECT agent_seq, scan_from FROM log ORDER BY seq DESC LIMIT 1")
      .toArray()[0];
    this.appliedAgentSeq = newest?.agent_seq ?? 0;
    const scanFrom = newest?.scan_from ?? 0;
    this.auditCursor = Math.max(0, scanFrom - 1);
    // The one scan at start: the unresolved requests, from the lower bound the newest entry carries.
    const rows = sql
      .exec<{ seq: number; body: string; request: string }>(
        "SELECT seq, body, request FROM log WHERE seq >= ? AND kind = 'permission' AND request IS NOT NULL AND resolved IS NULL ORDER BY seq",
        scanFrom,
      )
      .toArray();
    for (const r of rows) this.open.set(r.seq, this.pendingOf(r.seq, r.body, JSON.parse(r.request) as RequestColumn));
  }
  /** session/delete: the session, its log, tool calls and requests are gone (audit entries not yet in D1 stay until they are). */
  forget(): void {
    for (const table of ["meta", "tool_calls", "agent_requests", "inflight", "frozen_operations"]) this.sql.exec(`DELETE FROM ${table}`);
    this.metaRows.forgetAll();
    this.sql.exec("DELETE FROM log WHERE audit IS NULL OR seq <= ?", this.auditCursor);
    // Seqs restart above what is left: the cursor must not stand above entries written from now on.
    this.auditCursor = Math.min(this.auditCursor, this.lastSeq());
    this.open.clear();
    this.idNext = undefined;
    this.idCeiling = 0;
  }

  // ── meta ──────────────────────────────────────────────────────────────────
  /** The meta rows as parsed, read from SQLite at most once per instance (meta-table.ts). */
  private readonly metaRows: MetaTable;

  get meta(): SessionMeta | undefined {
    return this.metaRows.get<SessionMeta>("session");
  }
  set meta(value: SessionMeta) {
    this.metaRows.set("session", value);
  }

  get turn(): TurnState {
    return this.metaRows.get<TurnState>("turn") ?? IDLE;
  }
  /** Written only by the session machine (protocol/session-machine.ts), the one module that changes the turn. */
  set turn(value: TurnState) {
    this.metaRows.set("turn", value);
    this.liveChanged?.();
  }

  /** Set while the session is stopped after an agent ran a tool call unasked (unasked-runs.ts); undefined: it takes prompts. */
  get hold(): SessionHold | undefined {
    return this.metaRows.get<SessionHold>("hold");
  }
  set hold(value: SessionHold | undefined) {
    this.metaRows.set("hold", value);
  }

  /**
   * Called whenever what the session index shows of it may have changed: the turn, or the requests
   * waiting on a person (live-index.ts publishes it). One listener: the SessionObject's LiveIndex.
   */
  onLiveChange(listener: () => void): void {
    this.liveChanged = listener;
  }
  private liveChanged: (() => void) | undefined;

  /** How many pending requests are asked of people (not those the rules are still deciding). */
  waitingOnPeople(): number {
    let n = 0;
    for (const p of this.open.values()) if (p.asking > 0) n++;
    return n;
  }

  /** What D1 last took of the session's live state, and the version of the last write begun (live-index.ts). */
  get liveRecord(): LiveRecord {
    return this.metaRows.get<LiveRecord>("live_index") ?? { publishedVersion: 0, version: 0 };
  }
  set liveRecord(record: LiveRecord) {
    this.metaRows.set("live_index", record);
  }

  /** A deleted session's index row that D1 has not removed yet (unindex.ts): set after `forget`. */
  get unindexPending(): { tenantId: string; sessionId: string } | undefined {
    return this.metaRows.get("unindex");
  }
  set unindexPending(row: { tenantId: string; sessionId: string } | undefined) {
    this.metaRows.set("unindex", row);
  }

  /**
   * A fresh id for a message the session sends: to a client (requests) or to the agent (gwId).
   * Ids are handed out in memory from a block of ID_BLOCK reserved with one meta write; after a
   * restart the next block starts above the last reserved, so no id repeats (unused ones are skipped).
   */
  nextId(): number {
    if (this.idNext === undefined) {
      this.idCeiling = this.metaRows.get<number>("next_id") ?? 0;
      this.idNext = this.idCeiling;
    }
    this.idNext += 1;
    if (this.idNext > this.idCeiling) {
      this.idCeiling = this.idNext + ID_BLOCK - 1;
      this.metaRows.set("next_id", this.idCeiling);
    }
    return this.idNext;
  }

  // ── tool calls ────────────────────────────────────────────────────────────
  applyToolCall(patch: unknown, seq: number): ToolCallRow | undefined {
    const id = (patch as { toolCallId?: unknown } | null)?.toolCallId;
    if (typeof id !== "string") return undefined;
    const prev = this.sql.exec<{ row: string }>("SELECT row FROM tool_calls WHERE id = ?", id).toArray()[0];
    const row = reduceToolCall(prev ? (JSON.parse(prev.row) as ToolCallRow) : undefined, patch);
    if (!row) return undefined;
    const text = JSON.stringify(row);
    // Updates merge into one row: many frames within the limit could together pass SQLite's 2 MB row cap.
    if (utf8LongerThan(text, MAX_STORED_ROW_BYTES)) {
      sessionLog(this).warn(
        "session.tool_call_row_too_large",
        "a tool call's row would exceed the stored row limit; the update stays in the log, not in the table",
        {
          toolCallId: id,
          limitBytes: MAX_STORED_ROW_BYTES,
        },
      );
      return undefined;
    }
    // One row written: the table is WITHOUT ROWID (no separate key index), and an upsert updates in place.
    this.sql.exec(
      "INSERT INTO tool_calls (id, row, updated_seq) VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET row = excluded.row, updated_seq = excluded.updated_seq",
      id,
      text,
      seq,
    );
    return row;
  }
  /**
   * Whether a permission request named this tool call: in the running turn, or (idle) among the last
   * WAS_ASKED_WINDOW entries. Read only for a tool call reported finished that this instance did not see
   * asked (the permission machine keeps the rest in memory), so after a restart, not per update.
   */
  wasAsked(toolCallId: string): boolean {
    const turn = this.turn;
    const from = turn.state !== "idle" ? (turn.fromSeq ?? 0) : Math.max(0, this.lastSeq() - WAS_ASKED_WINDOW);
    return (
      this.sql
        .exec(
          "SELECT 1 FROM log WHERE seq > ? AND kind = 'permission' AND json_extract(request, '$.toolCallId') = ? LIMIT 1",
          from,
          toolCallId,
        )
        .toArray().length > 0
    );
  }
  toolCall(id: string): ToolCallRow | undefined {
    const row = this.sql.exec<{ row: string }>("SELECT row FROM tool_calls WHERE id = ?", id).toArray()[0];
    return row ? (JSON.parse(row.row) as ToolCallRow) : undefined;
  }
  toolCalls(): ToolCallRow[] {
    return this.sql
      .exec<{ row: string }>("SELECT row FROM tool_calls ORDER BY updated_seq")
      .toArray()
      .map((r) => JSON.parse(r.row) as ToolCallRow);
  }

  // ── event log ─────────────────────────────────────────────────────────────
  /**
   * The lower bound every log write carries in `scan_from`: no unresolved request, no resolution on
   * its way to the agent and no audit entry D1 has not taken is below it.
   */
  private scanFrom(): number {
    return this.unsettledBelow(this.auditCursor + 1);
  }
  /**
   * The lowest seq that may still change, at most `ceiling`: an unresolved request, or a resolution
   * on its way to the agent (`held`). Shared by the scan bound and the audit outbox's final bound.
   */
  unsettledBelow(ceiling: number): number {
    let from = ceiling;
    for (const seq of this.open.keys()) from = Math.min(from, seq);
    for (const seq of this.held) from = Math.min(from, seq);
    return from;
  }
  append(kind: LogKind, body: string, at = Date.now()): number {
    this.lastLogWriteAt = at;
    const row = this.sql
      .exec<{ seq: number }>(
        "INSERT INTO log (kind, body, at, agent_seq, scan_from) VALUES (?, ?, ?, ?, ?) RETURNING seq",
        kind,
        body,
        at,
        this.appliedAgentSeq,
        this.scanFrom(),
      )
      .one();
    return row.seq;
  }
  /**
   * The entries replay reads (protocol/replayed-history.ts), in order, as a lazy cursor: replay never
   * holds the whole log in memory. Updates, extensions, notices, and the permission requests resolved.
   * `afterSeq` (session/attach `after_message`, decision 0060): only what came after that entry, and the
   * requests asked before it but resolved since.
   */
  replayable(afterSeq = 0): Iterable<LogRow> {
    return this.sql.exec<{ kind: string; body: string; resolved: string | null }>(
      `SELECT kind, body, resolved FROM log WHERE (seq > ?1 AND kind IN ('update', 'ext', 'notice')) OR (kind = 'permission' AND resolved IS NOT NULL AND (seq > ?1 OR resolved_at >= (SELECT at FROM log WHERE seq = ?1))) ORDER BY seq`,
      afterSeq,
    );
  }
  lastSeq(): number {
    return this.sql.exec<{ seq: number | null }>("SELECT max(seq) AS seq FROM log").one().seq ?? 0;
  }
  /** When the log's newest entry was written (turn-watch.ts). */
  newestAt(): number | undefined {
    return this.sql.exec<{ at: number }>("SELECT at FROM log ORDER BY seq DESC LIMIT 1").toArray()[0]?.at;
  }
  // Compaction (compaction.ts). The log's newest entry is never removed, so seq never goes back
  // (the table has no AUTOINCREMENT: that would write a second row, sqlite_sequence, per append).
  lastEntry(): { seq: number; kind: string; body: string } | undefined {
    return this.sql
      .exec<{ seq: number; kind: string; body: string }>("SELECT seq, kind, body FROM log ORDER BY seq DESC LIMIT 1")
      .toArray()[0];
  }
  /** `at`: the entry is the newest and continues (a merged chunk): its time moves on. */
  rewriteEntry(seq: number, body: string, at?: number): void {
    if (at === undefined) {
      this.sql.exec(
        "UPDATE log SET body = ?, agent_seq = ?, scan_from = ? WHERE seq = ?",
        body,
        this.appliedAgentSeq,
        this.scanFrom(),
        seq,
      );
      return;
    }
    this.lastLogWriteAt = at;
    this.sql.exec(
      "UPDATE log SET body = ?, at = ?, agent_seq = ?, scan_from = ? WHERE seq = ?",
      body,
      at,
      this.appliedAgentSeq,
      this.scanFrom(),
      seq,
    );
  }
  removeEntries(seqs: number[]): void {
    for (const seq of seqs) this.sql.exec("DELETE FROM log WHERE seq = ? AND kind = 'update'", seq);
  }
  /** The logged updates that may carry a tool call, in order. */
  toolCallEntries(): { seq: number; body: string }[] {
    return this.sql
      .exec<{ seq: number; body: string }>(
        "SELECT seq, body FROM log WHERE kind = 'update' AND body LIKE '%\"tool\\_call%' ESCAPE '\\' ORDER BY seq",
      )
      .toArray();
  }
  /** The seq at which the log's tool calls were last folded (every update compares against it: the meta cache holds it). */
  get foldedAt(): number {
    return this.metaRows.get<number>("folded_at") ?? 0;
  }
  set foldedAt(seq: number) {
    this.metaRows.set("folded_at", seq);
  }
  /**
   * The log as written, in order. A permission request's entry carries its resolution (`resolved`,
   * the text clients were sent, and `resolvedAt`) once it has one; sessions from before requests
   * were resolved in place also have separate `resolution` entries.
   */
  logEntries(
    afterSeq: number,
    limit: number,
  ): { seq: number; kind: string; body: string; at: number; resolved: string | null; resolvedAt: number | null }[] {
    return this.sql
      .exec<{ seq: number; kind: string; body: string; at: number; resolved: string | null; resolvedAt: number | null }>(
        "SELECT seq, kind, body, at, resolved, resolved_at AS resolvedAt FROM log WHERE seq > ? ORDER BY seq LIMIT ?",
        afterSeq,
        limit,
      )
      .toArray();
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
  resolvePermission(permId: number, resolution: Resolution): void {
    if (this.open.delete(permId)) this.liveChanged?.();
    // Its audit entry is written with the resolution: the frozen operation is not needed any more (reopened: written again).
    this.sql.exec("DELETE FROM frozen_operations WHERE perm_id = ?", permId);
    this.sql.exec(
      "UPDATE log SET resolved = ?, resolved_at = ?, audit = ? WHERE seq = ?",
      resolution.text,
      Date.now(),
      resolution.audit ? JSON.stringify(resolution.audit) : null,
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
