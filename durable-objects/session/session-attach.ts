// How a socket joins a SessionObject (its `fetch`): a client attaches — history, then (for
// session/load) the answer, then pending requests, then live, in one synchronous step — or resumes its
// stream (decision 0050); the AgentObject opens the agent link, the edge an edge link.

import { resultResponse } from "../../protocol/jsonrpc";
import { AGENT_LINK_HEADER } from "../../protocol/agent-link-wire";
import { EDGE_LINK_HEADER } from "../../protocol/agent-edge-wire";
import {
  ATTACH_HEADER,
  type AttachRequest,
  type ClientAttachment,
  RESUMED_CAPS_HEADER,
  RESUME_REFUSED_HEADER,
  attachRequestOf,
} from "../../protocol/session-wire";
import { STREAM_METHODS } from "../../protocol/stream-cursor";
import { attachedClientsBound, attachedClientsError } from "../../protocol/tenant-limits";
import { replayedFrames } from "../../protocol/replayed-history";
import { heldNoticeOnAttach } from "../../protocol/gateway-notices";
import { type StreamTurnState, promptsInFlight, streamTurnState, turnStateMeta } from "../../protocol/turn-state";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import { type AgentSocket, EDGE_LINK_TAG } from "./agent-socket";
import {
  type AttachedClients,
  adoptRing,
  attachmentOf,
  clientTags,
  peekRing,
  resumedClient,
  send,
  sendAsIs,
  sendPacked,
  takeRing,
} from "./clients";
import { CompactionTally } from "./compaction";
import type { PermissionMachine } from "../../protocol/permission-machine";
import { servedHistory } from "./message-ids";
import type { ModeApprovals } from "./mode-approvals";
import { attachAnswer, loadResult } from "./session-info";
import type { SessionStore } from "./store";
import type { RequestRows } from "./request-rows";

