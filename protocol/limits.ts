// Limits on one frame, checked on its text before it is parsed, at both edges (client frames in the
// edge Worker, agent frames in the AgentObject). A frame within them can be parsed, stored in one
// Durable Object SQLite row and forwarded over every hop; one outside them is answered -32600 and
// goes nowhere, so it cannot leave a turn or a permission request half-done.
//
// Size: Durable Object SQLite caps a string, BLOB or row at 2 MB, and a WebSocket message *received*
// by a Durable Object (edge → SessionObject, agent → AgentObject) at 1 MiB. So 1 MiB minus 1 KiB of
// headroom for what the gateway adds when it re-serialises a frame (a rewritten id, a mark).
// Depth: ACP messages nest a handful of levels (params.update.content…, rawInput); 64 is plenty,
// and a bound keeps recursive code on every hop (structured clone for RPC, JSON.stringify) safe.

/** A JSON-RPC id as jsonrpc.ts names it (`JsonRpcId`); spelled out here, since jsonrpc.ts imports this module. */
type JsonRpcId = string | number;

export const MAX_FRAME_BYTES = 1024 * 1024 - 1024;
export const MAX_JSON_DEPTH = 64;
/** What one Durable Object SQLite row may hold (the platform's cap is 2 MB), with room for the row's other columns. */
export const MAX_STORED_ROW_BYTES = 2_000_000 - 16 * 1024;

export interface FrameLimits {
  maxBytes: number;
  maxDepth: number;
}

const DEFAULT_LIMITS: FrameLimits = { maxBytes: MAX_FRAME_BYTES, maxDepth: MAX_JSON_DEPTH };

export type LimitVerdict =
  | { ok: true }
  | {
      ok: false;
      message: string;
      data: { reason: "frame_too_large" | "too_deep"; limit: number };
      /** The top-level `id`, when one could be read from the text. */
      id: JsonRpcId | null;
      /** Whether the frame has a top-level `method` (a request or notification, not a response). */
      hasMethod: boolean;
    };

/** Checks the frame's UTF-8 size and its JSON nesting depth, without parsing it. */
export function checkFrameLimits(text: string, limits: FrameLimits = DEFAULT_LIMITS): LimitVerdict {
  if (utf8LongerThan(text, limits.maxBytes)) {
    return {
      ok: false,
      message: `Frame too large: more than ${limits.maxBytes} bytes (the gateway's limit, below its storage limit); send smaller messages`,
      data: { reason: "frame_too_large", limit: limits.maxBytes },
      ...topLevelFields(text),
    };
  }
  if (nestingDepth(text, limits.maxDepth) > limits.maxDepth) {
    return {
      ok: false,
      message: `Frame nested too deeply: JSON nesting deeper than ${limits.maxDepth} levels is refused`,
      data: { reason: "too_deep", limit: limits.maxDepth },
      ...topLevelFields(text),
    };
  }
  return { ok: true };
}

/**
 * Whether the string's UTF-8 encoding is longer than `maxBytes`, counting only when it must: every
 * UTF-16 unit is at least one UTF-8 byte and at most three (a surrogate pair is four for two).
 */
export function utf8LongerThan(text: string, maxBytes: number): boolean {
  if (text.length > maxBytes) return true;
  if (text.length * 3 <= maxBytes) return false;
  return exactUtf8Length(text, maxBytes) > maxBytes;
}

/** The UTF-8 length, or the first count past `stopAbove`. */
export function exactUtf8Length(text: string, stopAbove = Infinity): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
    if (bytes > stopAbove) return bytes;
  }
  return bytes;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * The deepest nesting of `[`/`{` outside strings (a scalar is 0, `[]` is 1), or the first depth past
 * `stopAbove`. Brackets inside strings, and escaped quotes, do not count. Invalid JSON gets some
 * number; JSON.parse refuses it afterwards.
 */
export function nestingDepth(text: string, stopAbove = Infinity): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = stringEnd(text, i);
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAbove) return deepest;
      }
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return deepest;
}

/**
 * The top-level `id` (a string or a finite number) and whether there is a top-level `method`, read
 * from the text of a frame that will not be parsed, so that the refusal can name the request.
 */
export function topLevelFields(text: string): { id: JsonRpcId | null; hasMethod: boolean } {
  let id: JsonRpcId | null = null;
  let hasMethod = false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (depth === 1) {
        const colon = skipSpace(text, end + 1);
        if (text.charCodeAt(colon) === 0x3a) {
          const key = text.slice(i + 1, end);
          if (key === "method") hasMethod = true;
          else if (key === "id") id = scalarId(text, skipSpace(text, colon + 1));
        }
      }
      i = end;
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) depth++;
    else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) depth--;
  }
  return { id, hasMethod };
}

/** Index of the quote that closes the string opened at `start` (or the text's end). */
/**
 * The index of the quote that closes the string opened at `start` (text.length if none): the next
 * quote after an even run of backslashes (an odd run escapes it). Found with indexOf, so a long
 * string (a 64 KiB chunk of text) is skipped natively rather than a character at a time.
 */
function stringEnd(text: string, start: number): number {
  for (let q = text.indexOf('"', start + 1); q !== -1; q = text.indexOf('"', q + 1)) {
    let run = 0;
    while (text.charCodeAt(q - 1 - run) === BACKSLASH) run++;
    if (run % 2 === 0) return q;
  }
  return text.length;
}

function skipSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && " \t\n\r".includes(text.charAt(i))) i++;
  return i;
}

function scalarId(text: string, at: number): JsonRpcId | null {
  if (text.charCodeAt(at) === QUOTE) {
    try {
      const value: unknown = JSON.parse(text.slice(at, stringEnd(text, at) + 1));
      return typeof value === "string" ? value : null;
    } catch {
      return null;
    }
  }
  const match = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at, at + 32));
  const n = match ? Number(match[0]) : NaN;
  return Number.isFinite(n) ? n : null;
}
