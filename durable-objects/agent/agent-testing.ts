// What tests reach on a live AgentObject (test/workerd/agent-*.test.ts): a seam kept beside the
// instance (core/test-seam.ts, decision 0051), not part of its RPC type, and the holds it lets a test
// put on the object's deliveries to sessions and its grants to the edge. Production reads the seam
// only here: with no test holding anything, every method below passes its frame straight on.

import { type AgentObjectToEdge, CONTROL_MARK, decodeControl, encodeControl } from "../../protocol/agent-edge-wire";
import type { Stamped } from "../../protocol/agent-outbox";
import type { SessionStub } from "../objects";
import type { LinksTesting } from "./session-links";

/** What tests reach on an instance. */
export interface AgentTesting {
  /** The links to the sessions, as a test reads and wraps them (session-links.ts `LinksTesting`). */
  readonly links: LinksTesting;
  /** The current connection epoch, as the store holds it. */
  readonly epoch: number;
  /** Replaces the stub the instance delivers to a session through (by RPC and to open its link). */
  session?: (sessionId: string, real: SessionStub) => SessionStub;
  /**
   * False: the grants the relay gives the edge are withheld (the newest per session kept for `grant`),
   * so every frame of a session goes through this object.
   */
  grants: boolean;
  /** Called for each grant sent to the edge. */
  granted?: (sessionId: string) => void;
  /** While it answers true for a session, a delivery to it waits here; `deliver` sends it once it answers false. */
  held?: (sessionId: string) => boolean;
  /** Called instead of handing a frame on the edge's control socket to the relay, which it is handed as `handle`. */
  controlFrame?: (data: string, epoch: number, handle: () => void) => void;
  /** Sends the delivery held for the session (`held`) now. */
  deliver(sessionId: string): void;
  /** Sends the edge the newest grant withheld for the session (`grants`), naming count `c` instead of its own: a stale grant. False if none was withheld. */
  grant(sessionId: string, c: number): boolean;
}

/** The seam for one instance, and the holds it keeps. */
export class AgentTestHolds {
  readonly testing: AgentTesting;
  /** Deliveries a test holds (`AgentTesting.held`), by session. */
  private readonly heldDeliveries = new Map<string, Stamped[]>();
  /** Grants a test withholds (`AgentTesting.grants`), the newest by session, with the socket each was for. */
  private readonly withheldGrants = new Map<string, { grant: Extract<AgentObjectToEdge, { t: "grant" }>; ws: WebSocket }>();

  /** `deliver`: the object's own delivery of a batch to a session, which a test's hold stands before. */
  constructor(
    private readonly deliverNow: (sessionId: string, items: Stamped[]) => void,
    links: LinksTesting,
    epoch: () => number,
  ) {
    this.testing = {
      links,
      get epoch() {
        return epoch();
      },
      grants: true,
      deliver: (sessionId) => {
        const items = this.heldDeliveries.get(sessionId);
        this.heldDeliveries.delete(sessionId);
        if (items) deliverNow(sessionId, items);
      },
      // On the socket it was withheld from: a grant is its connection's (a newer one has its own).
      grant: (sessionId, c) => {
        const withheld = this.withheldGrants.get(sessionId);
        if (!withheld) return false;
        withheld.ws.send(encodeControl({ ...withheld.grant, c }));
        return true;
      },
    };
  }

  /** The relay's delivery to a session, unless a test holds the session's (`held`). */
  deliver(sessionId: string, items: Stamped[]): void {
    if (this.testing.held?.(sessionId)) this.heldDeliveries.set(sessionId, items);
    else this.deliverNow(sessionId, items);
  }

  /** A frame for the agent's line; a test may watch or withhold the grants among them. */
  send(ws: WebSocket, text: string): void {
    const { grants, granted } = this.testing;
    const grant = (!grants || granted) && text.startsWith(CONTROL_MARK) ? decodeControl(text) : undefined;
    if (grant?.t === "grant") {
      if (!grants) return void this.withheldGrants.set(grant.s, { grant, ws });
      granted?.(grant.s);
    }
    ws.send(text);
  }

  /** A frame on the edge's control socket, handed to the relay by `handle` (or by the test's hook). */
  controlFrame(data: string, epoch: number, handle: () => void): void {
    const hook = this.testing.controlFrame;
    if (hook) hook(data, epoch, handle);
    else handle();
  }
}
