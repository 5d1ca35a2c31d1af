// One session's stream to one client connection over a WebSocket (decision 0050): the frames the
// session sent on it, each stamped with its cursor, the last few kept in memory so a client whose
// socket dropped can resume after the last cursor it processed. Kept by the SessionObject while the
// client is attached and for the retention window after it dropped; never written to storage (the
// draft RFD: "in-memory is fine and is the expected implementation"). A frame may carry the session
// wire's rewrite mark (protocol/session-wire.ts): the cursor goes in the JSON after it.
//
// Pure: unit-tested in test/unit/stream-ring.test.ts.

import { REWRITE_MARK } from "./session-wire";
import { type ResumeRefusal, formatCursor, newStreamToken, positionOf, withCursor } from "./stream-cursor";

/** What a WebSocket's session stream retains, advertised in `initialize` (bounded: the object holds it in memory per client). */
export const WEBSOCKET_RETENTION = { messages: 500, bytes: 1024 * 1024, seconds: 30 } as const;

export class StreamRing {
  private readonly token: string;
  private next = 1;
  private frames: { position: number; frame: string }[] = [];
  private bytes = 0;
  /** The session's ids of the requests sent on this stream (permission copies, routed requests), each at its last position: few. */
  private readonly requests = new Map<string, number>();
  /** While `withoutRepeats` runs: a request carried after this position is in the replay, and not sent again. */
  private repeatsAfter: number | undefined;

  constructor(
    random: (bytes: Uint8Array) => Uint8Array,
    private readonly limits: { messages: number; bytes: number } = WEBSOCKET_RETENTION,
  ) {
    this.token = newStreamToken(random);
  }

  /** The frame with its cursor, kept for a resume; undefined for a request this stream carried already, while `withoutRepeats` runs. */
  stamp(frame: string): string | undefined {
    const request = frame.startsWith(REWRITE_MARK) ? requestIdOf(frame.slice(REWRITE_MARK.length)) : undefined;
    if (request !== undefined) {
      const at = this.requests.get(request);
      if (this.repeatsAfter !== undefined && at !== undefined && at > this.repeatsAfter) return undefined;
      this.requests.set(request, this.next);
    }
    const cursor = formatCursor(this.token, this.next);
    const stamped = frame.startsWith(REWRITE_MARK)
      ? REWRITE_MARK + withCursor(frame.slice(REWRITE_MARK.length), cursor)
      : withCursor(frame, cursor);
    this.frames.push({ position: this.next++, frame: stamped });
    this.bytes += stamped.length;
    while (this.frames.length > this.limits.messages || this.bytes > this.limits.bytes) {
      const dropped = this.frames.shift();
      if (!dropped) break;
      this.bytes -= dropped.frame.length;
    }
    return stamped;
  }

  /**
   * Runs `send` (a resume re-sending what waits on the client) without the requests the replay after
   * `cursor` carries. One the client had before it (sent at or before the cursor) goes again: the
   * client's id for it was the dropped socket's edge's, which the new socket's edge never saw (decision
   * 0054). Without a cursor, every request the stream carried is skipped.
   */
  withoutRepeats(send: () => void, cursor?: string): void {
    this.repeatsAfter = cursor === undefined ? 0 : (positionOf(cursor, this.token) ?? 0);
    try {
      send();
    } finally {
      this.repeatsAfter = undefined;
    }
  }

  /** The frames after `cursor`, as they were sent; or why a resume from it is refused. */
  after(cursor: string): { ok: true; frames: string[] } | { ok: false; reason: ResumeRefusal } {
    const position = positionOf(cursor, this.token);
    if (position === undefined || position >= this.next) return { ok: false, reason: "unknown_cursor" };
    const oldest = this.frames[0]?.position ?? this.next;
    if (position + 1 < oldest) return { ok: false, reason: "expired_cursor" };
    return { ok: true, frames: this.frames.filter((f) => f.position > position).map((f) => f.frame) };
  }
}

/** The id of a request frame (a method and an id), as JSON text; undefined for anything else. */
function requestIdOf(text: string): string | undefined {
  try {
    const message = JSON.parse(text) as { id?: unknown; method?: unknown };
    return typeof message.method === "string" && message.id !== undefined ? JSON.stringify(message.id) : undefined;
  } catch {
    return undefined;
  }
}
