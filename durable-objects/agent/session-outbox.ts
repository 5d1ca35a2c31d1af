// What the AgentObject has taken from the agent for a session and not yet handed on.
//
// Hand on before accepting: an item goes to the session at once when no call to it is in flight,
// and otherwise waits in memory for the next call (one call, one event, one commit in the session).
// Nothing is written on that path: the object cannot hibernate while a call is in flight, and the
// only things that drop its memory then (a crash, a deploy) also close the agent's connection,
// which the object notices when it starts again (agent-object.ts, `lostConnection`).
//
// An item is written only when it must wait with no call in flight: a call failed (the session has
// not taken it), and everything for that session then waits behind it. The whole waiting queue is
// written as one row, and later items one row each until the session takes them; the rows go when
// it has. A restart reads them back, the alarm re-sends them, and the session skips any it already
// applied by their sequence number (numbers are reserved in blocks: one row per block, not per item,
// written when the agent connects).

import type { FromAgent } from "../session/contract";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_outbox (seq INTEGER PRIMARY KEY, session_id TEXT NOT NULL, item TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS session_outbox_session ON session_outbox (session_id, seq);
CREATE TABLE IF NOT EXISTS session_outbox_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
`;

/** A session whose deliveries keep failing gives up after this many tries, so nothing retries for ever. */
const MAX_DELIVERY_ATTEMPTS = 20;
/** Sequence numbers reserved at a time (one row written per block). */
const SEQ_BLOCK = 1 << 20;

export type Stamped = FromAgent & { seq: number };

interface Queue {
  items: Stamped[];
  /** Items up to this seq are in SQLite too. */
  storedUpTo: number;
  attempts: number;
}

export class SessionOutbox {
  private readonly queues = new Map<string, Queue>();
  private nextSeq = 0;
  private reservedUpTo = 0;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
    const last = sql.exec<{ last: number }>("SELECT last FROM session_outbox_seq WHERE id = 1").toArray()[0]?.last ?? 0;
    // Numbers a previous instance reserved are never handed out again, used or not.
    this.nextSeq = last + 1;
    this.reservedUpTo = last;
    // Rows hold one item (older objects) or a batch of items.
    const rows = sql
      .exec<{ session_id: string; item: string; attempts: number }>("SELECT session_id, item, attempts FROM session_outbox ORDER BY seq")
      .toArray();
    for (const row of rows) {
      const parsed = JSON.parse(row.item) as Stamped | Stamped[];
      const queue = this.queue(row.session_id);
      for (const item of Array.isArray(parsed) ? parsed : [parsed]) {
        queue.items.push(item);
        queue.storedUpTo = Math.max(queue.storedUpTo, item.seq);
      }
      queue.attempts = Math.max(queue.attempts, row.attempts);
    }
  }

  private queue(sessionId: string): Queue {
    let queue = this.queues.get(sessionId);
    if (!queue) {
      queue = { items: [], storedUpTo: 0, attempts: 0 };
      this.queues.set(sessionId, queue);
    }
    return queue;
  }

  /**
   * Reserves a block of numbers unless this instance holds one. The AgentObject calls it when the
   * agent connects, so the row is written in the same commit as the new epoch and no relayed frame
   * waits for it; a frame that finds none reserved (an instance woken after an eviction) pays it.
   */
  reserve(): void {
    this.reserveThrough(this.nextSeq);
  }

  /** Makes sure every number up to `last` is reserved: if not, a new block from `nextSeq` on (one row). */
  private reserveThrough(last: number): void {
    if (last <= this.reservedUpTo) return;
    this.reservedUpTo = this.nextSeq - 1 + SEQ_BLOCK;
    this.sql.exec(
      "INSERT INTO session_outbox_seq (id, last) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET last = excluded.last",
      this.reservedUpTo,
    );
  }

  private stamp(): number {
    this.reserve();
    return this.nextSeq++;
  }

  /**
   * Numbers `count` items ahead, for the edge to stamp a session's notifications with
   * (protocol/agent-edge-wire.ts `grant`): every number stamped here afterwards is above them.
   */
  reserveRange(count: number): { from: number; to: number } {
    const from = this.nextSeq;
    this.nextSeq += count;
    this.reserveThrough(this.nextSeq - 1);
    return { from, to: this.nextSeq };
  }

  /**
   * Queues items the edge numbered from a range it was granted and could not deliver (a `handover`),
   * in their place by number: they were taken from the agent before anything queued since.
   */
  addNumbered(sessionId: string, items: Stamped[]): void {
    const queue = this.queue(sessionId);
    const last = items.at(-1);
    if (!last) return;
    queue.items = [...items, ...queue.items].sort((a, b) => a.seq - b.seq);
    // A stalled queue is in SQLite: these go in a row of their own (they may be below what is stored).
    if (queue.storedUpTo > 0) this.insertRow(sessionId, items, queue.attempts);
  }

  /** Queues an item for a session, stamped with the next sequence number; written only if the session is stalled. */
  add(sessionId: string, item: FromAgent): void {
    const queue = this.queue(sessionId);
    const stamped = { ...item, seq: this.stamp() } as Stamped;
    queue.items.push(stamped);
    if (queue.storedUpTo > 0) this.store(sessionId, queue);
  }

  /** Everything waiting for one session, oldest first. */
  pendingFor(sessionId: string): FromAgent[] {
    return this.queues.get(sessionId)?.items ?? [];
  }

  /** The sessions that have something waiting. */
  sessions(): string[] {
    return [...this.queues].filter(([, q]) => q.items.length > 0).map(([id]) => id);
  }

  /** The session has taken every item up to `seq`. */
  delivered(sessionId: string, seq: number): void {
    const queue = this.queues.get(sessionId);
    if (!queue) return;
    queue.items = queue.items.filter((item) => item.seq > seq);
    queue.attempts = 0;
    if (queue.storedUpTo > 0) {
      // A row partly taken (a batch cut at its size bound) stays whole; its taken items are skipped by the session.
      this.sql.exec("DELETE FROM session_outbox WHERE session_id = ? AND seq <= ?", sessionId, seq);
      if (queue.storedUpTo <= seq) queue.storedUpTo = 0;
    }
    if (queue.items.length === 0) this.queues.delete(sessionId);
  }

  /**
   * A delivery up to `seq` failed: what waits for the session is written (one row) so a restart
   * re-sends it. Returns true when the session has used up its tries (the items are then dropped).
   */
  failed(sessionId: string, seq: number): boolean {
    const queue = this.queue(sessionId);
    queue.attempts++;
    if (queue.attempts >= MAX_DELIVERY_ATTEMPTS) {
      this.delivered(sessionId, seq);
      return true;
    }
    this.store(sessionId, queue);
    this.sql.exec("UPDATE session_outbox SET attempts = ? WHERE session_id = ?", queue.attempts, sessionId);
    return false;
  }

  /**
   * Writes the items of a queue not yet in SQLite, as one row keyed by its last item's number, so a
   * row is deleted only once the session has taken every item in it.
   */
  private store(sessionId: string, queue: Queue): void {
    const unstored = queue.items.filter((item) => item.seq > queue.storedUpTo);
    const last = unstored.at(-1);
    if (!last) return;
    this.insertRow(sessionId, unstored, queue.attempts);
    queue.storedUpTo = last.seq;
  }

  /** One row of waiting items (in order), keyed by the last one's number. */
  private insertRow(sessionId: string, items: Stamped[], attempts: number): void {
    const last = items.at(-1);
    if (!last) return;
    this.sql.exec(
      "INSERT INTO session_outbox (seq, session_id, item, attempts) VALUES (?, ?, ?, ?)",
      last.seq,
      sessionId,
      JSON.stringify(items),
      attempts,
    );
  }

  isEmpty(): boolean {
    return this.sessions().length === 0;
  }
}
