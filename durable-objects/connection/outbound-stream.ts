// One SSE stream of an HTTP connection: the connection's own stream, or one session's. At most one
// reader at a time. While no reader is attached (before the first GET, or while a client reconnects),
// messages are held within a bounded window — a count, a byte size and a time — and handed to the
// next reader in order. Every message carries its stream cursor (protocol/stream-cursor.ts, decision
// 0050) as the SSE id and in `_meta["acp/cursor"]`, and messages already written stay for the window
// too, so a reader whose connection died before the object noticed resumes with Last-Event-ID and
// misses nothing, each message with the cursor it had. A Last-Event-ID this stream cannot resume from
// (another stream's, made up, or older than what it still holds) is refused, never answered with a
// live stream that skips what the client missed. Past the window the stream overflows: what was held
// is dropped and the owner is told, so it can make the client re-attach (a session) or end the
// connection (the connection's).

import { formatCursor, newStreamToken, positionOf, withCursor } from "../../protocol/stream-cursor";

export interface StreamLimits {
  /** Messages held while no reader is attached. */
  maxMessages: number;
  /** Bytes held while no reader is attached, and bytes queued unread by a slow reader. */
  maxBytes: number;
  /** How long a message may wait for a reader. */
  windowMs: number;
  /** How often an idle reader gets an SSE comment, so proxies keep the response open. */
  keepaliveMs: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  maxMessages: 1000,
  maxBytes: 8 * 1024 * 1024,
  windowMs: 30_000,
  keepaliveMs: 15_000,
};

const encoder = new TextEncoder();

/** One JSON-RPC message as an SSE event. JSON text may hold line breaks only as whitespace, so each line is its own data field. */
function sseEvent(text: string): string {
  return `${text
    .split(/\r\n|\r|\n/)
    .map((line) => `data: ${line}`)
    .join("\n")}\n\n`;
}

const SSE_KEEPALIVE = ": keepalive\n\n";

interface Entry {
  seq: number;
  /** The message with its cursor in `_meta`: what every reader is given, first time or replayed. */
  text: string;
  at: number;
}

/** A new reader: its body, or why the cursor it resumes from is refused (the RFD's 409). */
export type Opened =
  { ok: true; body: ReadableStream<Uint8Array>; resumed: boolean } | { ok: false; reason: "busy" | "unknown_cursor" | "expired_cursor" };

export class OutboundStream {
  private reader: ReadableStreamDefaultController<Uint8Array> | undefined;
  /** Recent messages in order, each with its SSE event id: those not yet written, and those written within the window. */
  private log: Entry[] = [];
  private logBytes = 0;
  private nextSeq = 1;
  /** The last event id written to a reader. */
  private delivered = 0;
  private windowTimer: ReturnType<typeof setTimeout> | undefined;
  private keepalive: ReturnType<typeof setInterval> | undefined;
  private ended = false;
  /** This stream's cursor token: a cursor names a message of this stream only if it carries it. */
  private readonly token = newStreamToken((bytes) => crypto.getRandomValues(bytes));

  /**
   * @param onOverflow called once when the window is exceeded (held messages dropped, or a slow reader cut).
   * @param unreadIsOverflow the connection's stream: having no reader for a whole window is itself an overflow
   *   (the client is gone), even with nothing held.
   */
  constructor(
    private readonly limits: StreamLimits,
    private readonly onOverflow: () => void,
    private readonly unreadIsOverflow = false,
  ) {
    if (unreadIsOverflow) this.startWindow();
  }

