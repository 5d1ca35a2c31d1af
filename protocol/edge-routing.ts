// Which path each of an agent's frames for a session takes at the edge (worker/agent-connection.ts):
// through the AgentObject, or (while the session holds a grant) straight to its SessionObject. Pure:
// the edge gives it the two ways out; the model-based test (test/unit/edge-routing.test.ts) drives it
// with every interleaving of frames, grants, and deliveries that succeed or fail.
//
// The two guarantees, and how:
// - Order: at any moment only one path holds anything of the session that is not applied. A
//   notification or a request goes direct only while the session holds a grant and nothing waits;
//   any other frame (an answer, a `$/cancel_request`) ends the grant and waits here (`held`) until
//   what went direct is applied, then goes through the AgentObject. A grant is taken only if it names the count of frames the edge has sent
//   through the AgentObject for the session (so it covers all of them) and nothing is queued or held.
// - Once: direct items are numbered from the granted range, which the AgentObject reserved from its
//   own numbering (every number it stamps later is above it), so the session applies each once
//   (session/agent-link.ts `firstTime`) whichever path carried it. A failed delivery hands its items back numbered.

import { MAX_BATCH_BYTES, batchPrefix } from "./agent-link-wire";
import type { AgentObjectToEdge, EdgeToAgentObject } from "./agent-edge-wire";
import type { JsonRpcId } from "./jsonrpc";

/** An agent frame the edge delivers to a session itself, as the session's `fromAgentBatch` takes it. */
export interface DirectItem {
  kind: "frame";
  epoch: number;
  text: string;
  seq: number;
}

export interface EdgeRoutingPorts {
  /** A frame (or a handover) for the AgentObject, on the control socket. */
  toAgentObject(message: EdgeToAgentObject): void;
  /** Delivers a batch to the session: resolves once applied, rejects if it may not have been. */
  deliver(sessionId: string, items: DirectItem[]): Promise<void>;
  /** Called whenever a session's direct items are all applied or handed back. */
  drained(): void;
}

interface Route {
  /** Frames of the session sent through the AgentObject: the count a grant must name. */
  sent: number;
  /** While granted: the next number to stamp, the end of the range, the AgentObject's connection epoch. */
  grant?: { next: number; to: number; epoch: number };
  /** Direct items not applied yet, oldest first; the first `inFlight` are in the delivery under way. */
  queue: DirectItem[];
  inFlight: number;
  /** Frames waiting for the direct ones to be applied before they go through the AgentObject. */
  held: string[];
}

export class EdgeRouting {
  private readonly routes = new Map<string, Route>();

  constructor(private readonly ports: EdgeRoutingPorts) {}

  /** Whether a notification or request of the session would go direct now (then `viaEdge` takes it). */
  direct(sessionId: string): boolean {
    const route = this.routes.get(sessionId);
    const grant = route?.grant;
    return grant !== undefined && route?.held.length === 0 && grant.next < grant.to;
  }

  /** A notification or request of the session, already checked as the AgentObject would (`direct` said yes). */
  viaEdge(sessionId: string, text: string): void {
    const route = this.route(sessionId);
    const grant = route.grant;
    if (!grant || route.held.length > 0 || grant.next >= grant.to) return this.viaAgentObject(sessionId, text);
    route.queue.push({ kind: "frame", epoch: grant.epoch, text, seq: grant.next++ });
    this.deliver(sessionId, route);
  }

  /** Any other frame of the session: through the AgentObject, after what went direct, ending the grant. */
  viaAgentObject(sessionId: string, text: string): void {
    const route = this.route(sessionId);
    route.grant = undefined;
    if (route.queue.length > 0 || route.held.length > 0) {
      route.held.push(text);
      return;
    }
    route.sent++;
    this.ports.toAgentObject({ t: "attributed", s: sessionId, c: route.sent, text });
  }

  /** The AgentObject's grant: taken only if it covers everything sent it for the session, and nothing waits here. */
  granted(grant: Extract<AgentObjectToEdge, { t: "grant" }>): boolean {
    const route = this.routes.get(grant.s);
    if (!route || grant.c !== route.sent || route.grant || route.queue.length > 0 || route.held.length > 0) return false;
    route.grant = { next: grant.from, to: grant.to, epoch: grant.epoch };
    return true;
  }

  /** Whether nothing direct is waiting to be applied, for any session. */
  idle(): boolean {
    for (const route of this.routes.values()) if (route.queue.length > 0) return false;
    return true;
  }

  private route(sessionId: string): Route {
    let route = this.routes.get(sessionId);
    if (!route) {
      route = { sent: 0, queue: [], inFlight: 0, held: [] };
      this.routes.set(sessionId, route);
    }
    return route;
  }

