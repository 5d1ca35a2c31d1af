// What the AgentObject has taken from the agent for a session and not yet handed on, one queue per
// session, each item numbered once (`seq`). Pure: its rows are written through `OutboxRows`
// (durable-objects/agent/session-outbox.ts is the SQLite table); agent-relay.ts drives it.
//
// The guarantees, and how:
// - Hand on before accepting: an item goes to the session at once when no delivery to it is in
//   flight, and otherwise waits in memory for the next one (one delivery, one event, one commit in
//   the session). Nothing is written on that path: the object cannot hibernate while a delivery is
//   in flight, and what drops its memory then (a crash, a deploy) also closes the agent's
//   connection, which the object notices when it starts again (agent-relay.ts `restarted`).
// - Nothing taken is lost: an item is written only when it must wait with no delivery in flight (a
//   delivery failed: the session has not taken it), and everything for that session then waits
//   behind it. The waiting queue is written as one row, later items one row each, until the session
//   takes them; the rows go when it has. A new instance reads them back (`restore`).
// - Each number once: numbers are reserved in blocks (one row per block, not per item) and a number a
//   previous instance reserved is never handed out again, used or not; the session skips any item it
//   already applied by its number (session/agent-link.ts `firstTime`).
// - Nothing retries for ever: a session whose deliveries fail MAX_DELIVERY_ATTEMPTS times in a row
//   has its waiting items dropped (the caller logs it).

/** What the agent's side sends a session (its `fromAgentBatch` items; session/contract.ts `FromAgent`). */
export type SessionItem = (
  | { kind: "frame"; epoch: number; text: string }
  /** `agentId`: the AgentObject's id of the request, whose map entry goes once the session has the answer. */
  | { kind: "response"; gwId: number; text: string; agentId?: number }
  | { kind: "gone"; epoch: number; reason: string; gwIds: number[] }
) & { seq?: number };

export type Stamped = SessionItem & { seq: number };

/** The outbox's table (SQLite in the object; a Map in the model test). */
export interface OutboxRows {
  /** What a previous instance left: the last number reserved, and the rows in number order. */
  load(): { reservedUpTo: number; rows: { sessionId: string; items: Stamped[]; attempts: number }[] };
  /** Every number up to `last` is reserved (one row, replaced). */
  reserve(last: number): void;
  /** One row of waiting items, in order, keyed by the last one's number. */
  insert(sessionId: string, items: Stamped[], attempts: number): void;
  /** The session took every item up to `seq`: rows keyed at or below it go. */
  deleteUpTo(sessionId: string, seq: number): void;
  setAttempts(sessionId: string, attempts: number): void;
}

/** A session whose deliveries keep failing gives up after this many tries, so nothing retries for ever. */
const MAX_DELIVERY_ATTEMPTS = 20;
/** Sequence numbers reserved at a time (one row written per block). */
const SEQ_BLOCK = 1 << 20;

interface Queue {
  items: Stamped[];
  /** Items up to this seq are in the table too. */
  storedUpTo: number;
  attempts: number;
}

export class AgentOutbox {
  private readonly queues = new Map<string, Queue>();
  private nextSeq: number;
  private reservedUpTo: number;

  /** Restores what the table holds. */
  constructor(private readonly rows: OutboxRows) {
    const { reservedUpTo, rows: stored } = rows.load();
    this.nextSeq = reservedUpTo + 1;
    this.reservedUpTo = reservedUpTo;
    for (const row of stored) {
      const queue = this.queue(row.sessionId);
      for (const item of row.items) {
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
   * Reserves a block of numbers unless this instance holds one. Called when the agent connects, so
   * the row is written in the same commit as the new epoch and no relayed frame waits for it; a frame
   * that finds none reserved (an instance woken after an eviction) pays it.
   */
  reserve(): void {
    this.reserveThrough(this.nextSeq);
  }

  private reserveThrough(last: number): void {
    if (last <= this.reservedUpTo) return;
    this.reservedUpTo = this.nextSeq - 1 + SEQ_BLOCK;
    this.rows.reserve(this.reservedUpTo);
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
    if (items.length === 0) return;
    queue.items = [...items, ...queue.items].sort((a, b) => a.seq - b.seq);
    // A stalled queue is in the table: these go in a row of their own (they may be below what is stored).
    if (queue.storedUpTo > 0) this.rows.insert(sessionId, items, queue.attempts);
  }

  /** Queues an item, stamped with the next number; written only if the session is stalled. */
  add(sessionId: string, item: SessionItem): void {
    const queue = this.queue(sessionId);
    this.reserve();
    queue.items.push({ ...item, seq: this.nextSeq++ } as Stamped);
    if (queue.storedUpTo > 0) this.store(sessionId, queue);
  }

  /** Everything waiting for one session, oldest first. */
  pendingFor(sessionId: string): readonly Stamped[] {
    return this.queues.get(sessionId)?.items ?? [];
  }

  /** The sessions that have something waiting. */
  sessions(): string[] {
    return [...this.queues].filter(([, q]) => q.items.length > 0).map(([id]) => id);
  }

  isEmpty(): boolean {
    return this.sessions().length === 0;
  }

  /** The session has taken every item up to `seq`. */
  delivered(sessionId: string, seq: number): void {
    const queue = this.queues.get(sessionId);
    if (!queue) return;
    queue.items = queue.items.filter((item) => item.seq > seq);
    queue.attempts = 0;
    if (queue.storedUpTo > 0) {
      // A row partly taken (a batch cut at its size bound) stays whole; its taken items are skipped by the session.
      this.rows.deleteUpTo(sessionId, seq);
      if (queue.storedUpTo <= seq) queue.storedUpTo = 0;
    }
    if (queue.items.length === 0) this.queues.delete(sessionId);
  }

  /**
   * A delivery up to `seq` failed: what waits for the session is written (one row) so a restart
   * re-sends it. True when the session has used up its tries (the items are then dropped).
   */
  failed(sessionId: string, seq: number): boolean {
    const queue = this.queue(sessionId);
    queue.attempts++;
    if (queue.attempts >= MAX_DELIVERY_ATTEMPTS) {
      this.delivered(sessionId, seq);
      return true;
    }
    this.store(sessionId, queue);
    this.rows.setAttempts(sessionId, queue.attempts);
    return false;
  }

  /** Writes the items of a queue not yet in the table, as one row keyed by its last item's number. */
  private store(sessionId: string, queue: Queue): void {
    const unstored = queue.items.filter((item) => item.seq > queue.storedUpTo);
    const last = unstored.at(-1);
    if (!last) return;
    this.rows.insert(sessionId, unstored, queue.attempts);
    queue.storedUpTo = last.seq;
  }
}
