// The client connections attached to a session: one hibernatable WebSocket per (client connection,
// session), opened by the edge Worker. What the object knows of each lives in the socket's
// attachment (it must stay under 2 KB), so it survives hibernation; sockets are found by tag.
// What goes over these sockets, and how it is marked, is protocol/session-wire.ts.

import { type ClientAttachment, packFrames, rewritable } from "../../protocol/session-wire";
import { type PeerView, clientDisconnectedUpdate, peerView, resolvedInPrShape } from "../../protocol/session-attach";
import { stage } from "../../protocol/stage-timing";
import { StreamRing } from "../../protocol/stream-ring";
import { noticeOfNotification } from "../../protocol/gateway-notices";
import type { Beside } from "../../protocol/permission-machine";
import { rank } from "../../protocol/people/roles";
import { Departures } from "./departures";
import { MAX_RETAINED, RetainedStreams } from "./retained-streams";

/**
 * Each client socket's stream (protocol/stream-ring.ts, decision 0050): every frame sent on the
 * socket is stamped with its cursor there. Keyed by the socket object, so it is one instance's: a
 * socket woken from hibernation starts a new stream, and cursors from before are refused (the ring
 * was in the memory hibernation freed).
 */
const rings = new WeakMap<WebSocket, StreamRing>();

function ringOf(ws: WebSocket): StreamRing {
  let ring = rings.get(ws);
  if (!ring) {
    ring = new StreamRing((bytes) => crypto.getRandomValues(bytes));
    rings.set(ws, ring);
  }
  return ring;
}

/** A socket's stream as it is (undefined when it sent nothing yet), taken from it: for retention after it closed, or for a socket that resumes it. */
export function takeRing(ws: WebSocket): StreamRing | undefined {
  const ring = rings.get(ws);
  rings.delete(ws);
  return ring;
}

/** A socket's stream, left where it is. */
export function peekRing(ws: WebSocket): StreamRing | undefined {
  return rings.get(ws);
}

/** A resumed stream goes on on the new socket: the same cursors, the positions continuing. */
export function adoptRing(ws: WebSocket, ring: StreamRing): void {
  rings.set(ws, ring);
}

function connTag(connId: string): string {
  return `conn:${connId}`;
}

/** Every client socket carries it, so the AgentObject's link (agent-socket.ts) is never taken for a client. */
const CLIENT_TAG = "client";

/** The tags a client's socket is accepted with. */
export function clientTags(connId: string): string[] {
  return [connTag(connId), CLIENT_TAG];
}

/** What the session knows of a client socket; undefined for any other socket (the agent link). */
export function attachmentOf(ws: WebSocket): ClientAttachment | undefined {
  return clientOf(ws.deserializeAttachment());
}

/** A socket's attachment, read once, as a client's; undefined for any other socket's. */
export function clientOf(attachment: unknown): ClientAttachment | undefined {
  const client = attachment as Partial<ClientAttachment> | null | undefined;
  // SAFETY: only client sockets carry an attachment with a connId (session-object.ts `fetch`).
  return typeof client?.connId === "string" ? (client as ClientAttachment) : undefined;
}

/**
 * Who a resuming client is: the edge's word now (key, person), what it could serve and who it said
 * it was when it first attached, and the lesser of the two roles — one that attached as observer
 * (session/attach, decision 0054) stays one after a resume.
 */
export function resumedClient(now: ClientAttachment, before: ClientAttachment): ClientAttachment {
  const role = now.role && before.role && rank(before.role) < rank(now.role) ? before.role : now.role;
  return {
    ...now,
    caps: before.caps,
    ...(role ? { role } : {}),
    ...(before.attachedAs ? { attachedAs: before.attachedAs } : {}),
  };
}

export class AttachedClients {
  /** Streams of clients whose socket dropped, kept for a resume (decision 0050); what is sent to all reaches them too. */
  readonly retained: RetainedStreams;
  /** Those of them not yet announced `client_disconnected`: owed when their stream lapses unresumed (decision 0060). */
  readonly departures: Departures;