  /** One batch in flight per session. */
  private deliver(sessionId: string, route: Route): void {
    if (route.inFlight > 0 || route.queue.length === 0) return;
    const items = route.queue.slice(0, batchPrefix(route.queue, MAX_BATCH_BYTES));
    route.inFlight = items.length;
    let delivery: Promise<void>;
    try {
      delivery = this.ports.deliver(sessionId, items);
    } catch (error) {
      delivery = Promise.reject(error);
    }
    void delivery.then(
      () => {
        route.queue.splice(0, items.length);
        route.inFlight = 0;
        if (route.queue.length > 0) return this.deliver(sessionId, route);
        this.release(sessionId, route);
      },
      () => {
        route.inFlight = 0;
        this.handOver(sessionId, route);
      },
    );
  }

  /** A delivery failed: its items, and all queued after them, go back to the AgentObject numbered, in order. */
  private handOver(sessionId: string, route: Route): void {
    const items = route.queue.splice(0);
    route.grant = undefined;
    if (items.length > 0) {
      route.sent++;
      const texts = items.map((item) => item.text);
      this.ports.toAgentObject({ t: "handover", s: sessionId, c: route.sent, seqs: items.map((item) => item.seq), texts });
    }
    this.release(sessionId, route);
  }

  /** Nothing direct is left unapplied: what waited for it goes through the AgentObject, in order. */
  private release(sessionId: string, route: Route): void {
    for (const text of route.held.splice(0)) {
      route.sent++;
      this.ports.toAgentObject({ t: "attributed", s: sessionId, c: route.sent, text });
    }
    this.ports.drained();
  }
}

/**
 * The agent's open requests on the edge's connection, and the one answer each gets. The edge sees
 * every request the agent sends on its connection (before it goes anywhere) and every answer sent to
 * the agent: a session's, on the session's edge link or through the AgentObject (`answer`), and the
 * AgentObject's own (an error in place of a session's, as plain frames). So the edge, not the
 * AgentObject, is what answers each request once (docs/decisions/0034-permission-round-trip-at-the-edge.md):
 * - Once: an answer goes to the agent only while its request is open, and closes it; a second one
 *   (the session's second try after its edge link closed mid-answer, by RPC through the AgentObject)
 *   finds it closed and is dropped. Nothing here is lost with an AgentObject eviction or a
 *   SessionObject restart; it is lost with the edge's connection, and so is the agent's (its ids end
 *   with the connection: the sessions are told it is gone, and withdraw what it asked).
 * - Never lost: an answer for an open request is sent, whichever way it came first.
 * - Only its own: a session answers only what it was asked (the request named it); the AgentObject's
 *   own answers (`session` null) answer any open request.
 * Keys are ids as JSON, so 1 and "1" differ. An answer names its request by id (and session) alone,
 * as the agent does: an agent that asks again under an id it had answered while a second try of that
 * answer is still on its way could have the new request answered by it (as the AgentObject's account
 * by epoch and id could before; the SDKs number their requests and never reuse an id).
 * Model test: test/unit/edge-routing-answers.test.ts.
 */
export class EdgeAnswers {
  /** Open requests by id (as JSON): the session each named, or null for none. */
  private readonly open = new Map<string, string | null>();
  /** How many open requests each session has (its edge link is kept open for their answers). */
  private readonly perSession = new Map<string, number>();

  /** The agent sent request `id` (of `sessionId`, if it names one); it is open until answered. */
  asked(id: JsonRpcId, sessionId: string | undefined): void {
    const key = JSON.stringify(id);
    // The same id again (never valid JSON-RPC while the first is open) replaces it.
    this.close(key);
    this.open.set(key, sessionId ?? null);
    if (sessionId !== undefined) this.perSession.set(sessionId, (this.perSession.get(sessionId) ?? 0) + 1);
  }

  /** Whether the session has a request of the agent to answer. */
  waiting(sessionId: string): boolean {
    return this.perSession.has(sessionId);
  }

  /** The session an open request named: where the agent's `$/cancel_request` for it belongs. */
  sessionOf(id: unknown): string | undefined {
    if (typeof id !== "string" && typeof id !== "number") return undefined;
    return this.open.get(JSON.stringify(id)) ?? undefined;
  }

  /**
   * An answer to request `id` on its way to the agent, from `session` (null: the AgentObject's own):
   * true if it is to be sent now, which closes the request; false if it answers nothing open to it.
   */
  take(id: unknown, session: string | null): boolean {
    if (typeof id !== "string" && typeof id !== "number") return false;
    const key = JSON.stringify(id);
    const asked = this.open.get(key);
    if (asked === undefined || (session !== null && asked !== session)) return false;
    this.close(key);
    return true;
  }

  private close(key: string): void {
    const asked = this.open.get(key);
    if (asked === undefined) return;
    this.open.delete(key);
    if (asked === null) return;
    const left = (this.perSession.get(asked) ?? 1) - 1;
    if (left > 0) this.perSession.set(asked, left);
    else this.perSession.delete(asked);
  }

  /** How many requests are open. */
  get size(): number {
    return this.open.size;
  }
}
