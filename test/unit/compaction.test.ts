// Log compaction (durable-objects/session/compaction.ts): merging text chunks on append, folding
// tool-call updates, and the property that matters: replaying the compacted log shows a client the
// same transcript and the same tool-call table as replaying every frame.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CompactableLog,
  CompactionTally,
  MAX_MERGED_TEXT,
  maybeFold,
  mergeChunks,
  mergedWithLast,
  planFold,
} from "../../durable-objects/session/compaction";
import { reduceToolCall, type ToolCallRow } from "../../protocol/tool-calls";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";

type Json = Record<string, any>;

/** The session log as the store keeps it, in memory: ordered rows of a kind and a body. */
class MemoryLog implements CompactableLog {
  rows: { seq: number; kind: string; body: string }[] = [];
  foldedAt = 0;
  private next = 1;
  append(kind: string, body: string): number {
    this.rows.push({ seq: this.next, kind, body });
    return this.next++;
  }
  lastEntry() {
    return this.rows.at(-1);
  }
  rewriteEntry(seq: number, body: string): void {
    const row = this.rows.find((r) => r.seq === seq);
    if (row) row.body = body;
  }
  removeEntries(seqs: number[]): void {
    this.rows = this.rows.filter((r) => !seqs.includes(r.seq));
  }
  toolCallEntries() {
    return this.rows.filter((r) => r.kind === "update" && r.body.includes('"tool_call')).map(({ seq, body }) => ({ seq, body }));
  }
  /** As the store appends an update (store-log.ts `appendUpdate`): merged into the last entry, or a row of its own. */
  appendUpdate(text: string): number {
    const merged = mergedWithLast(text, () => this.lastEntry());
    if (!merged) return this.append("update", text);
    this.rewriteEntry(merged.seq, merged.body);
    return merged.seq;
  }
  replayed(): string[] {
    return this.rows.filter((r) => r.kind === "update").map((r) => r.body);
  }
}

const frame = (update: Json, meta?: Json) =>
  JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s1", update, ...(meta ? { _meta: meta } : {}) } });
const chunk = (text: string, kind = "agent_message_chunk", extra: Json = {}) =>
  frame({ sessionUpdate: kind, content: { type: "text", text }, ...extra });

/** What a client shows: messages (consecutive chunks of one kind and messageId joined), tool calls in their latest state, other updates. */
function transcript(frames: string[]): { items: unknown[]; toolCalls: Record<string, ToolCallRow> } {
  const items: Json[] = [];
  const toolCalls: Record<string, ToolCallRow> = {};
  for (const text of frames) {
    const update = (JSON.parse(text) as Json).params.update as Json;
    const kind = update.sessionUpdate as string;
    if (kind.endsWith("_chunk") && update.content?.type === "text") {
      const last = items.at(-1);
      if (last?.type === "message" && last.kind === kind && last.messageId === (update.messageId ?? null)) last.text += update.content.text;
      else items.push({ type: "message", kind, messageId: update.messageId ?? null, text: update.content.text });
    } else if (kind === "tool_call" || kind === "tool_call_update") {
      if (!toolCalls[update.toolCallId]) items.push({ type: "tool", id: update.toolCallId });
      const row = reduceToolCall(toolCalls[update.toolCallId], update);
      if (row) toolCalls[update.toolCallId] = row;
    } else items.push({ type: "other", update });
  }
  return { items, toolCalls };
}

