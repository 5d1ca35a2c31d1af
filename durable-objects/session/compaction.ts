// Log compaction: the session log keeps what a client needs to show the session, not every chunk.
// - Merge on append: a text chunk (agent_message_chunk, agent_thought_chunk, user_message_chunk)
//   that continues the log's last entry — same kind, same messageId, text content and nothing else
//   — is appended to that entry's text instead of becoming a row of its own. Same cost as an insert
//   (one row written), and replay sends one update per message (up to MAX_MERGED_TEXT of text).
// - Fold when the log grows: every `foldAfterEntries` entries, each tool call's updates in the log
//   become one `tool_call` update in its current state, at the place where the call first appeared.
// Live clients always get the agent's frames raw; only the log (and so replay) holds gateway-made
// frames, each marked `_meta.acpGateway.compacted` with how many frames it stands for, and an
// attaching client is told with `_acp_gateway/history_compacted` when its history was compacted.
// Pure functions on frame text; the store appends through mergedWithLast (store-log.ts `appendUpdate`), the session calls maybeFold with it.

import { isObject, type JsonObject } from "../../protocol/jsonrpc";
import { reduceToolCall, type ToolCallRow } from "../../protocol/tool-calls";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";

/** A merged chunk stops growing at this many characters of text, so no log row is rewritten for ever. */
export const MAX_MERGED_TEXT = 8 * 1024;
/** Default for the session's fold threshold: log entries appended between two folds. */
const DEFAULT_FOLD_AFTER_ENTRIES = 1000;

const CHUNK_KINDS = new Set(["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]);

/** What a compacted frame stands for, in `_meta.acpGateway.compacted`. */
interface CompactedMark {
  /** Text chunks merged into this one. */
  chunks?: number;
  /** tool_call / tool_call_update frames folded into this one. */
  toolCallUpdates?: number;
}

export interface LogEntry {
  seq: number;
  body: string;
}

/** The store operations compaction needs (SessionStore implements them). */
export interface CompactableLog {
  /** `at`: the entry is the newest and continues (its time moves on). */
  rewriteEntry(seq: number, body: string, at?: number): void;
  removeEntries(seqs: number[]): void;
  toolCallEntries(): LogEntry[];
  foldedAt: number;
}

// ── merging text chunks ─────────────────────────────────────────────────────────────────────────

interface Chunk {
  sessionId: unknown;
  kind: string;
  messageId: unknown;
  text: string;
  /** The gateway's own _meta.acpGateway, without `compacted` (a synthesized prompt's author). */
  gatewayMeta: JsonObject | undefined;
  chunks: number;
  key: string;
}

const onlyKeys = (o: JsonObject, allowed: readonly string[]) => Object.keys(o).every((k) => allowed.includes(k));

/** A text chunk that can be merged without losing anything a client could use, or undefined. */
function asChunk(frame: unknown): Chunk | undefined {
  if (
    !isObject(frame) ||
    frame.jsonrpc !== "2.0" ||
    frame.method !== "session/update" ||
    !onlyKeys(frame, ["jsonrpc", "method", "params"])
  ) {
    return undefined;
  }
  const params = frame.params;
  if (!isObject(params) || !onlyKeys(params, ["sessionId", "update", "_meta"])) return undefined;
  const update = params.update;
  if (!isObject(update) || typeof update.sessionUpdate !== "string" || !CHUNK_KINDS.has(update.sessionUpdate)) return undefined;
  if (!onlyKeys(update, ["sessionUpdate", "content", "messageId"])) return undefined;
  const content = update.content;
  if (!isObject(content) || content.type !== "text" || typeof content.text !== "string" || !onlyKeys(content, ["type", "text"])) {
    return undefined;
  }
  // Only the gateway's own _meta is understood here; an agent's _meta may mean anything: keep it raw.
  let gatewayMeta: JsonObject | undefined;
  let chunks = 1;
  if (params._meta !== undefined) {
    const meta = params._meta;
    if (!isObject(meta) || !onlyKeys(meta, ["acpGateway"]) || !isObject(meta.acpGateway)) return undefined;
    const { compacted, ...rest } = meta.acpGateway;
    if (compacted !== undefined) {
      if (!isObject(compacted) || typeof compacted.chunks !== "number" || !onlyKeys(compacted, ["chunks"])) return undefined;
      chunks = compacted.chunks;
    }
    gatewayMeta = Object.keys(rest).length > 0 ? rest : undefined;
  }
  const messageId = update.messageId ?? null;
  const key = JSON.stringify([params.sessionId, update.sessionUpdate, messageId, gatewayMeta ?? null]);
  return { sessionId: params.sessionId, kind: update.sessionUpdate, messageId, text: content.text, gatewayMeta, chunks, key };
}

function chunkFrame(c: Chunk): string {
  const update: JsonObject = { sessionUpdate: c.kind, ...(c.messageId !== null ? { messageId: c.messageId } : {}) };
  update.content = { type: "text", text: c.text };
  return JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId: c.sessionId, update, _meta: { acpGateway: { ...c.gatewayMeta, compacted: { chunks: c.chunks } } } },
  });
}

