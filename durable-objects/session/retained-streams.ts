// The session streams of client connections whose WebSocket dropped, kept in memory for the
// retention window (decision 0050) so the client can resume them with `stream/resume` on a new
// socket: the ring of frames it was sent (clients.ts stamps them), what was broadcast or answered to
// it while it was away, and what the session knew of the client. Only the key that held the stream
// can resume it; a cursor of another stream is refused.

import type { ClientAttachment } from "../../protocol/session-wire";
import type { ResumeRefusal } from "../../protocol/stream-cursor";
import { type StreamRing, WEBSOCKET_RETENTION } from "../../protocol/stream-ring";

/** Dropped streams one session keeps at once; past it the oldest is let go (its client falls back to session/load). */
const MAX_RETAINED = 32;

interface Retained {
  ring: StreamRing;
  client: ClientAttachment;
  timer: ReturnType<typeof setTimeout>;
}

export type Resumed = { ok: true; ring: StreamRing; frames: string[]; client: ClientAttachment } | { ok: false; reason: ResumeRefusal };

export class RetainedStreams {
  private readonly byConnection = new Map<string, Retained>();

  /** A client's socket closed: its stream is kept for the window. */
  retain(client: ClientAttachment, ring: StreamRing): void {
    this.drop(client.connId);
    // The timer also keeps the object from hibernating, which would free the ring, while it runs.
    const timer = setTimeout(() => this.drop(client.connId), WEBSOCKET_RETENTION.seconds * 1000);
    this.byConnection.set(client.connId, { ring, client, timer });
    if (this.byConnection.size > MAX_RETAINED) {
      const oldest = this.byConnection.keys().next().value;
      if (oldest !== undefined) this.drop(oldest);
    }
  }

  /** A message for a connection while it is away (the answer to its prompt): kept in its stream, given on a resume. */
  stamp(connId: string, text: string): void {
    this.byConnection.get(connId)?.ring.stamp(text);
  }

  /** A message for every client (an update, a notice): every stream kept gets it too, but `exceptConnId`'s. */
  stampAll(text: string, exceptConnId?: string): void {
    for (const [connId, retained] of this.byConnection) if (connId !== exceptConnId) retained.ring.stamp(text);
  }

  /**
   * A resume of connection `connId`'s stream by key `keyId` from `cursor`: the frames after it and
   * the stream, taken out (one resume wins); refused like an unknown cursor for another key's stream.
   */
  take(connId: string, keyId: string, cursor: string): Resumed {
    const retained = this.byConnection.get(connId);
    if (!retained || retained.client.keyId !== keyId) return { ok: false, reason: "unknown_cursor" };
    const after = retained.ring.after(cursor);
    if (!after.ok) return after;
    this.drop(connId);
    return { ok: true, ring: retained.ring, frames: after.frames, client: retained.client };
  }

  private drop(connId: string): void {
    const retained = this.byConnection.get(connId);
    if (!retained) return;
    clearTimeout(retained.timer);
    this.byConnection.delete(connId);
  }
}