  /** `now`: the clock the retention window is read by (a test's, session-testing.ts, or Date.now). */
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly now: () => number = Date.now,
  ) {
    this.retained = new RetainedStreams(now);
    this.departures = new Departures(ctx.storage.sql);
  }

  all(): WebSocket[] {
    return this.ctx.getWebSockets(CLIENT_TAG);
  }

  byConnection(connId: string): WebSocket | undefined {
    return this.ctx.getWebSockets(connTag(connId))[0];
  }

  /** Sends one frame to every attached client, or to all but one connection. */
  broadcast(text: string, exceptConnId?: string): void {
    for (const ws of this.ctx.getWebSockets(CLIENT_TAG)) {
      if (exceptConnId !== undefined && attachmentOf(ws)?.connId === exceptConnId) continue;
      send(ws, text);
    }
    this.retained.stampAll(text, exceptConnId);
  }

  /** One connection's message (an answer to its request): to its socket, or into its stream kept while it is away. */
  toConnection(connId: string, text: string): void {
    const ws = this.byConnection(connId);
    if (ws) send(ws, text);
    else this.retained.stamp(connId, text);
  }

  /**
   * A frame of the permission machine's (its `clients.send` port, session-parts.ts): sent as it is, then
   * what the machine handed beside it — its ACP notice (a rule's answer, or this client's answer
   * refused: decision 0063), and a resolution in the PR's shape to a client that came by
   * `session/attach` (decision 0054).
   */
  sendForMachine(ws: WebSocket, text: string, beside?: Beside): void {
    send(ws, text);
    if (beside?.notice !== undefined) send(ws, beside.notice);
    if (!beside?.resolved || !attachmentOf(ws)?.attachedAs) return;
    const update = resolvedInPrShape(beside.resolved, (connId) => this.peer(connId));
    if (update) send(ws, update);
  }

  /**
   * The ACP `notice` beside a gateway notification just sent to every client (decision 0063), to the
   * clients that advertised notices and into their streams kept for a resume. Never logged: a notice
   * is not history.
   */
  noticeBeside(method: string, params: object): void {
    if (!this.anyTakesNotices()) return;
    const notice = noticeOfNotification(method, params);
    if (notice) this.toNoticeClients(notice);
  }

  /** The ACP `notice` beside a gateway notification sent to this one socket (decision 0063), when its client advertised notices. */
  noticeTo(ws: WebSocket, method: string, params: object): void {
    if (!takesNotices(attachmentOf(ws))) return;
    const notice = noticeOfNotification(method, params);
    if (notice) send(ws, notice);
  }

  /**
   * A `notice` session update, as it is (the agent's own, or one of the gateway's): to the clients that
   * advertised `session.notices` and into their streams kept for a resume; never to another (ACP:
   * notices only to clients that advertise them), never logged (not history).
   */
  toNoticeClients(text: string): void {
    for (const ws of this.all()) if (takesNotices(attachmentOf(ws))) send(ws, text);
    this.retained.stampAll(text, undefined, takesNotices);
  }

  private anyTakesNotices(): boolean {
    return this.all().some((ws) => takesNotices(attachmentOf(ws))) || this.retained.some(takesNotices);
  }

  /**
   * One of the PR's updates (decision 0054): to the clients that came by `session/attach`, but
   * `exceptConnId`, and into their streams kept for a resume.
   */
  toAttached(text: string, exceptConnId?: string): void {
    for (const ws of this.all()) {
      const client = attachmentOf(ws);
      if (client?.attachedAs && client.connId !== exceptConnId) send(ws, text);
    }
    this.retained.stampAll(text, exceptConnId, (client) => client.attachedAs !== undefined);
  }

  /** Whether any client that came by `session/attach` (but `exceptConnId`) would get one of the PR's updates: else none is built. */
  hasAttached(exceptConnId?: string): boolean {
    const wants = (client: ClientAttachment | undefined) => client?.attachedAs !== undefined && client.connId !== exceptConnId;
    return this.all().some((ws) => wants(attachmentOf(ws))) || this.retained.some(wants);
  }

  /**
   * A client left: the clients that came by `session/attach` get the PR's `client_disconnected` — at
   * once when it let go (detached, or nothing to resume), when its stream lapses unresumed when its
   * socket dropped (`kept`, decision 0060). Not when the same connection is attached on another
   * socket (a second attach or a load replaced this one). Owed whether or not anyone came by attach
   * yet: one attaching within the window is told when it lapses (decision 0063).
   */
  departed(ws: WebSocket, client: ClientAttachment, sessionId: string, kept: boolean): void {
    if (this.all().some((o) => o !== ws && attachmentOf(o)?.connId === client.connId)) return;
    if (!kept) return this.toAttached(clientDisconnectedUpdate(sessionId, peerView(client), this.now()));
    const at = this.retained.lapsesAt(client.connId) ?? this.now();
    for (const over of this.departures.add(client.connId, peerView(client), at, MAX_RETAINED))
      this.toAttached(clientDisconnectedUpdate(sessionId, over.peer, this.now()));
  }

  /** The alarm: each client whose stream lapsed unresumed is announced gone, unless its connection is attached again. */
  announceLapsed(sessionId: string): void {
    for (const { connId, peer } of this.departures.due(this.now())) {
      if (this.byConnection(connId)) continue;
      this.toAttached(clientDisconnectedUpdate(sessionId, peer, this.now()));
    }
  }

  private peer(connId: string): PeerView | undefined {
    const ws = this.byConnection(connId);
    const client = ws ? attachmentOf(ws) : undefined;
    return client ? peerView(client) : undefined;
  }

  list(): ClientAttachment[] {
    return this.all()
      .map(attachmentOf)
      .filter((a): a is ClientAttachment => a !== undefined);
  }
}

/** Whether a client advertised ACP notices in its initialize (`clientCapabilities.session.notices`). */
function takesNotices(client: ClientAttachment | undefined): boolean {
  return client?.caps.notices === true;
}

/** A send that never throws: a socket that is closing is simply skipped (its close event follows). The frame gets its stream cursor. */
export function send(ws: WebSocket, text: string): boolean {
  const stamped = ringOf(ws).stamp(text);
  return stamped === undefined ? true : sendAsIs(ws, stamped);
}

/** Frames already stamped (a resume's replay), sent as they are. */
export function sendAsIs(ws: WebSocket, frame: string): boolean {
  try {
    ws.send(frame);
    stage("session.out", frame);
    return true;
  } catch {
    return false;
  }
}

export function sendRewritable(ws: WebSocket, text: string): boolean {
  return send(ws, rewritable(text));
}

/** Sends replayed messages in packs (protocol/session-wire.ts). */
export function sendPacked(ws: WebSocket, bodies: Iterable<string>): void {
  const ring = ringOf(ws);
  for (const frame of packFrames(stamped(ring, bodies))) sendAsIs(ws, frame);
}

function* stamped(ring: StreamRing, bodies: Iterable<string>): Iterable<string> {
  for (const body of bodies) {
    const frame = ring.stamp(body);
    if (frame !== undefined) yield frame;
  }
}