/** The merged body of the log's last entry and a new frame, or undefined when they do not merge. */
export function mergeChunks(previous: string, next: string): string | undefined {
  const b = asChunk(parse(next));
  return b ? mergeParsed(previous, b) : undefined;
}

function mergeParsed(previous: string, b: Chunk): string | undefined {
  const a = asChunk(parse(previous));
  if (!a || a.key !== b.key || a.text.length + b.text.length > MAX_MERGED_TEXT) return undefined;
  return chunkFrame({ ...a, text: a.text + b.text, chunks: a.chunks + b.chunks });
}

/**
 * The log's last entry with a new session/update merged in, when the frame continues its message
 * (same kind and messageId, text only); undefined: it is appended as an entry of its own. Pure: the
 * store writes it (store-log.ts `appendUpdate`). `last` is read only when the frame is a chunk: most
 * frames cannot merge, and then the log's last entry is not read at all.
 */
export function mergedWithLast(
  text: string,
  last: () => { seq: number; kind: string; body: string } | undefined,
  frame: unknown = parse(text),
): { seq: number; body: string } | undefined {
  const next = text.includes("_chunk") ? asChunk(frame) : undefined;
  if (!next) return undefined;
  const entry = last();
  if (entry?.kind !== "update") return undefined;
  const merged = mergeParsed(entry.body, next);
  return merged === undefined ? undefined : { seq: entry.seq, body: merged };
}

// ── folding tool-call updates ───────────────────────────────────────────────────────────────────

interface ToolCallFrame {
  sessionId: unknown;
  toolCallId: string;
  update: JsonObject;
  /** Frames this one stands for (1 for a raw frame). */
  count: number;
  /** False when the frame carries _meta the gateway does not own: then the call is left alone. */
  foldable: boolean;
}

