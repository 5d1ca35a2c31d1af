// The client connections attached to a session: one hibernatable WebSocket per (client connection,
// session), opened by the edge Worker. What the object knows of each lives in the socket's
// attachment (it must stay under 2 KB), so it survives hibernation; sockets are found by tag.

export interface ClientAttachment {
  /** The edge connection id (Acp-Connection-Id). */
  connId: string;
  keyId: string;
  /** The key's user label: who is behind this client. */
  user: string | null;
  /** What the client advertised in initialize: whether it can serve fs, terminal and elicitation requests. */
  caps: { readTextFile: boolean; writeTextFile: boolean; terminal: boolean; elicitationForm?: boolean; elicitationUrl?: boolean };
  attachedAt: number;
}

/** The header the Worker uses to describe the connection it attaches. */
export const ATTACH_HEADER = "X-Acp-Gateway-Attach";

export interface AttachRequest {
  tenantId: string;
  sessionId: string;
  client: ClientAttachment;
  /** replay: history then live; load: history, the session/load answer, then live; live: live only. */
  mode: "replay" | "load" | "live";
  loadRequestId?: string | number;
}

export function connTag(connId: string): string {
  return `conn:${connId}`;
}

export function attachmentOf(ws: WebSocket): ClientAttachment | undefined {
  return ws.deserializeAttachment() as ClientAttachment | undefined;
}

export class AttachedClients {
  constructor(private readonly ctx: DurableObjectState) {}

  all(): WebSocket[] {
    return this.ctx.getWebSockets();
  }

  byConnection(connId: string): WebSocket | undefined {
    return this.ctx.getWebSockets(connTag(connId))[0];
  }

  /** Sends one frame to every attached client, or to all but one connection. */
  broadcast(text: string, exceptConnId?: string): void {
    for (const ws of this.ctx.getWebSockets()) {
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
    return true;
  } catch {
    return false;
  }
}

/**
 * Frames that carry an id of the session's own (requests to a client, `$/cancel_request` naming one)
 * start with this mark, so the edge Worker parses and rewrites only those into the connection's id
 * space and passes every other frame (updates, responses) on untouched, without parsing it.
 */
export const REWRITE_MARK = "\u0001";

export function sendRewritable(ws: WebSocket, text: string): boolean {
  return send(ws, REWRITE_MARK + text);
}

/**
 * Replay goes to the edge in packs: one frame holding many logged messages, separated by NUL (which
 * valid JSON text never contains), so a long history costs the edge a few events instead of one per
 * message. The edge unpacks and sends each message to the client as its own frame.
 */
export const PACK_MARK = "\u0002";
export const PACK_SEPARATOR = "\u0000";
const PACK_BYTES = 512 * 1024;

export function sendPacked(ws: WebSocket, bodies: Iterable<string>): void {
  let pack: string[] = [];
  let size = 0;
  for (const body of bodies) {
    pack.push(body);
    size += body.length;
    if (size >= PACK_BYTES) {
      send(ws, PACK_MARK + pack.join(PACK_SEPARATOR));
      pack = [];
      size = 0;
    }
  }
  if (pack.length > 0) send(ws, PACK_MARK + pack.join(PACK_SEPARATOR));
}
