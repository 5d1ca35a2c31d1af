// The session's meta rows, the first layer of its store (store.ts): what the session is, its turn,
// its hold, what the index last took of it, the block of ids, the log's last fold. Read from SQLite
// at most once per instance, then held and written through (meta-table.ts). The log and the tool
// calls (store-log.ts) build on it, the permission requests (store.ts) on those: one class to its
// callers, one concern a file.

import type { Limits } from "../../protocol/tenant-limits";
import type { LiveRecord } from "../../protocol/live-state";
import type { SessionHold } from "../../protocol/unasked-runs";
import type { TurnState } from "../../protocol/turn-state";
import { MetaTable } from "../meta-table";

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
  /** The agent advertised prompt queueing when it opened the session (protocol/prompt-queueing.ts, decision 0067). */
  promptQueueing?: boolean;
  /** The agent's session/new or session/load result, answered again on attach (modes, models…). */
  result?: Record<string, unknown>;
  createdAt: number;
}

const IDLE: TurnState = Object.freeze({ state: "idle" });

/** How many ids nextId() reserves with one write. */
const ID_BLOCK = 1000;

export class SessionMetaRows {
  /** The meta rows as parsed, read from SQLite at most once per instance (meta-table.ts). */
  private readonly metaRows: MetaTable;
  /** The highest id nextId() gave, and the highest reserved in meta. */
  private idNext: number | undefined;
  private idCeiling = 0;
  /** The one listener told when what the index shows may have changed (`onLiveChange`). */
  protected liveChanged: (() => void) | undefined;

  constructor(protected readonly sql: SqlStorage) {
    this.metaRows = new MetaTable(sql);
  }

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

  /** The seq at which the log's tool calls were last folded (every update compares against it: the meta cache holds it). */
  get foldedAt(): number {
    return this.metaRows.get<number>("folded_at") ?? 0;
  }
  set foldedAt(seq: number) {
    this.metaRows.set("folded_at", seq);
  }

  /** session/delete: every meta row forgotten, the id block with them. */
  protected forgetMeta(): void {
    this.metaRows.forgetAll();
    this.idNext = undefined;
    this.idCeiling = 0;
  }
}
