// Stream cursors of the draft RFD "Durable & Resumable HTTP/WS Transport" (decision 0050): every
// server→client message of a stream carries an opaque cursor, monotonic within that stream, as the
// SSE `id:` and in `_meta["acp/cursor"]`; a client resumes after the last one it processed.
//
// A cursor is `<stream token>.<position>`: the token is random per stream (a connection's stream, or
// one session's on one connection), made when the stream is, and handed only to that stream's
// reader. A cursor of another tenant's, connection's or session's stream, of an earlier stream of
// the same session (one given up and re-attached), or one made up, names a token this stream does
// not have and is refused like an unknown one. Nothing is signed per message and nothing is stored:
// the position is the stream's own counter, the token one string per stream.
//
// Pure: no platform imports; unit-tested in test/unit/stream-cursor.test.ts.

/** The `_meta` key of a message's cursor (the RFD's name). */
const CURSOR_META = "acp/cursor";
/** The `_meta` key of the turn's state on a resume acknowledgement (the RFD's v1 shim). */
export const TURN_STATE_META = "acp/turnState";
/** The `_meta` key under which `initialize` advertises the transport's resumability until the RFD lands. */
export const TRANSPORT_META = "acp/transport";

/** The draft's transport methods (not yet in the SDK's maps). */
export const STREAM_METHODS = {
  /** WebSocket: the first frame of a new socket, resuming the streams of a dropped one. */
  resume: "stream/resume",
  /** WebSocket: a resume refused, with a `reason`; no stream goes live. */
  resumeFailed: "stream/resume_failed",
  /** SSE: the acknowledgement of a resume, after the replay and before live delivery (no cursor of its own). */
  resumed: "stream/resumed",
} as const;

/** Why a resume is refused (`stream/resume_failed {reason}`, and the 409's body over HTTP). */
export type ResumeRefusal = "unknown_cursor" | "expired_cursor" | "unknown_connection" | "busy";

/** What `initialize` advertises (the RFD's `capabilities.transport`), under `_meta["acp/transport"]`. */
export interface TransportCapability {
  resumable: { retentionMessages: number; retentionSeconds: number };
  /**
   * The fixed interval of keepalives on an idle stream (SSE comments): silent for five of them, a
   * stream is dead. Absent on a WebSocket: a Worker cannot send pings; the client pings, the runtime answers.
   */
  keepaliveSeconds?: number;
}

/** A new stream's token: 96 random bits, base64url. */
export function newStreamToken(random: (bytes: Uint8Array) => Uint8Array): string {
  const bytes = random(new Uint8Array(12));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function formatCursor(token: string, position: number): string {
  return `${token}.${position.toString(36)}`;
}

/** The position a cursor names on the stream with `token`; undefined for any other stream's, or a malformed one. */
export function positionOf(cursor: string, token: string): number | undefined {
  const dot = cursor.lastIndexOf(".");
  if (dot < 0 || cursor.slice(0, dot) !== token) return undefined;
  const digits = cursor.slice(dot + 1);
  if (!/^[0-9a-z]{1,11}$/.test(digits)) return undefined;
  const position = parseInt(digits, 36);
  return Number.isSafeInteger(position) ? position : undefined;
}

/**
 * The message with its cursor in `_meta["acp/cursor"]`: in `params._meta` of a request or
 * notification (where the RFD's example puts it), else in the envelope's own `_meta` (a response:
 * its result stays exactly the agent's, as the SDK hands it to the application). The text is spliced, never re-serialised: every byte
 * the peer sent stays as it was (numbers beyond 2^53 included). A `_meta["acp/cursor"]` string already
 * in the message (an agent's, or the session's where an HTTP connection relays a session's frame) is
 * replaced in place. `text` is one JSON object (frames are checked before they reach a stream).
 */
export function withCursor(text: string, cursor: string): string {
  const found = scan(text);
  if (found.cursorValue) return text.slice(0, found.cursorValue[0]) + JSON.stringify(cursor) + text.slice(found.cursorValue[1]);
  const entry = `"${CURSOR_META}":${JSON.stringify(cursor)}`;
  if (found.metaEnd !== undefined) return splice(text, found.metaEnd, found.metaEmpty ? entry : `,${entry}`);
  if (found.holderEnd !== undefined) return splice(text, found.holderEnd, `${found.holderEmpty ? "" : ","}"_meta":{${entry}}`);
  const end = text.lastIndexOf("}");
  if (end < 0) return text;
  return splice(text, end, `${found.topEmpty ? "" : ","}"_meta":{${entry}}`);
}

function splice(text: string, at: number, insert: string): string {
  return text.slice(0, at) + insert + text.slice(at);
}

interface Found {
  /** Index of the closing brace of `params` (an object), and whether it has no members. */
  holderEnd?: number;
  holderEmpty?: boolean;
  /** Index of the closing brace of that object's `_meta` (an object), and whether it has no members. */
  metaEnd?: number;
  metaEmpty?: boolean;
  /** Where a string value of `_meta["acp/cursor"]` there starts and ends (its quotes included). */
  cursorValue?: [number, number];
  topEmpty: boolean;
}

/** One pass over the text: where `params` and its `_meta` end. Strings are skipped whole. */
function scan(text: string): Found {
  const found: Found = { topEmpty: true };
  // Per open container: whether it is an object, the key being read in it, whether it has members.
  const stack: { object: boolean; key: string | undefined; members: boolean; role: "top" | "holder" | "meta" | "other" }[] = [];
  let lastString: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i + 1;
      i = closingQuote(text, start);
      lastString = text.slice(start, i);
      const top = stack.at(-1);
      if (top) top.members = true;
      if (top?.role === "meta" && top.key === CURSOR_META) found.cursorValue = [start - 1, i + 1];
      continue;
    }
    if (c === 0x3a /* : */) {
      const top = stack.at(-1);
      if (top?.object) top.key = lastString;
      continue;
    }
    if (c === 0x2c /* , */) {
      const top = stack.at(-1);
      if (top) top.key = undefined;
      continue;
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      const parent = stack.at(-1);
      if (parent) parent.members = true;
      let role: "top" | "holder" | "meta" | "other" = "other";
      if (!parent) role = "top";
      else if (c === 0x7b && parent.role === "top" && parent.key === "params") role = "holder";
      else if (c === 0x7b && parent.role === "holder" && parent.key === "_meta") role = "meta";
      stack.push({ object: c === 0x7b, key: undefined, members: false, role });
      continue;
    }
    if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      const closed = stack.pop();
      if (closed?.role === "holder") {
        found.holderEnd = i;
        found.holderEmpty = !closed.members;
      } else if (closed?.role === "meta") {
        found.metaEnd = i;
        found.metaEmpty = !closed.members;
      } else if (closed?.role === "top") found.topEmpty = !closed.members;
      continue;
    }
    // Any other value (a number, true, false, null) is a member of its container.
    if (c > 0x20) {
      const top = stack.at(-1);
      if (top) top.members = true;
    }
  }
  return found;
}

/**
 * The index of the quote closing the string whose text starts at `from` (the text's length if none):
 * found with indexOf, which skips a long string's text far faster than a loop over its characters
 * (a replay stamps every compacted frame it sends); a quote preceded by an odd run of backslashes is escaped.
 */
function closingQuote(text: string, from: number): number {
  let at = from;
  for (;;) {
    at = text.indexOf('"', at);
    if (at < 0) return text.length;
    let backslashes = 0;
    while (at - backslashes - 1 >= from && text.charCodeAt(at - backslashes - 1) === 0x5c /* \ */) backslashes++;
    if (backslashes % 2 === 0) return at;
    at++;
  }
}
