// The order in which a session's frames reach its agent, as a synchronous state machine: which of
// the three ways each frame takes (the edge link, the agent link, an RPC call to the AgentObject),
// when a frame waits, and the one second try of a frame whose hand-off failed. Part of the session
// machine (session-machine.ts), which gives it its channels through its port; pure, no platform
// import. test/unit/session-machine.test.ts drives it, model-based.
//
// The guarantees, and how:
// - Frames reach the agent in the order they were given, but for two answers to the agent's own
//   requests, which may pass each other. A link carries its frames in order and RPC calls on one stub
//   are delivered in the order made, so a frame takes the agent link only while no RPC call is out,
//   and an answer takes the edge link only while nothing is out on the other two; the frames given
//   while an answer is out on the edge wait here (`afterEdge`) until every such answer is settled.
// - This holds when a failure is of a channel (a link closes: its frames fail oldest first; a stub
//   whose object crashed: its calls throw in order), which is how they fail. A frame the AgentObject
//   fails alone while later ones on its link go through is tried again behind them, and a frame
//   given while the link is closing (its send refused, its frames not yet failed) goes by RPC ahead
//   of their second tries.
// - The one second try of the frames a link failed goes on one fresh stub, in order (found by the
//   model test: a fresh stub each, as before, kept no order between them).
// - A frame reaches the agent at most once: both tries carry the frame's key, and the AgentObject
//   (and, for an answer, the edge) hands a key on once.
// - Every frame given is settled exactly once (`settled`): delivered, not held by the agent, or its
//   hand-off failed twice; only a frame of a session deleted meanwhile is dropped unsettled. A frame
//   that failed on a link or the edge, or whose call threw, is tried once more by RPC (after a link's
//   or a call's failure on a fresh stub: one whose object crashed stays broken).

import type { ToAgent } from "./agent-relay";

/** How a frame sent on a link ended: it reached the agent, it did not, or the link or the AgentObject failed it. */
export type LinkOutcome = "delivered" | "undelivered" | "failed";

/** How an RPC call to the AgentObject ended: true or false as it answered, or it threw. */
export type RpcOutcome = "delivered" | "undelivered" | "threw";

/** The three ways to the agent (the shell's agent-socket.ts and the AgentObject's stub). */
export interface AgentChannels {
  /** On the newest edge link, under `key`; false when there is none or it is closing. `settle` is called once, later. */
  edge(frame: ToAgent, key: number, settle: (outcome: LinkOutcome) => void): boolean;
  /** On the agent link, under `key`; false when there is none or it is closing. `settle` is called once, later. */
  link(frame: ToAgent, key: number, settle: (outcome: LinkOutcome) => void): boolean;
  /**
   * As an RPC call, on a fresh stub when `fresh` (the shell also drops a stub whose call threw);
   * `settle` is called once, later. False when the session is gone (deleted): the frame is dropped.
   */
  rpc(frame: ToAgent, key: number, fresh: boolean, settle: (outcome: RpcOutcome) => void): boolean;
}

/** Told once per frame how it ended: `threw` when its hand-off itself failed (twice). */
export type AfterHandOff = (delivered: boolean, threw: boolean) => void;

/** What the order tells its owner once a frame is settled (session-machine.ts). */
export type FrameSettled = (frame: ToAgent, delivered: boolean, threw: boolean, after: AfterHandOff | undefined) => void;

interface Out {
  frame: ToAgent;
  after: AfterHandOff | undefined;
  via: "edge" | "link" | "rpc";
  /** Already the second try. */
  retried: boolean;
}

export class AgentOrder {
  /** Each frame's key for the AgentObject's once-only hand-off (the shell starts it where no earlier instance's could be in use). */
  private nextKey: number;
  /** RPC calls not yet settled: while there are any, frames go by RPC too, so none overtakes another. */
  private rpcInFlight = 0;
  /** Frames on the agent link not settled yet: while there are any (or RPC calls), an answer goes that way too. */
  private linkInFlight = 0;
  /** Answers on an edge link not settled yet: while there are any, the frames after them wait in `afterEdge`. */
  private edgeInFlight = 0;
  private readonly afterEdge: { frame: ToAgent; after: AfterHandOff | undefined; key: number }[] = [];
  /** What is out, by key (one try of a key is out at a time). */
  private readonly out = new Map<number, Out>();