export class SessionAttach {
  /** Old sockets a resume, load or attach on the same connection took over: their close detaches nobody. */
  private readonly takenOverSockets = new WeakSet<WebSocket>();

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly store: SessionStore,
    private readonly requests: RequestRows,
    private readonly clients: AttachedClients,
    private readonly permissions: PermissionMachine<WebSocket>,
    private readonly agentSocket: AgentSocket,
    private readonly modes: ModeApprovals,
  ) {}

  /** Whether another socket of its connection took this one over (its close then detaches nobody); asked once, as it closes. */
  takenOver(ws: WebSocket): boolean {
    return this.takenOverSockets.delete(ws);
  }

  /** The object's `fetch`: a client's attach or resume, the AgentObject's link, or an edge's link. */
  upgrade(request: Request): Response {
    if (request.headers.get("Upgrade") !== "websocket") return new Response("expected a WebSocket", { status: 426 });
    const linkFrom = request.headers.get(AGENT_LINK_HEADER);
    if (linkFrom !== null) return this.acceptAgentLink(linkFrom);
    const edgeFrom = request.headers.get(EDGE_LINK_HEADER);
    if (edgeFrom !== null) return this.acceptEdgeLink(edgeFrom);
    const attach = attachRequestOf(request.headers.get(ATTACH_HEADER));
    const meta = this.store.meta;
    if (!attach || !meta || meta.tenantId !== attach.tenantId || meta.sessionId !== attach.sessionId) {
      return new Response("session not found", { status: 404 });
    }
    if (attach.mode === "resume") return this.resumeStream(attach);
    const refused = this.overBound(attach.client.connId, meta.sessionId, meta.limits);
    if (refused) return refused;
    this.replaceSockets(attach.client);
    const pair = new WebSocketPair();
    const [edge, server] = [pair[0], pair[1]];
    // Everything below is synchronous: no other event can run between reading the log and joining
    // the live fan-out, so the client sees no gap and no duplicate.
    this.ctx.acceptWebSocket(server, clientTags(attach.client.connId));
    server.serializeAttachment(attach.client);
    this.clients.departures.back(attach.client.connId);
    // session/attach's (decision 0054); every other mode's is full. after_message from where the log has the message, else full.
    const served = servedHistory(this.ctx.storage.sql, attach.attach?.historyPolicy ?? "full", attach.attach?.afterMessageId);
    if (attach.mode !== "live" && served.policy !== "none" && served.policy !== "pending_only") {
      const tally = new CompactionTally();
      sendPacked(server, tally.count(replayedFrames(this.store.replayable(served.afterSeq))));
      if (tally.compacted) send(server, tally.notice(meta.sessionId));
    }
    if (attach.mode === "load" && attach.loadRequestId !== undefined) {
      send(server, JSON.stringify(resultResponse(attach.loadRequestId, loadResult(meta))));
    }
    if (attach.mode === "attach" && attach.loadRequestId !== undefined) {
      const turn = turnStateOf(this.store, this.requests, attach.client.connId) ?? undefined;
      const answer = attachAnswer(attach, server, this.clients, this.store, turn, served, this.ctx.storage.sql);
      send(server, JSON.stringify(resultResponse(attach.loadRequestId, answer)));
    }
    const history = served.policy;
    if (history !== "none") {
      this.permissions.sendPendingTo(server);
      for (const notice of this.modes.noticesForAttach(attach.client.caps.notices === true)) send(server, notice); // held mode changes (decision 0061)
    }
    // A held session takes no prompt: a client that advertised notices is told so now, whatever history it asked for (decision 0063).
    const held = this.store.hold && attach.client.caps.notices === true ? heldNoticeOnAttach(meta.sessionId, this.store.hold) : undefined;
    if (held) send(server, held);
    this.permissions.clientsChanged();
    return new Response(null, { status: 101, webSocket: edge });
  }

  /**
   * A load or attach on a connection attached already replaces its socket: the old one is taken over
   * and closed here, so the connection never looks gone (no detach: its copies, the agent's requests it
   * serves and the notify wait stay as they are) and nothing is routed to a socket the edge let go.
   */
  private replaceSockets(client: ClientAttachment): void {
    for (const old of this.clients.all()) {
      const was = attachmentOf(old);
      if (was?.connId !== client.connId || was.keyId !== client.keyId) continue;
      this.takenOverSockets.add(old);
      closeQuietly(old, CLOSE.detached, "replaced by another socket of this connection");
    }
  }

  /**
   * The session's bound on attached clients (decision 0060): a connection attached already (a second
   * attach or a load replacing its socket) takes its own place; a resume, too, and is not counted here.
   */
  private overBound(connId: string, sessionId: string, limits: unknown): Response | undefined {
    const bound = attachedClientsBound(limits);
    const others = this.clients.list().filter((c) => c.connId !== connId).length;
    if (others < bound) return undefined;
    return Response.json(attachedClientsError(sessionId, bound), { status: 429 });
  }

  /**
   * `stream/resume` of a client whose socket dropped (decision 0050): its stream's frames after the
   * cursor, as they were sent, then `stream/resumed` with the turn's state, then what waits on it and
   * has not been sent on the stream, then live — one synchronous step, as an attach. Refused (409,
   * and nothing attached) for a cursor this session cannot resume from. The old socket may still look
   * open (the drop not yet seen here): its stream is taken over and it is closed.
   */
  private resumeStream(attach: AttachRequest): Response {
    const connId = attach.client.connId;
    for (const old of this.clients.all()) {
      const client = attachmentOf(old);
      if (client?.connId !== connId || client.keyId !== attach.client.keyId) continue;
      // Only a resume it can serve takes a live socket's stream: a bad cursor leaves the socket as it is.
      if (!peekRing(old)?.after(attach.resumeFrom ?? "").ok) continue;
      const ring = takeRing(old);
      if (ring) this.clients.retained.retain(client, ring);
      this.takenOverSockets.add(old);
      closeQuietly(old, CLOSE.normal, "resumed on another socket");
    }
    const resumed = this.clients.retained.take(connId, attach.client.keyId, attach.resumeFrom ?? "");
    if (!resumed.ok) return new Response(resumed.reason, { status: 409, headers: { [RESUME_REFUSED_HEADER]: resumed.reason } });
    this.clients.departures.back(connId); // back within the window: never announced gone (decision 0060)
    const pair = new WebSocketPair();
    const [edge, server] = [pair[0], pair[1]];
    this.ctx.acceptWebSocket(server, clientTags(connId));
    // Who the client is now (role, person) as the edge says; what it can serve, as it said when it first attached.
    const client = resumedClient(attach.client, resumed.client);
    server.serializeAttachment(client);
    adoptRing(server, resumed.ring);
    for (const frame of resumed.frames) sendAsIs(server, frame);
    const turn = turnStateOf(this.store, this.requests, connId) ?? undefined;
    sendAsIs(
      server,
      JSON.stringify({
        jsonrpc: "2.0",
        method: STREAM_METHODS.resumed,
        params: { sessionId: attach.sessionId, _meta: turnStateMeta(turn) },
      }),
    );
    resumed.ring.withoutRepeats(() => this.permissions.sendPendingTo(server), attach.resumeFrom);
    this.permissions.clientsChanged();
    return new Response(null, { status: 101, webSocket: edge, headers: { [RESUMED_CAPS_HEADER]: JSON.stringify(client.caps) } });
  }

  /**
   * The AgentObject's link (agent-socket.ts): only the session's own agent opens one. The header
   * cannot come from outside: only the gateway's own objects and Worker make requests to this object.
   */
  private acceptAgentLink(agent: string): Response {
    const meta = this.store.meta;
    if (!meta || meta.agent !== agent) return new Response("session not found", { status: 404 });
    const pair = new WebSocketPair();
    this.agentSocket.accept(pair[1]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  /**
   * The edge's link (worker/agent-connection.ts): the agent's notifications for this session, which
   * the edge delivers itself while its AgentObject has granted it (protocol/agent-edge-wire.ts). In
   * only: nothing is sent to the agent on it. Only the session's own agent's edge opens one.
   */
  private acceptEdgeLink(agent: string): Response {
    const meta = this.store.meta;
    if (!meta || meta.agent !== agent) return new Response("session not found", { status: 404 });
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [EDGE_LINK_TAG]);
    pair[1].serializeAttachment({ link: "edge" });
    return new Response(null, { status: 101, webSocket: pair[0] });
  }
}

/**
 * The turn's state for a client resuming its stream: `promptRequestId` is its own id of a prompt of
 * the turn still in flight, if it sent one (the oldest, when an agent that queues prompts has several).
 */
export function turnStateOf(store: SessionStore, requests: RequestRows, connId: string): StreamTurnState | null {
  if (!store.meta) return null;
  const turn = store.turn;
  if (turn.state === "idle") return streamTurnState("idle", false, null);
  const prompts = promptsInFlight(turn);
  const prompt = requests.inflight().find((r) => r.connId === connId && prompts.includes(r.gwId))?.clientId ?? null;
  return streamTurnState(turn.state, store.hasAsking(), prompt);
}
