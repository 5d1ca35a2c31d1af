// The session's durable state, in the Durable Object's own SQLite database.
// Everything the object needs to answer a message lives here, so an evicted or hibernated object
// comes back whole: nothing is kept in memory that cannot be rebuilt from these tables.
// Every statement is synchronous (ctx.storage.sql), so a handler that only touches the store runs
// atomically with respect to other events delivered to the object.

import type { JsonRpcId } from "../../protocol/jsonrpc";
import type { Limits } from "../../protocol/tenant-limits";
import { reduceToolCall, type ToolCallRow } from "../../protocol/tool-calls";
import { MAX_STORED_ROW_BYTES, utf8LongerThan } from "../../protocol/limits";
import { type ParsedParams, parsePermissionParams } from "./pending-request";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tool_calls (id TEXT PRIMARY KEY, row TEXT NOT NULL, updated_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS pending (
  perm_id INTEGER PRIMARY KEY, agent_req_id TEXT NOT NULL, agent_epoch INTEGER NOT NULL,
  tool_call_id TEXT, params TEXT NOT NULL, created_at INTEGER NOT NULL, deadline_at INTEGER NOT NULL,
  asking INTEGER NOT NULL DEFAULT 0);
DROP INDEX IF EXISTS pending_deadline;
DROP TABLE IF EXISTS copies;
CREATE TABLE IF NOT EXISTS agent_requests (out_id INTEGER PRIMARY KEY, agent_req_id TEXT NOT NULL, agent_epoch INTEGER NOT NULL, conn_id TEXT NOT NULL, method TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inflight (gw_id INTEGER PRIMARY KEY, conn_id TEXT NOT NULL, client_id TEXT NOT NULL, method TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS inflight_client ON inflight (conn_id, client_id);
`;

/** Log kinds. `update` and `ext` entries are replayed to attaching clients; the rest is audit trail. */
export type LogKind = "update" | "ext" | "permission" | "resolution" | "prompt" | "turn_end" | "notice";

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

export type TurnState =
  { state: "idle" } | { state: "running" | "cancelling"; gwId: number; connId: string; user?: string | null; startedAt: number };

/**
 * A permission request waiting for an answer: one row, written once when it is asked (and once more
 * only when the rules are consulted asynchronously and people are asked after). `permId` is the seq of
 * the request's own log entry, so it never repeats in a session; the copies clients hold carry it as
 * their id (`copyId`), so no row per copy is needed.
 */
export interface PendingRow {
  permId: number;
  agentReqId: JsonRpcId;
  agentEpoch: number;
  toolCallId: string | null;
  params: string;
  createdAt: number;
  deadlineAt: number;
  /** 0 while the tenant's rules are consulted, 1 once people are asked (copies sent). */
  asking: number;
}

/** The id of every client's copy of a pending request: negative, so it never meets the positive ids of nextId(). */
export function copyId(permId: number): number {
  return -permId;
}

/** The pending request a copy's id names, if the id is a copy's. */
export function permIdOfCopy(id: number): number | undefined {
  return id < 0 ? -id : undefined;
}

/** A pending request as the lifecycle uses it: its params parsed once, when it is read (pending-request.ts). */
export type PendingRequest = PendingRow & ParsedParams;
export interface AgentRequestRow {
  outId: number;
  agentReqId: JsonRpcId;
  agentEpoch: number;
  connId: string;
  method: string;
}
export interface InflightRow {
  gwId: number;
  connId: string;
  clientId: JsonRpcId;
  method: string;
  createdAt: number;
}

export class SessionStore {
  /**
   * The highest AgentObject item number applied (agent-delivery.ts). Every log write carries it in
   * `agent_seq`, so the log's newest entry holds it durably: de-duplication costs no row of its own.
   */
  appliedAgentSeq: number;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
    // Sessions created before the column existed get it on first start.
    if (sql.exec("SELECT 1 FROM pragma_table_info('log') WHERE name = 'agent_seq'").toArray().length === 0) {
      sql.exec("ALTER TABLE log ADD COLUMN agent_seq INTEGER");
    }
    this.appliedAgentSeq =
      sql.exec<{ agent_seq: number | null }>("SELECT agent_seq FROM log ORDER BY seq DESC LIMIT 1").toArray()[0]?.agent_seq ?? 0;
  }
  /** session/delete: the session, its log, tool calls and requests are gone (the audit outbox and delivery mark stay). */
  forget(): void {
    for (const table of ["meta", "tool_calls", "log", "pending", "agent_requests", "inflight"]) this.sql.exec(`DELETE FROM ${table}`);
  }

  // ── meta ──────────────────────────────────────────────────────────────────
  private getMeta<T>(key: string): T | undefined {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
    return row ? (JSON.parse(row.value) as T) : undefined;
  }
  private setMeta(key: string, value: unknown): void {
    this.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, JSON.stringify(value));
  }

  get meta(): SessionMeta | undefined {
    return this.getMeta<SessionMeta>("session");
  }
  set meta(value: SessionMeta) {
    this.setMeta("session", value);
  }

  get turn(): TurnState {
    return this.getMeta<TurnState>("turn") ?? { state: "idle" };
  }
  set turn(value: TurnState) {
    this.setMeta("turn", value);
  }

  /** A fresh id for a message the session sends: to a client (requests) or to the agent (gwId). */
  nextId(): number {
    const next = (this.getMeta<number>("next_id") ?? 0) + 1;
    this.setMeta("next_id", next);
    return next;
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
      console.error(`session: tool call ${id} would exceed ${MAX_STORED_ROW_BYTES} bytes; the update stays in the log, not in the table`);
      return undefined;
    }
    this.sql.exec("INSERT OR REPLACE INTO tool_calls (id, row, updated_seq) VALUES (?, ?, ?)", id, text, seq);
    return row;
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
  append(kind: LogKind, body: string, at = Date.now()): number {
    const row = this.sql
      .exec<{ seq: number }>(
        "INSERT INTO log (kind, body, at, agent_seq) VALUES (?, ?, ?, ?) RETURNING seq",
        kind,
        body,
        at,
        this.appliedAgentSeq,
      )
      .one();
    return row.seq;
  }
  /** The replayable entries in order, as a lazy cursor: replay never holds the whole log in memory. */
  replayable(): Iterable<{ seq: number; body: string }> {
    return this.sql.exec<{ seq: number; body: string }>("SELECT seq, body FROM log WHERE kind IN ('update', 'ext') ORDER BY seq");
  }
  lastSeq(): number {
    return this.sql.exec<{ seq: number | null }>("SELECT max(seq) AS seq FROM log").one().seq ?? 0;
  }
  // Compaction (compaction.ts). The log's newest entry is never removed, so seq never goes back
  // (the table has no AUTOINCREMENT: that would write a second row, sqlite_sequence, per append).
  lastEntry(): { seq: number; kind: string; body: string } | undefined {
    return this.sql
      .exec<{ seq: number; kind: string; body: string }>("SELECT seq, kind, body FROM log ORDER BY seq DESC LIMIT 1")
      .toArray()[0];
  }
  rewriteEntry(seq: number, body: string): void {
    this.sql.exec("UPDATE log SET body = ?, agent_seq = ? WHERE seq = ?", body, this.appliedAgentSeq, seq);
  }
  removeEntries(seqs: number[]): void {
    for (const seq of seqs) this.sql.exec("DELETE FROM log WHERE seq = ?", seq);
  }
  /** The logged updates that may carry a tool call, in order. */
  toolCallEntries(): { seq: number; body: string }[] {
    return this.sql
      .exec<{ seq: number; body: string }>(
        "SELECT seq, body FROM log WHERE kind = 'update' AND body LIKE '%\"tool\\_call%' ESCAPE '\\' ORDER BY seq",
      )
      .toArray();
  }
  /** The seq at which the log's tool calls were last folded. */
  /** Read once per instance: every update compares against it. */
  private foldedAtMemo: number | undefined;
  get foldedAt(): number {
    this.foldedAtMemo ??= this.getMeta<number>("folded_at") ?? 0;
    return this.foldedAtMemo;
  }
  set foldedAt(seq: number) {
    this.foldedAtMemo = seq;
    this.setMeta("folded_at", seq);
  }
  logEntries(afterSeq: number, limit: number): { seq: number; kind: string; body: string; at: number }[] {
    return this.sql
      .exec<{ seq: number; kind: string; body: string; at: number }>(
        "SELECT seq, kind, body, at FROM log WHERE seq > ? ORDER BY seq LIMIT ?",
        afterSeq,
        limit,
      )
      .toArray();
  }

  // ── pending permission requests ──────────────────────────────────────────
  markAsking(permId: number, asking: number): void {
    this.sql.exec("UPDATE pending SET asking = ? WHERE perm_id = ?", asking, permId);
  }
  pendingCount(): number {
    return this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM pending").one().n;
  }
  isPending(permId: number): boolean {
    return this.sql.exec("SELECT 1 FROM pending WHERE perm_id = ?", permId).toArray().length > 0;
  }
  hasPending(): boolean {
    return this.sql.exec("SELECT 1 FROM pending LIMIT 1").toArray().length > 0;
  }
  hasAsking(): boolean {
    return this.sql.exec("SELECT 1 FROM pending WHERE asking > 0 LIMIT 1").toArray().length > 0;
  }
  addPending(p: PendingRow): void {
    this.sql.exec(
      "INSERT INTO pending (perm_id, agent_req_id, agent_epoch, tool_call_id, params, created_at, deadline_at, asking) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      p.permId,
      JSON.stringify(p.agentReqId),
      p.agentEpoch,
      p.toolCallId,
      p.params,
      p.createdAt,
      p.deadlineAt,
      p.asking,
    );
  }
  pending(): PendingRequest[] {
    return this.sql.exec<PendingSql>("SELECT * FROM pending ORDER BY perm_id").toArray().map(pendingFromSql);
  }
  pendingById(permId: number): PendingRequest | undefined {
    const row = this.sql.exec<PendingSql>("SELECT * FROM pending WHERE perm_id = ?", permId).toArray()[0];
    return row ? pendingFromSql(row) : undefined;
  }
  pendingByAgentId(agentReqId: JsonRpcId, epoch: number): PendingRequest | undefined {
    const row = this.sql
      .exec<PendingSql>("SELECT * FROM pending WHERE agent_req_id = ? AND agent_epoch = ?", JSON.stringify(agentReqId), epoch)
      .toArray()[0];
    return row ? pendingFromSql(row) : undefined;
  }
  nextDeadline(): number | undefined {
    return this.sql.exec<{ d: number | null }>("SELECT min(deadline_at) AS d FROM pending").one().d ?? undefined;
  }
  /** Removes a pending request; returns its id, whose copies clients may still hold. */
  removePending(permId: number): number {
    this.sql.exec("DELETE FROM pending WHERE perm_id = ?", permId);
    return permId;
  }

  // ── agent requests routed to one client (fs/*, terminal/*, extensions) ────
  addAgentRequest(r: AgentRequestRow): void {
    this.sql.exec(
      "INSERT INTO agent_requests (out_id, agent_req_id, agent_epoch, conn_id, method) VALUES (?, ?, ?, ?, ?)",
      r.outId,
      JSON.stringify(r.agentReqId),
      r.agentEpoch,
      r.connId,
      r.method,
    );
  }
  takeAgentRequest(outId: number): AgentRequestRow | undefined {
    const row = this.sql.exec<AgentRequestSql>("DELETE FROM agent_requests WHERE out_id = ? RETURNING *", outId).toArray()[0];
    return row ? agentRequestFromSql(row) : undefined;
  }
  agentRequests(where: { connId?: string; agentReqId?: JsonRpcId; epoch?: number } = {}): AgentRequestRow[] {
    return this.sql
      .exec<AgentRequestSql>("SELECT * FROM agent_requests")
      .toArray()
      .map(agentRequestFromSql)
      .filter(
        (r) =>
          (where.connId === undefined || r.connId === where.connId) &&
          (where.agentReqId === undefined || r.agentReqId === where.agentReqId) &&
          (where.epoch === undefined || r.agentEpoch === where.epoch),
      );
  }

  // ── client requests in flight to the agent ────────────────────────────────
  addInflight(r: InflightRow): void {
    this.sql.exec(
      "INSERT INTO inflight (gw_id, conn_id, client_id, method, created_at) VALUES (?, ?, ?, ?, ?)",
      r.gwId,
      r.connId,
      JSON.stringify(r.clientId),
      r.method,
      r.createdAt,
    );
  }
  takeInflight(gwId: number): InflightRow | undefined {
    const row = this.sql.exec<InflightSql>("DELETE FROM inflight WHERE gw_id = ? RETURNING *", gwId).toArray()[0];
    return row ? inflightFromSql(row) : undefined;
  }
  inflightByClient(connId: string, clientId: JsonRpcId): InflightRow | undefined {
    const row = this.sql
      .exec<InflightSql>("SELECT * FROM inflight WHERE conn_id = ? AND client_id = ?", connId, JSON.stringify(clientId))
      .toArray()[0];
    return row ? inflightFromSql(row) : undefined;
  }
  inflight(): InflightRow[] {
    return this.sql.exec<InflightSql>("SELECT * FROM inflight ORDER BY gw_id").toArray().map(inflightFromSql);
  }
}

type PendingSql = {
  perm_id: number;
  agent_req_id: string;
  agent_epoch: number;
  tool_call_id: string | null;
  params: string;
  created_at: number;
  deadline_at: number;
  asking: number;
};
function pendingFromSql(r: PendingSql): PendingRequest {
  return {
    ...parsePermissionParams(r.params),
    permId: r.perm_id,
    agentReqId: JSON.parse(r.agent_req_id) as JsonRpcId,
    agentEpoch: r.agent_epoch,
    toolCallId: r.tool_call_id,
    params: r.params,
    createdAt: r.created_at,
    deadlineAt: r.deadline_at,
    asking: r.asking,
  };
}
type AgentRequestSql = { out_id: number; agent_req_id: string; agent_epoch: number; conn_id: string; method: string };
function agentRequestFromSql(r: AgentRequestSql): AgentRequestRow {
  return {
    outId: r.out_id,
    agentReqId: JSON.parse(r.agent_req_id) as JsonRpcId,
    agentEpoch: r.agent_epoch,
    connId: r.conn_id,
    method: r.method,
  };
}
type InflightSql = { gw_id: number; conn_id: string; client_id: string; method: string; created_at: number };
function inflightFromSql(r: InflightSql): InflightRow {
  return {
    gwId: r.gw_id,
    connId: r.conn_id,
    clientId: JSON.parse(r.client_id) as JsonRpcId,
    method: r.method,
    createdAt: r.created_at,
  };
}
