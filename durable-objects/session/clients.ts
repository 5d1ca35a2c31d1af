// The client connections attached to a session: one hibernatable WebSocket per (client connection,
// session), opened by the edge Worker. What the object knows of each lives in the socket's
// attachment (it must stay under 2 KB), so it survives hibernation; sockets are found by tag.
// What goes over these sockets, and how it is marked, is protocol/session-wire.ts.

import { type ClientAttachment, packFrames, rewritable } from "../../protocol/session-wire";
import { stage } from "../../protocol/stage-timing";

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

export class AttachedClients {
  constructor(private readonly ctx: DurableObjectState) {}

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
  }

  list(): ClientAttachment[] {
    return this.all()
      .map(attachmentOf)
      .filter((a): a is ClientAttachment => a !== undefined);
  }
}

/** A send that never throws: a socket that is closing is simply skipped (its close event follows). */
export function send(ws: WebSocket, text: string): boolean {
  try {
    ws.send(text);
    stage("session.out", text);
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
  for (const frame of packFrames(bodies)) send(ws, frame);
}
