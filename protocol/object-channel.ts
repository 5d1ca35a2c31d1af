// One end of the link between two of the gateway's objects (the wire: agent-link-wire.ts), as a pure,
// synchronous machine. Both ends use it: the opener (the AgentObject, and the edge for its edge
// links: durable-objects/agent/session-links.ts) delivers batches of the agent's frames and hands on
// the frames a session sends it; the acceptor (the SessionObject: durable-objects/session/agent-socket.ts)
// sends its frames for the agent, numbered, and applies the batches (session-object.ts acks each
// once applied). The shells hold the sockets and the one timer, and do the I/O asked for through
// `ChannelPort`; every rule is here. Model-tested with both ends over simulated links in
// test/unit/object-channel.test.ts.
//
// The guarantees, and how:
// - Numbered, answered once: every request sent (a batch, a frame) waits under its number in one
//   table with one timeout (pending-table.ts) and is settled exactly once: answered by the far end,
//   failed when its link is lost, or failed when overdue. It is forgotten as it settles, so a late
//   or repeated answer, or one on a link that a reconnect replaced, settles nothing.
// - Its own answer: every answer names its request's number (a frame's `sent`/`failed`, a batch's
//   `ack`), and a batch's ack settles only the batch unacked on the link it came on: never one on
//   another link, and a repeated ack never the batch after. (An ack with no number, from a session
//   of the deploy before, is taken for the link's one unacked batch: a link is ordered.)
// - Teardown settles everything: a link lost (its close, a write that failed, or dropped by this
//   end) fails what waited on it at once, oldest first, so the caller re-sends it in order by its
//   fallback (RPC); `closeAll` does so for every link. Nothing is written on a link after that.
// - In order, applied once: a batch goes on a link only while none is unacked there, so what the
//   caller re-sends after a failure never overtakes what went before; the receiver applies each
//   item once by its number (session/agent-link.ts `firstTime`), and the far end hands a frame's number on
//   once (agent-object.ts `fromLink`), so a frame that failed here and is re-sent by RPC under the
//   same number is never applied twice.
// - Reconnects as today: the opener opens a link to a peer at its first delivery and uses it from
//   the next one on; at most `maxLinks` are open or opening; a peer whose link could not be opened
//   is not tried again for `reopenAfterMs` (RPC meanwhile). An overdue batch drops its link (the far
//   end vanished without a close event, or is stuck); an overdue frame fails alone (the AgentObject
//   may be slow handing it on, its link is fine).
// - Idle links close: a sweep closes a link that carried nothing since the sweep before, unless a
//   batch on it is unacked, a frame from it is still being handed on, or its owner keeps it, so an
//   idle object can hibernate.

import type { LinkToAgent, LinkToSession } from "./agent-link-wire";
import { PendingTable } from "./pending-table";

/** The I/O an end asks of its shell. */
export interface ChannelPort<L> {
  /** Writes one message on the link; false when the link would not take it (it is closing). */
  write(link: L, message: LinkToSession | LinkToAgent): boolean;
  /** Closes the link's socket (which may be closed already). */
  close(link: L, reason: string): void;
  /** The opener's only: open a link to `peer`, then report `opened` (with undefined if it could not). */
  open(peer: string): void;
}

/** How a frame for the agent ended: it reached the agent or not, or it failed (its link lost, overdue, or failed by the far end). */
export type FrameOutcome = "delivered" | "undelivered" | "failed";

/** What a request waits for: a batch's ack, or a frame's answer. */
type Answer = "acked" | FrameOutcome;

export interface ChannelOptions {
  /** How long a request may wait for its answer. */
  timeoutMs: number;
  /** Whether an overdue request drops its link (the opener's batches) or only fails (the acceptor's frames). */
  overdueDropsLink: boolean;
  /** The opener's: at most this many links open or opening. */
  maxLinks?: number;
  /** The opener's: after a link could not be opened, that peer's deliveries go by RPC for this long. */
  reopenAfterMs?: number;
  /** The opener's: a batch whose items carry more frame text than this goes by RPC even on an open link. */
  maxBatchChars?: number;
}