function asToolCallFrame(frame: unknown): ToolCallFrame | undefined {
  if (!isObject(frame) || frame.method !== "session/update" || !isObject(frame.params)) return undefined;
  const params = frame.params;
  const update = params.update;
  if (!isObject(update) || (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update")) return undefined;
  if (typeof update.toolCallId !== "string" || update.toolCallId === "") return undefined;
  let count = 1;
  let foldable = onlyKeys(frame, ["jsonrpc", "method", "params"]) && onlyKeys(params, ["sessionId", "update", "_meta"]);
  if (params._meta !== undefined) {
    const meta = params._meta;
    const compacted = isObject(meta) && onlyKeys(meta, ["acpGateway"]) && isObject(meta.acpGateway) ? meta.acpGateway.compacted : undefined;
    if (isObject(compacted) && typeof compacted.toolCallUpdates === "number" && onlyKeys(meta as JsonObject, ["acpGateway"])) {
      count = compacted.toolCallUpdates;
    } else foldable = false;
  }
  return { sessionId: params.sessionId, toolCallId: update.toolCallId, update, count, foldable };
}

export interface FoldPlan {
  rewrite: LogEntry[];
  remove: number[];
}

/**
 * Each tool call with more than one entry becomes one `tool_call` in its current state at its
 * first entry; its other entries go. `keepSeq` (the newest log entry) is never removed, so the
 * log's highest seq never goes back and a reader paging by seq misses nothing.
 */
export function planFold(entries: LogEntry[], keepSeq: number): FoldPlan {
  const calls = new Map<string, { seqs: number[]; row: ToolCallRow | undefined; sessionId: unknown; count: number; foldable: boolean }>();
  for (const entry of entries) {
    const frame = asToolCallFrame(parse(entry.body));
    if (!frame) continue;
    const call = calls.get(frame.toolCallId) ?? { seqs: [], row: undefined, sessionId: frame.sessionId, count: 0, foldable: true };
    call.seqs.push(entry.seq);
    call.row = reduceToolCall(call.row, frame.update);
    call.count += frame.count;
    call.foldable &&= frame.foldable && frame.sessionId === call.sessionId;
    calls.set(frame.toolCallId, call);
  }
  const plan: FoldPlan = { rewrite: [], remove: [] };
  for (const call of calls.values()) {
    const [first, ...rest] = call.seqs;
    if (first === undefined || rest.length === 0 || !call.foldable || !call.row || rest.includes(keepSeq)) continue;
    plan.rewrite.push({
      seq: first,
      body: JSON.stringify({
        jsonrpc: "2.0",
        method: "session/update",
        params: {
          sessionId: call.sessionId,
          update: { sessionUpdate: "tool_call", ...call.row },
          _meta: { acpGateway: { compacted: { toolCallUpdates: call.count } } },
        },
      }),
    });
    plan.remove.push(...rest);
  }
  return plan;
}

/** Folds the log's tool-call updates when `foldAfterEntries` entries were appended since the last fold. */
export function maybeFold(log: CompactableLog, seq: number, foldAfterEntries = DEFAULT_FOLD_AFTER_ENTRIES): boolean {
  if (seq - log.foldedAt < foldAfterEntries) return false;
  const plan = planFold(log.toolCallEntries(), seq);
  for (const entry of plan.rewrite) log.rewriteEntry(entry.seq, entry.body);
  log.removeEntries(plan.remove);
  log.foldedAt = seq;
  return true;
}

// ── telling an attaching client ─────────────────────────────────────────────────────────────────

/** Counts, while replay streams by, what the compacted frames stand for. */
export class CompactionTally {
  frames = 0;
  chunks = 0;
  toolCallUpdates = 0;

  /** Passes the bodies through, counting; only frames that end with the gateway's mark are parsed. */
  *count(bodies: Iterable<string>): Iterable<string> {
    for (const body of bodies) {
      this.frames++;
      if (body.endsWith("}}}}}") && body.includes('"compacted":{')) {
        const mark = compactedMark(body);
        this.chunks += mark?.chunks ?? 0;
        this.toolCallUpdates += mark?.toolCallUpdates ?? 0;
      }
      yield body;
    }
  }

  get compacted(): boolean {
    return this.chunks > 0 || this.toolCallUpdates > 0;
  }

  /** The `_acp_gateway/history_compacted` notice for the history just replayed. */
  notice(sessionId: string): string {
    return JSON.stringify({
      jsonrpc: "2.0",
      method: GATEWAY_NOTIFICATIONS.historyCompacted,
      params: {
        sessionId,
        framesReplayed: this.frames,
        chunksMerged: this.chunks,
        toolCallUpdatesFolded: this.toolCallUpdates,
        message:
          "This session's history was compacted: consecutive text chunks of one message arrive merged, and each tool call arrives once in its current state. Frames the gateway made carry _meta.acpGateway.compacted.",
      },
    });
  }
}

/**
 * The mark of a frame whose last key is `params` and whose params' last key is `_meta` (so the
 * gateway's own frames): only that `_meta` is parsed, not the whole frame (replay of 100,000 events
 * parsed about 13 MB of frames for these counts). A `_meta` key at any other depth, or not last,
 * leaves unbalanced braces and does not parse.
 */
function compactedMark(body: string): CompactedMark | undefined {
  const key = ',"_meta":';
  const at = body.lastIndexOf(key);
  const meta = at < 0 ? undefined : parse(body.slice(at + key.length, body.length - 2));
  const compacted = isObject(meta) && isObject(meta.acpGateway) ? meta.acpGateway.compacted : undefined;
  if (!isObject(compacted)) return undefined;
  return {
    ...(typeof compacted.chunks === "number" ? { chunks: compacted.chunks } : {}),
    ...(typeof compacted.toolCallUpdates === "number" ? { toolCallUpdates: compacted.toolCallUpdates } : {}),
  };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
