// The session's log and its tool calls, the second layer of its store (store.ts): every frame is
// appended here before any client sees it, each entry carrying the bounds a restart reads back (the
// last agent item applied, `agent_seq`; the lowest entry that may still change, `scan_from`); the tool
// calls are one row each, merged as the agent updates them (protocol/tool-calls.ts).

import { reduceToolCall, type ToolCallRow } from "../../protocol/tool-calls";
import { MAX_STORED_ROW_BYTES, utf8LongerThan } from "../../protocol/limits";
import type { PendingRequest } from "../../protocol/pending-permission";
import type { LogRow } from "../../protocol/replayed-history";
import { sessionLog } from "./session-log";
import { mergedWithLast } from "./compaction";
import { SessionMetaRows } from "./store-meta";

/** Log kinds. `update` and `ext` entries are replayed to attaching clients; the rest is audit trail. */
export type LogKind = "update" | "ext" | "permission" | "resolution" | "prompt" | "turn_end" | "notice" | "refusal";

/** How far back an idle session looks for the request that named a tool call reported finished. */
const WAS_ASKED_WINDOW = 10_000;

export class SessionLogRows extends SessionMetaRows {
  /**
   * The highest AgentObject item number applied (agent-link.ts `firstTime`). Every log write carries it in
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
  protected readonly open = new Map<number, PendingRequest>();
  /** When this instance last wrote the log (turn-watch.ts: such a write is progress recorded). */
  lastLogWriteAt = 0;
  /** The `scan_from` the newest entry carried at start: the unresolved requests are at or after it (store.ts). */
  protected readonly startScanFrom: number;

  constructor(sql: SqlStorage) {
    super(sql);
    const newest = sql
      .exec<{ agent_seq: number | null; scan_from: number | null }>("SELECT agent_seq, scan_from FROM log ORDER BY seq DESC LIMIT 1")
      .toArray()[0];
    this.appliedAgentSeq = newest?.agent_seq ?? 0;
    this.startScanFrom = newest?.scan_from ?? 0;
    this.auditCursor = Math.max(0, this.startScanFrom - 1);
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
  protected scanFrom(): number {
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
  /**
   * A session/update appended before any client sees it, merged into the last entry when it continues
   * its message (compaction.ts `mergedWithLast`: one row written either way). `frame`: the text as the
   * caller parsed it. Its seq (the entry it was merged into, or its own).
   */
  appendUpdate(text: string, frame?: unknown, at = Date.now()): number {
    const merged = mergedWithLast(text, () => this.lastEntry(), frame);
    if (!merged) return this.append("update", text, at);
    this.rewriteEntry(merged.seq, merged.body, at);
    return merged.seq;
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
}