interface Link<L> {
  readonly peer: string;
  readonly link: L;
  /** Carried something since the last sweep. */
  used: boolean;
  /** Frames from it still being handed on: the link stays. */
  handing: number;
  /** The number of its unacked batch. */
  batch: number | undefined;
}

/** One end: the opener's or the acceptor's, never both (its batches and the acceptor's frames are numbered apart). */
export class ObjectChannel<L> {
  private readonly pending: PendingTable<number, L, Answer>;
  /** The opener's open links, by peer (one each), and the same by socket. */
  private readonly byPeer = new Map<string, Link<L>>();
  private readonly bySocket = new Map<L, Link<L>>();
  private readonly opening = new Set<string>();
  private readonly failedAt = new Map<string, number>();
  /** The opener's batch numbers (the acceptor's frames are numbered by their sender). */
  private lastBatch = 0;

  constructor(
    private readonly port: ChannelPort<L>,
    private readonly options: ChannelOptions,
  ) {
    this.pending = new PendingTable(options.timeoutMs);
  }

  // ── the opener: batches out, frames in ──────────────────────────────────────────────────────────
  /**
   * Sends a batch on the peer's link; `settle` hears whether it was acked, once. False, and nothing
   * sent, when there is no open link (one is opened for the next batch), a batch is unacked on it,
   * the batch is large, or the write failed (the link is dropped): the caller uses RPC.
   */
  deliver(peer: string, items: unknown[], now: number, settle: (acked: boolean) => void): boolean {
    const link = this.byPeer.get(peer);
    if (!link) {
      this.want(peer, now);
      return false;
    }
    if (link.batch !== undefined) return false;
    link.used = true;
    if (textLength(items) > (this.options.maxBatchChars ?? Infinity)) return false;
    const n = ++this.lastBatch;
    if (!this.port.write(link.link, { t: "batch", n, items })) {
      this.drop(link.link, "the link would not take a batch");
      return false;
    }
    link.batch = n;
    this.pending.add(n, link.link, now, (outcome) => {
      if (link.batch === n) link.batch = undefined;
      if (outcome.kind === "timedOut" && this.options.overdueDropsLink) this.drop(link.link, "a batch was not acknowledged in time");
      settle(outcome.kind === "answered");
    });
    return true;
  }

  /** The peer's link will be wanted soon (the edge's, for a session's answer to a request): opened unless open or opening. */
  prepare(peer: string, now: number): void {
    const link = this.byPeer.get(peer);
    if (link) link.used = true;
    else this.want(peer, now);
  }

  /** What `port.open(peer)` came to: the link, or undefined when it could not be opened (RPC for a while). */
  opened(peer: string, socket: L | undefined, now: number): void {
    this.opening.delete(peer);
    if (socket === undefined) {
      this.failedAt.set(peer, now);
      return;
    }
    this.failedAt.delete(peer);
    const link: Link<L> = { peer, link: socket, used: true, handing: 0, batch: undefined };
    this.byPeer.set(peer, link);
    this.bySocket.set(socket, link);
  }

  /**
   * A message read on one of the opener's links: an ack settles the link's batch; a frame for the
   * agent is returned for the shell to hand on (also from a link dropped already: the acceptor may
   * have sent it again by RPC, and the far end hands a number on once), then `handedOn`.
   */
  fromAcceptor(socket: L, message: LinkToAgent): { n: number; frame: unknown } | undefined {
    const link = this.bySocket.get(socket);
    if (link) link.used = true;
    if (message.t === "ack") {
      // Its own batch only: an ack naming another (a repeat of one settled already) settles nothing.
      const n = message.n ?? link?.batch;
      if (n !== undefined && n === link?.batch) this.pending.answer(n, "acked");
      return undefined;
    }
    if (link) link.handing++;
    return { n: message.n, frame: message.frame };
  }

  /** A frame from the link was handed on (true: it reached the agent), or failed ("failed"): its answer goes back on that link. */
  handedOn(socket: L, n: number, outcome: boolean | "failed"): void {
    const link = this.bySocket.get(socket);
    if (!link) return; // lost meanwhile: the acceptor failed the frame and sent it again by RPC
    link.handing--;
    // A link that will not take it is closing: its close event follows, with the same effect.
    this.port.write(socket, outcome === "failed" ? { t: "failed", n } : { t: "sent", n, delivered: outcome });
  }

