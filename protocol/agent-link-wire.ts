// The wire of the agent link: one WebSocket from the AgentObject to each SessionObject it delivers
// to, the fast lane beside the RPC methods (`fromAgentBatch`, `toAgent`), which stay as the fallback.
// A message hop between two objects costs about 0.5 ms over a WebSocket and about 1.1 ms as an RPC
// call (the bench's baselines; bench/results/notes.md, "The agent link"), and every relayed update
// and permission answer crosses one.
// Pure: no Cloudflare imports (the sockets are in durable-objects/agent/session-links.ts and
// durable-objects/session/agent-socket.ts, the rules of both ends in object-channel.ts);
// unit-tested in test/unit/agent-link-wire.test.ts.

import { isObject } from "./jsonrpc";
import { decodeFrame, encodeFrame, framable, textsOf } from "./object-frame";
/** The header the AgentObject opens a link with; its value is the agent's name (the session checks it owns the session). */
export const AGENT_LINK_HEADER = "X-Acp-Gateway-Agent-Link";

/** AgentObject → SessionObject. */
export type LinkToSession =
  /**
   * What the agent sent for the session (FromAgent items, in order); answered by `ack` under the
   * same `n` (absent from an AgentObject of the deploy before: its ack then names none).
   */
  | { t: "batch"; n?: number; items: unknown[] }
  /** A `toAgent` the session sent on the link (`n`) reached the agent, or did not. */
  | { t: "sent"; n: number; delivered: boolean }
  /** A `toAgent` failed in the AgentObject: the session treats it as a failed hand-off (and tries again by RPC). */
  | { t: "failed"; n: number };

/** SessionObject → AgentObject. */
export type LinkToAgent =
  /** Batch `n` was applied (sent after the session's commit, as an RPC's return is); no `n` from a session of the deploy before. */
  | { t: "ack"; n?: number }
  /** A frame towards the agent (a ToAgent), numbered by the session for its answer (`sent`/`failed`). */
  | { t: "toAgent"; n: number; frame: unknown };

/** A batch of agent frames for one session is at most this many bytes (of UTF-16 text, 2 per unit). */
export const MAX_BATCH_BYTES = 8 * 1024 * 1024;

/** How many items from the start fit the budget, counting their `text` (always at least one). */
export function batchPrefix(items: readonly object[], budget: number): number {
  let used = 0;
  for (let i = 0; i < items.length; i++) {
    const text = (items[i] as { text?: unknown }).text;
    used += (typeof text === "string" ? text.length : 0) * 2;
    if (used > budget && i > 0) return i;
  }
  return items.length;
}

/**
 * A batch's items carry the agent's frames as text (JSON). They go after the header, each behind a
 * NUL, instead of as strings inside it (object-frame.ts says why). The header's `moved` lists, in
 * order, the items whose `text` was taken out; a text holding a NUL stays in its item.
 */
export function encodeLink(message: LinkToSession | LinkToAgent): string {
  if (message.t !== "batch") return encodeFrame(message);
  const n = message.n;
  const texts: string[] = [];
  const moved: number[] = [];
  const items = message.items.map((item, index) => {
    if (!isObject(item) || typeof item.text !== "string" || !framable(item.text)) return item;
    texts.push(item.text);
    moved.push(index);
    const { text: _moved, ...rest } = item;
    return rest;
  });
  if (moved.length === 0) return encodeFrame({ t: "batch", n, items });
  return encodeFrame({ t: "batch", n, items, moved }, texts);
}

/** A link message as the session reads it; undefined for anything else (never from our own objects). */
export function linkToSession(text: string): LinkToSession | undefined {
  const frame = decodeFrame(text);
  const m = frame?.header;
  if (m?.t === "batch" && Array.isArray(m.items) && optionalNumber(m.n)) {
    const batch = batchOf(m.items, m.moved, frame?.body);
    if (batch && typeof m.n === "number") batch.n = m.n;
    return batch;
  }
  if (m?.t === "sent" && typeof m.n === "number" && typeof m.delivered === "boolean") return { t: "sent", n: m.n, delivered: m.delivered };
  if (m?.t === "failed" && typeof m.n === "number") return { t: "failed", n: m.n };
  return undefined;
}

/** A link message as the AgentObject reads it (a header alone); undefined for anything else. */
export function linkToAgent(text: string): LinkToAgent | undefined {
  const frame = decodeFrame(text);
  const m = frame?.body === undefined ? frame?.header : undefined;
  if (m?.t === "ack" && optionalNumber(m.n)) return typeof m.n === "number" ? { t: "ack", n: m.n } : { t: "ack" };
  if (m?.t === "toAgent" && typeof m.n === "number" && typeof m.frame === "object" && m.frame !== null) {
    return { t: "toAgent", n: m.n, frame: m.frame };
  }
  return undefined;
}

/** Whether a field that may be left out is a number when it is there. */
function optionalNumber(value: unknown): boolean {
  return value === undefined || typeof value === "number";
}

/** The items with their texts put back; undefined unless `moved` names one object item per text, in order (none without a body). */
function batchOf(items: unknown[], moved: unknown, body: string | undefined): Extract<LinkToSession, { t: "batch" }> | undefined {
  if (body === undefined) return moved === undefined ? { t: "batch", items } : undefined;
  const texts = Array.isArray(moved) && moved.length > 0 ? textsOf(body, moved.length) : undefined;
  if (!texts) return undefined;
  const restored = [...items];
  let previous = -1;
  for (const [k, index] of (moved as unknown[]).entries()) {
    const item = typeof index === "number" && Number.isInteger(index) && index > previous ? restored[index] : undefined;
    if (!isObject(item) || "text" in item) return undefined;
    restored[index as number] = { ...item, text: texts[k] };
    previous = index as number;
  }
  return { t: "batch", items: restored };
}