describe("merging text chunks on append", () => {
  it("merges consecutive chunks of one message into one marked frame", () => {
    const log = new MemoryLog();
    log.appendUpdate(chunk("Hel"));
    log.appendUpdate(chunk("lo"));
    expect(log.rows).toHaveLength(1);
    const merged = JSON.parse(log.rows[0]?.body ?? "") as Json;
    expect(merged.params.update).toEqual({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hello" } });
    expect(merged.params._meta).toEqual({ acpGateway: { compacted: { chunks: 2 } } });
  });

  it("never merges across kinds, messageIds, non-text content, an agent's _meta, extra fields or another log entry", () => {
    expect(mergeChunks(chunk("a"), chunk("b", "agent_thought_chunk"))).toBeUndefined();
    expect(
      mergeChunks(chunk("a", "agent_message_chunk", { messageId: "m1" }), chunk("b", "agent_message_chunk", { messageId: "m2" })),
    ).toBeUndefined();
    expect(
      mergeChunks(chunk("a"), frame({ sessionUpdate: "agent_message_chunk", content: { type: "image", data: "", mimeType: "image/png" } })),
    ).toBeUndefined();
    expect(
      mergeChunks(chunk("a"), frame({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "b" } }, { trace: 1 })),
    ).toBeUndefined();
    expect(mergeChunks(chunk("a"), chunk("b", "agent_message_chunk", { i: 1 }))).toBeUndefined();
    expect(
      mergeChunks(chunk("a"), frame({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "b", annotations: {} } })),
    ).toBeUndefined();
    const log = new MemoryLog();
    log.appendUpdate(chunk("a"));
    log.append("turn_end", "{}");
    log.appendUpdate(chunk("b"));
    expect(log.replayed()).toEqual([chunk("a"), chunk("b")]);
  });

  it("merges one person's prompt blocks (the gateway's own _meta) but not two people's", () => {
    const by = (connectionId: string) => ({ acpGateway: { synthesized: true, connectionId, user: null } });
    const prompt = (text: string, c: string) => frame({ sessionUpdate: "user_message_chunk", content: { type: "text", text } }, by(c));
    const merged = JSON.parse(mergeChunks(prompt("a", "c1"), prompt("b", "c1")) ?? "null") as Json;
    expect(merged.params._meta).toEqual({ acpGateway: { synthesized: true, connectionId: "c1", user: null, compacted: { chunks: 2 } } });
    expect(mergeChunks(prompt("a", "c1"), prompt("b", "c2"))).toBeUndefined();
  });

  it("stops growing a merged chunk at MAX_MERGED_TEXT", () => {
    const log = new MemoryLog();
    const piece = "x".repeat(1000);
    for (let i = 0; i < 20; i++) log.appendUpdate(chunk(piece));
    expect(log.rows.length).toBe(Math.ceil((20 * 1000) / MAX_MERGED_TEXT));
    for (const row of log.rows)
      expect((JSON.parse(row.body) as Json).params.update.content.text.length).toBeLessThanOrEqual(MAX_MERGED_TEXT);
  });
});