  /** The sweep: closes every link that carried nothing since the last one, unless `keep` says so; whether links remain (to sweep again). */
  sweep(keep: (peer: string) => boolean = () => false): boolean {
    for (const link of [...this.byPeer.values()]) {
      if (link.used || link.batch !== undefined || link.handing > 0 || keep(link.peer)) link.used = false;
      else this.drop(link.link, "link closed");
    }
    return this.byPeer.size > 0;
  }

  /** The peer's open link, if any. */
  linkOf(peer: string): L | undefined {
    return this.byPeer.get(peer)?.link;
  }

  /** How many links are open. */
  get open(): number {
    return this.byPeer.size;
  }

  /** Closes every link; what waited on them fails, oldest first. */
  closeAll(reason: string): void {
    for (const link of [...this.byPeer.values()]) this.drop(link.link, reason);
    this.pending.closeAll(reason);
  }

  private want(peer: string, now: number): void {
    if (this.opening.has(peer) || this.byPeer.size + this.opening.size >= (this.options.maxLinks ?? Infinity)) return;
    const failed = this.failedAt.get(peer);
    if (failed !== undefined && now - failed < (this.options.reopenAfterMs ?? 0)) return;
    this.opening.add(peer);
    this.port.open(peer);
  }

  // ── the acceptor: frames out, batches in ────────────────────────────────────────────────────────
  /**
   * Sends a frame for the agent on `socket` under its number `n` (unique across the sender's
   * instances); `settle` hears `delivered`, `undelivered` or `failed`, once. False, and nothing
   * waiting, when the write failed (the link is lost: what waited on it fails first, oldest first)
   * or `n` waits already: the caller uses RPC.
   */
  send(socket: L, n: number, frame: unknown, now: number, settle: (outcome: FrameOutcome) => void): boolean {
    if (this.pending.has(n)) return false;
    if (!this.port.write(socket, { t: "toAgent", n, frame })) {
      this.lost(socket, "the link would not take a frame");
      return false;
    }
    this.pending.add(n, socket, now, (outcome) =>
      settle(outcome.kind === "answered" && outcome.value !== "acked" ? outcome.value : "failed"),
    );
    return true;
  }

  /** The far end's answer to frame `n` (a late one, for a frame settled already, is ignored). */
  answered(message: Extract<LinkToSession, { t: "sent" | "failed" }>): void {
    this.pending.answer(message.n, message.t === "failed" ? "failed" : message.delivered ? "delivered" : "undelivered");
  }

  // ── both ────────────────────────────────────────────────────────────────────────────────────────
  /** The link is gone (its close event): what waited on it fails, oldest first, and it is forgotten. */
  lost(socket: L, reason: string): void {
    const link = this.bySocket.get(socket);
    if (link) {
      this.bySocket.delete(socket);
      if (this.byPeer.get(link.peer) === link) this.byPeer.delete(link.peer);
    }
    this.pending.close(socket, reason);
  }

  /** This end closes the link: lost, and its socket closed. */
  drop(socket: L, reason: string): void {
    this.lost(socket, reason);
    this.port.close(socket, reason);
  }

  /** The time is `now`: what is overdue fails (the shell's one timer calls it at `nextDeadline`). */
  tick(now: number): void {
    this.pending.tick(now);
  }

  /** When the oldest request is overdue; undefined while nothing waits (no timer: the object may hibernate). */
  nextDeadline(): number | undefined {
    return this.pending.nextDeadline();
  }

  /** How many requests wait for their answer. */
  get waiting(): number {
    return this.pending.size;
  }
}

/** How much frame text a batch carries (its items' `text`). */
function textLength(items: unknown[]): number {
  let total = 0;
  for (const item of items) {
    const text = typeof item === "object" && item !== null ? (item as { text?: unknown }).text : undefined;
    if (typeof text === "string") total += text.length;
  }
  return total;
}