  constructor(
    private readonly channels: AgentChannels,
    private readonly settled: FrameSettled,
    firstKey: number,
  ) {
    this.nextKey = firstKey;
  }

  /** How many frames wait behind an answer on an edge link (the session's test seam reads it). */
  get heldAfterEdgeAnswer(): number {
    return this.afterEdge.length;
  }

  /** A frame for the agent, fire and forget, in order; `after` learns how it ended. */
  send(frame: ToAgent, after?: AfterHandOff): void {
    this.first(frame, after, this.nextKey++);
  }

  /** The outcome of a frame sent on a link (agent or edge) under `key`. */
  private linkSettled(key: number, outcome: LinkOutcome): void {
    const out = this.out.get(key);
    if (!out || out.via === "rpc") return;
    this.out.delete(key);
    if (out.via === "edge") {
      this.edgeInFlight--;
      // The edge failed it: the one second try goes through the AgentObject (no stub is broken).
      if (outcome === "failed") this.byRpc(out.frame, out.after, key, false);
      else this.settled(out.frame, outcome === "delivered", false, out.after);
      if (this.edgeInFlight === 0) for (const next of this.afterEdge.splice(0)) this.first(next.frame, next.after, next.key);
      return;
    }
    this.linkInFlight--;
    // The link failed, maybe with its AgentObject (a crash): the one try by RPC goes on a fresh stub,
    // and the frames failed with it follow on that same stub (a stub each would keep no order).
    if (outcome === "failed") this.byRpc(out.frame, out.after, key, this.rpcInFlight === 0);
    else this.settled(out.frame, outcome === "delivered", false, out.after);
  }

  /** The outcome of an RPC call made under `key`. */
  private rpcSettled(key: number, outcome: RpcOutcome): void {
    const out = this.out.get(key);
    if (out?.via !== "rpc") return;
    this.out.delete(key);
    this.rpcInFlight--;
    if (outcome !== "threw") this.settled(out.frame, outcome === "delivered", false, out.after);
    // The shell dropped the stub if it is still the one that threw.
    else if (!out.retried) this.byRpc(out.frame, out.after, key, false);
    else this.settled(out.frame, false, true, out.after);
  }

  /** A frame's first try: it waits behind an answer on the edge, or takes the edge, the link or RPC, in that order of preference. */
  private first(frame: ToAgent, after: AfterHandOff | undefined, key: number): void {
    if ((this.edgeInFlight > 0 && frame.type !== "response") || this.afterEdge.length > 0) {
      this.afterEdge.push({ frame, after, key });
      return;
    }
    if (frame.type === "response" && this.rpcInFlight === 0 && this.linkInFlight === 0) {
      this.out.set(key, { frame, after, via: "edge", retried: false });
      if (this.channels.edge(frame, key, (outcome) => this.linkSettled(key, outcome))) {
        this.edgeInFlight++;
        return;
      }
      this.out.delete(key);
    }
    if (this.rpcInFlight === 0) {
      this.out.set(key, { frame, after, via: "link", retried: false });
      this.linkInFlight++;
      if (this.channels.link(frame, key, (outcome) => this.linkSettled(key, outcome))) return;
      this.linkInFlight--;
      this.out.delete(key);
    }
    this.call(frame, after, key, false, false);
  }

  /** The one second try, always by RPC. */
  private byRpc(frame: ToAgent, after: AfterHandOff | undefined, key: number, fresh: boolean): void {
    this.call(frame, after, key, true, fresh);
  }

  private call(frame: ToAgent, after: AfterHandOff | undefined, key: number, retried: boolean, fresh: boolean): void {
    this.out.set(key, { frame, after, via: "rpc", retried });
    this.rpcInFlight++;
    if (this.channels.rpc(frame, key, fresh, (outcome) => this.rpcSettled(key, outcome))) return;
    this.rpcInFlight--;
    this.out.delete(key);
  }
}