  /**
   * A response body for a new reader. Without `lastEventId`: what no reader was given, then live.
   * With it (the SSE Last-Event-ID header, a cursor of this stream): every message after it, with
   * the cursors they had, then `acknowledge`'s message (the resume acknowledgement, no cursor of its
   * own), then live, replacing a reader still attached. Refused while another reader holds the stream
   * (without a cursor), and for a cursor this stream did not issue or no longer holds the messages after.
   */
  open(lastEventId?: string, acknowledge?: () => string): Opened {
    if (this.ended || (this.reader && lastEventId === undefined)) return { ok: false, reason: "busy" };
    let from = this.delivered;
    if (lastEventId !== undefined) {
      const position = positionOf(lastEventId, this.token);
      if (position === undefined || position >= this.nextSeq) return { ok: false, reason: "unknown_cursor" };
      const oldest = this.log[0]?.seq ?? this.nextSeq;
      if (position + 1 < oldest) return { ok: false, reason: "expired_cursor" };
      from = position;
      // A resume while the old reader still looks attached: its connection died before the object
      // noticed (the same owner asks, with a cursor only this stream's reader had). The new one takes over.
      if (this.reader) this.dropReader();
    }
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          controller = c;
        },
        cancel: () => {
          if (this.reader === controller) this.detachReader();
        },
      },
      { highWaterMark: this.limits.maxBytes, size: (chunk) => chunk.byteLength },
    );
    this.reader = controller;
    this.stopWindow();
    // A comment first, so the client sees the response start even before any message.
    this.write(": open\n\n");
    for (const entry of this.log) if (entry.seq > from) this.writeEntry(entry);
    if (lastEventId !== undefined && acknowledge) this.write(sseEvent(acknowledge()));
    this.keepalive = setInterval(() => this.write(SSE_KEEPALIVE), this.limits.keepaliveMs);
    return { ok: true, body, resumed: lastEventId !== undefined };
  }

  push(text: string): void {
    if (this.ended) return;
    const seq = this.nextSeq++;
    const entry = { seq, text: withCursor(text, formatCursor(this.token, seq)), at: Date.now() };
    this.log.push(entry);
    this.logBytes += entry.text.length;
    if (this.reader) {
      this.writeEntry(entry);
      this.trim();
      return;
    }
    this.trim();
    const held = this.nextSeq - 1 - this.delivered;
    if (held > this.limits.maxMessages || this.heldBytes() > this.limits.maxBytes) {
      this.overflow();
      return;
    }
    if (!this.windowTimer) this.startWindow();
  }

  /** Ends the reader's response cleanly and drops what is held. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.stopWindow();
    this.log = [];
    this.logBytes = 0;
    this.dropReader();
  }

  /** Forgets messages already written that are past the window or the bounds; never ones not yet written. */
  private trim(): void {
    const since = Date.now() - this.limits.windowMs;
    while (this.log.length > 0) {
      const first = this.log[0] as Entry;
      const over = this.log.length > this.limits.maxMessages || this.logBytes > this.limits.maxBytes || first.at < since;
      if (!over || first.seq > this.delivered) return;
      this.log.shift();
      this.logBytes -= first.text.length;
    }
  }

  private heldBytes(): number {
    let bytes = 0;
    for (const entry of this.log) if (entry.seq > this.delivered) bytes += entry.text.length;
    return bytes;
  }

  private writeEntry(entry: Entry): void {
    this.write(`id: ${formatCursor(this.token, entry.seq)}\n${sseEvent(entry.text)}`);
    if (this.reader) this.delivered = Math.max(this.delivered, entry.seq);
  }

  private write(chunk: string): void {
    const reader = this.reader;
    if (!reader) return;
    try {
      reader.enqueue(encoder.encode(chunk));
    } catch {
      this.detachReader();
      return;
    }
    // A reader that stopped reading must not make the object hold without bound.
    if ((reader.desiredSize ?? 0) < 0) this.overflow();
  }

  private dropReader(): void {
    const reader = this.reader;
    this.detachReader();
    try {
      reader?.close();
    } catch {
      // the reader went away already
    }
  }

  private detachReader(): void {
    if (this.keepalive !== undefined) clearInterval(this.keepalive);
    this.keepalive = undefined;
    this.reader = undefined;
    if (!this.ended && (this.unreadIsOverflow || this.delivered < this.nextSeq - 1)) this.startWindow();
  }

  private startWindow(): void {
    this.stopWindow();
    this.windowTimer = setTimeout(() => {
      this.windowTimer = undefined;
      if (!this.reader && (this.unreadIsOverflow || this.delivered < this.nextSeq - 1)) this.overflow();
    }, this.limits.windowMs);
  }

  private stopWindow(): void {
    if (this.windowTimer !== undefined) clearTimeout(this.windowTimer);
    this.windowTimer = undefined;
  }

  private overflow(): void {
    this.end();
    this.onOverflow();
  }
}
