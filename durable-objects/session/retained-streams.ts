// The session streams of client connections whose WebSocket dropped, kept in memory for the
// retention window (decision 0050) so the client can resume them with `stream/resume` on a new
// socket: the ring of frames it was sent (clients.ts stamps them), what was broadcast or answered to
// it while it was away, and what the session knew of the client. Only the key that held the stream
// can resume it; a cursor of another stream is refused.

import type { ClientAttachment } from "../../protocol/session-wire";
import type { ResumeRefusal } from "../../protocol/stream-cursor";
import { type StreamRing, WEBSOCKET_RETENTION } from "../../protocol/stream-ring";

/** Dropped streams one session keeps at once; past it the oldest is let go (its client falls back to session/load). */
export const MAX_RETAINED = 32;

interface Retained {
  ring: StreamRing;
  client: ClientAttachment;
  /** When the window ends. Checked when the streams are next touched, not by a timer: a timer would keep the object from being evicted. */
  until: number;
}

export type Resumed = { ok: true; ring: StreamRing; frames: string[]; client: ClientAttachment } | { ok: false; reason: ResumeRefusal };

export class RetainedStreams {
  private readonly byConnection = new Map<string, Retained>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A client's socket closed: its stream is kept for the window. */
  retain(client: ClientAttachment, ring: StreamRing): void {
    this.expire();
    this.byConnection.delete(client.connId);
    this.byConnection.set(client.connId, { ring, client, until: this.now() + WEBSOCKET_RETENTION.seconds * 1000 });
    if (this.byConnection.size > MAX_RETAINED) {
      const oldest = this.byConnection.keys().next().value;
      if (oldest !== undefined) this.byConnection.delete(oldest);
    }
  }

  /** A message for a connection while it is away (the answer to its prompt): kept in its stream, given on a resume. */
  stamp(connId: string, text: string): void {
    if (this.byConnection.size === 0) return;
    this.expire();
    this.byConnection.get(connId)?.ring.stamp(text);
  }

  /** A message for every client (an update, a notice): every stream kept gets it too, but `exceptConnId`'s; `only`: of those clients. */
  stampAll(text: string, exceptConnId?: string, only?: (client: ClientAttachment) => boolean): void {
    if (this.byConnection.size === 0) return;
    this.expire();
    for (const [connId, retained] of this.byConnection)
      if (connId !== exceptConnId && (!only || only(retained.client))) retained.ring.stamp(text);
  }

  /** Whether a client whose stream is kept (and not lapsed) is one `match` accepts. */
  some(match: (client: ClientAttachment) => boolean): boolean {
    if (this.byConnection.size === 0) return false;
    this.expire();
    for (const retained of this.byConnection.values()) if (match(retained.client)) return true;
    return false;
  }

  /** The clients whose stream is kept now (not lapsed): still connected, as a resume may bring them back. */
  clients(): ClientAttachment[] {
    if (this.byConnection.size === 0) return [];
    this.expire();
    return [...this.byConnection.values()].map((r) => r.client);
  }

  /** When connection `connId`'s kept stream lapses (undefined: none kept). */
  lapsesAt(connId: string): number | undefined {
    return this.byConnection.get(connId)?.until;
  }

  /**
   * A resume of connection `connId`'s stream by key `keyId` from `cursor`: the frames after it and
   * the stream, taken out (one resume wins); refused like an unknown cursor for another key's stream.
   */
  take(connId: string, keyId: string, cursor: string): Resumed {
    this.expire();
    const retained = this.byConnection.get(connId);
    if (!retained || retained.client.keyId !== keyId) return { ok: false, reason: "unknown_cursor" };
    const after = retained.ring.after(cursor);
    if (!after.ok) return after;
    this.byConnection.delete(connId);
    return { ok: true, ring: retained.ring, frames: after.frames, client: retained.client };
  }

  /** Streams past their window are let go (a resume of one is refused: its cursor names nothing held). */
  private expire(now = this.now()): void {
    for (const [connId, retained] of this.byConnection) if (retained.until <= now) this.byConnection.delete(connId);
  }
}