describe("folding tool-call updates", () => {
  it("folds a call's updates into one tool_call in its current state, where the call first appeared", () => {
    const entries = [
      { seq: 1, body: frame({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", kind: "execute" }) },
      { seq: 2, body: chunk("working") },
      { seq: 3, body: frame({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed", content: [] }) },
      { seq: 4, body: chunk("done") },
    ];
    const plan = planFold(entries, 4);
    expect(plan.remove).toEqual([3]);
    expect(plan.rewrite).toHaveLength(1);
    const folded = JSON.parse(plan.rewrite[0]?.body ?? "") as Json;
    expect(plan.rewrite[0]?.seq).toBe(1);
    expect(folded.params.update).toEqual({
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "Run",
      kind: "execute",
      status: "completed",
      content: [],
    });
    expect(folded.params._meta).toEqual({ acpGateway: { compacted: { toolCallUpdates: 2 } } });
  });

  it("never removes the newest log entry, and leaves a call with an agent's _meta raw", () => {
    const entries = [
      { seq: 1, body: frame({ sessionUpdate: "tool_call", toolCallId: "t1" }) },
      { seq: 2, body: frame({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" }) },
      { seq: 3, body: frame({ sessionUpdate: "tool_call", toolCallId: "t2" }) },
      { seq: 4, body: frame({ sessionUpdate: "tool_call_update", toolCallId: "t2", status: "failed" }, { trace: "x" }) },
    ];
    expect(planFold(entries, 2)).toEqual({ rewrite: [], remove: [] });
    expect(planFold(entries, 99).remove).toEqual([2]);
  });

  it("folds only after foldAfterEntries entries since the last fold", () => {
    const log = new MemoryLog();
    for (let i = 0; i < 9; i++) {
      const seq = log.appendUpdate(frame({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: `s${i}` }));
      expect(maybeFold(log, seq, 10)).toBe(false);
    }
    log.appendUpdate(frame({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "s9" }));
    const seq = log.appendUpdate(chunk("after"));
    expect(maybeFold(log, seq, 10)).toBe(true);
    expect(log.replayed()).toHaveLength(2);
    expect(log.foldedAt).toBe(seq);
  });
});

describe("the attaching client is told", () => {
  it(`sends ${GATEWAY_NOTIFICATIONS.historyCompacted} with what the compacted frames stand for`, () => {
    const log = new MemoryLog();
    for (const t of ["a", "b", "c"]) log.appendUpdate(chunk(t));
    log.append("update", frame({ sessionUpdate: "tool_call", toolCallId: "t1" }));
    log.append("update", frame({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed" }));
    const seq = log.appendUpdate(chunk("tail", "agent_thought_chunk"));
    maybeFold(log, seq, 1);
    const tally = new CompactionTally();
    const sent = [...tally.count(log.replayed())];
    expect(sent).toHaveLength(3);
    expect(tally.compacted).toBe(true);
    expect(JSON.parse(tally.notice("s1")).params).toMatchObject({
      sessionId: "s1",
      framesReplayed: 3,
      chunksMerged: 3,
      toolCallUpdatesFolded: 2,
    });
  });

  it("says nothing when nothing was compacted", () => {
    const tally = new CompactionTally();
    expect([...tally.count([chunk("a"), frame({ sessionUpdate: "plan", entries: [] })])]).toHaveLength(2);
    expect(tally.compacted).toBe(false);
  });
});

// ── the property ────────────────────────────────────────────────────────────────────────────────
const text = fc.oneof({ weight: 8, arbitrary: fc.string({ maxLength: 12 }) }, { weight: 1, arbitrary: fc.constant("y".repeat(3000)) });
const chunkFrame = fc
  .record({
    kind: fc.constantFrom("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"),
    text,
    messageId: fc.option(fc.constantFrom("m1", "m2"), { nil: undefined }),
    meta: fc.constantFrom(
      undefined,
      { trace: 1 },
      { acpGateway: { synthesized: true, connectionId: "c1" } },
      { acpGateway: { synthesized: true, connectionId: "c2" } },
    ),
    image: fc.boolean(),
  })
  .map(({ kind, text: t, messageId, meta, image }) =>
    frame(
      {
        sessionUpdate: kind,
        content: image ? { type: "image", data: t, mimeType: "image/png" } : { type: "text", text: t },
        ...(messageId ? { messageId } : {}),
      },
      meta,
    ),
  );
const toolFrame = fc
  .record({
    sessionUpdate: fc.constantFrom("tool_call", "tool_call_update"),
    toolCallId: fc.constantFrom("t1", "t2", "t3"),
    status: fc.option(fc.constantFrom("pending", "in_progress", "completed", "failed"), { nil: undefined }),
    title: fc.option(fc.oneof(fc.string({ maxLength: 5 }), fc.constant(null)), { nil: undefined }),
    content: fc.option(
      fc.array(
        fc.record({ type: fc.constant("content"), content: fc.record({ type: fc.constant("text"), text: fc.string({ maxLength: 4 }) }) }),
        { maxLength: 2 },
      ),
      { nil: undefined },
    ),
    meta: fc.constantFrom(undefined, undefined, undefined, { trace: 2 }),
  })
  .map(({ meta, ...u }) => frame(Object.fromEntries(Object.entries(u).filter(([, v]) => v !== undefined)), meta));
const otherFrame = fc.constantFrom(
  frame({ sessionUpdate: "plan", entries: [] }),
  frame({ sessionUpdate: "current_mode_update", currentModeId: "code" }),
);
const step = fc.oneof(
  { weight: 6, arbitrary: chunkFrame.map((f) => ({ type: "update" as const, f })) },
  { weight: 4, arbitrary: toolFrame.map((f) => ({ type: "update" as const, f })) },
  { weight: 1, arbitrary: otherFrame.map((f) => ({ type: "update" as const, f })) },
  { weight: 1, arbitrary: fc.constant({ type: "turn_end" as const, f: "{}" }) },
);

describe("compaction keeps what a client shows", () => {
  it("replaying the compacted log yields the same visible transcript and tool-call table as the full log", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), fc.integer({ min: 1, max: 12 }), (steps, foldAfter) => {
        const full: string[] = [];
        const log = new MemoryLog();
        for (const s of steps) {
          if (s.type === "turn_end") {
            log.append("turn_end", s.f);
            continue;
          }
          full.push(s.f);
          const lastSeq = log.appendUpdate(s.f);
          maybeFold(log, lastSeq, foldAfter);
          // The newest entry is never removed: seq never goes back.
          expect(log.rows.at(-1)?.seq).toBeGreaterThanOrEqual(lastSeq);
        }
        expect(transcript(log.replayed())).toEqual(transcript(full));
        expect(log.replayed().length).toBeLessThanOrEqual(full.length);
      }),
      { numRuns: 500 },
    );
  });
});
