// One client connection's sockets to its sessions: one WebSocket per attached session, to its
// SessionObject, opened with the attach header (protocol/session-wire.ts) that says who the client is
// there (its connection id, key, role, capabilities). They are attached, replaced, resumed and let go
// here; a frame arriving on one goes to the connection (`frame`), and one that drops under a live
// client ends the connection (`lost`): the client must reconnect and load, never miss messages.

import { CLOSE, closeQuietly } from "../core/close-codes";
import type { Principal } from "../core/principal";
import { sessionIndexed } from "../db/queries/sessions";
import { type JsonRpcId, RpcError } from "../protocol/jsonrpc";
import { type AttachAsk, detachedError } from "../protocol/session-attach";
import {
  ATTACH_HEADER,
  type AttachRequest,
  type ClientAttachment,
  RESUMED_CAPS_HEADER,
  RESUME_REFUSED_HEADER,
} from "../protocol/session-wire";
import type { ResumeRequest } from "../protocol/stream-resume";
import { limitRefusal } from "../protocol/tenant-limits";
import type { GatewayObjects } from "./gateway-objects";

/** What the sockets tell the connection that holds them. */
interface SessionSocketEvents {
  /** A text frame from a session, on the socket that is still the client's. */
  frame(sessionId: string, text: string): void;
  /** A session's socket dropped under a live client: the connection ends with this close. */
  lost(code: number, reason: string): void;
}

/** What a `stream/resume` did: the sessions now live on this socket, and those refused with why. */
interface Resumed {
  resumed: string[];
  refused: { sessionId: string; reason: string }[];
}

export class SessionSockets {
  /** Attached sessions; a promise while attaching, so later messages wait their turn in order. */
  private readonly sessions = new Map<string, Promise<WebSocket>>();
  /** Sessions this connection left by `session/detach`: not attached again by a message naming them, only by attach or load. */
  private readonly detached = new Set<string>();
  /** Session sockets this connection let go: a frame still in flight on one is not the client's any more. */
  private readonly left = new WeakSet<WebSocket>();
  /** The connection's id towards the sessions: its own, or the dropped connection's whose streams it resumed (decision 0050). */
  connId: string;
  /** The capabilities the client advertised in initialize (or the dropped connection's, after a resume). */
  caps: ClientAttachment["caps"] = { readTextFile: false, writeTextFile: false, terminal: false };
  private closed = false;

  constructor(
    private readonly db: D1Database,
    private readonly objects: GatewayObjects,
    private readonly principal: Principal,
    connectionId: string,
    private readonly events: SessionSocketEvents,
  ) {
    this.connId = connectionId;
  }

  /** Whether the connection is attached to the session (or attaching). */
  has(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /** The session's socket if it is attached (or attaching); never attaches. */
  get(sessionId: string): Promise<WebSocket> | undefined {
    return this.sessions.get(sessionId);
  }

  /** Every attached session's socket, in the order they were attached. */
  all(): Iterable<Promise<WebSocket>> {
    return this.sessions.values();
  }

  /** Whether the session is in the tenant's index of sessions. */
  indexed(sessionId: string): Promise<boolean> {
    return sessionIndexed(this.db, this.principal.tenantId, sessionId);
  }

  /** The attached session socket, attaching live on first use if the session exists for this tenant. */
  session(sessionId: string): Promise<WebSocket> {
    const existing = this.sessions.get(sessionId);
    if (existing) return existing;
    if (this.detached.has(sessionId)) return Promise.reject(detachedError(sessionId));
    const attaching = this.indexed(sessionId).then((found) => {
      if (!found) {
        this.sessions.delete(sessionId);
        throw RpcError.sessionNotFound(sessionId);
      }
      return this.connect(sessionId, "live");
    });
    this.sessions.set(sessionId, attaching);
    attaching.catch(() => undefined);
    return attaching;
  }

  attach(sessionId: string, mode: AttachRequest["mode"], loadRequestId?: JsonRpcId, ask?: AttachAsk): Promise<WebSocket> {
    const attaching = this.connect(sessionId, mode, loadRequestId, undefined, ask);
    this.sessions.set(sessionId, attaching);
    attaching.catch(() => this.sessions.delete(sessionId));
    return attaching;
  }

  /**
   * session/load or session/attach: the session attachable again, and attached anew. The socket it
   * replaces is let go at once (what it still carries is dropped) but closed only once the new one is
   * attached or refused: the session sees the connection replace its socket, never leave.
   */
  reattach(sessionId: string, mode: AttachRequest["mode"], loadRequestId: JsonRpcId, ask?: AttachAsk): Promise<WebSocket> {
    const old = this.sessions.get(sessionId);
    this.detached.delete(sessionId);
    const attaching = this.attach(sessionId, mode, loadRequestId, ask);
    const settled = attaching.then(
      () => undefined,
      () => undefined,
    );
    void old?.then(
      (ws) => {
        this.left.add(ws);
        return settled.then(() => closeQuietly(ws, CLOSE.detached, "detached"));
      },
      () => undefined,
    );
    return attaching;
  }

  /** session/detach: let go, and a message naming the session no longer attaches it (only attach or load do). */
  async detach(sessionId: string): Promise<void> {
    await this.leave(sessionId);
    this.detached.add(sessionId);
  }

  /** Lets go of the session's socket (settles once it is let go); what it still carries is dropped. */
  leave(sessionId: string): Promise<void> {
    const existing = this.sessions.get(sessionId);
    if (!existing) return Promise.resolve();
    this.sessions.delete(sessionId);
    return existing.then(
      (ws) => {
        this.left.add(ws);
        ws.close(CLOSE.detached, "detached");
      },
      () => undefined,
    );
  }

  /**
   * `stream/resume {connectionId, streams: {sessionId: cursor}}` (the draft RFD, decision 0050): each
   * session replays what the dropped socket missed (its frames after the cursor, with their cursors),
   * then `stream/resumed` with the turn's state, then live. A stream it cannot resume is refused (the
   * client gets `stream/resume_failed {sessionId, reason}`) and is not attached: never a live stream
   * that skipped what was missed. While the sessions are asked, and after once one resumed, this
   * connection is the dropped one (its id, its capabilities); with none resumed, its own again.
   */
  async resume(request: ResumeRequest): Promise<Resumed> {
    const own = this.connId;
    this.connId = request.connectionId;
    const outcomes = await Promise.all(
      Object.entries(request.streams).map(async ([sessionId, cursor]) => ({
        sessionId,
        outcome: await this.resumeStream(sessionId, cursor),
      })),
    );
    const resumed = outcomes.filter((o) => o.outcome.ok).map((o) => o.sessionId);
    const refused = outcomes.flatMap((o) => (o.outcome.ok ? [] : [{ sessionId: o.sessionId, reason: o.outcome.reason }]));
    if (resumed.length === 0) this.connId = own;
    return { resumed, refused };
  }

  /** Closes every session's socket with this code; a socket still attaching is closed once it opens. */
  close(code: number, reason: string): void {
    this.closed = true;
    for (const pending of this.sessions.values()) {
      void pending.then((ws) => ws.close(code, reason)).catch(() => undefined);
    }
    this.sessions.clear();
  }

  private async resumeStream(sessionId: string, cursor: string): Promise<{ ok: true } | { ok: false; reason: string }> {
    const attaching = this.connect(sessionId, "resume", undefined, cursor);
    this.sessions.set(sessionId, attaching);
    try {
      await attaching;
      return { ok: true };
    } catch (error) {
      if (this.sessions.get(sessionId) === attaching) this.sessions.delete(sessionId);
      return { ok: false, reason: error instanceof ResumeRefused ? error.reason : "unknown_cursor" };
    }
  }

  private async connect(
    sessionId: string,
    mode: AttachRequest["mode"],
    loadRequestId?: JsonRpcId,
    resumeFrom?: string,
    ask?: AttachAsk,
  ): Promise<WebSocket> {
    const attach: AttachRequest = {
      tenantId: this.principal.tenantId,
      sessionId,
      mode,
      ...(loadRequestId !== undefined ? { loadRequestId } : {}),
      ...(resumeFrom !== undefined ? { resumeFrom } : {}),
      ...(ask
        ? {
            attach: {
              historyPolicy: ask.historyPolicy,
              role: ask.role,
              ...(ask.afterMessageId !== undefined ? { afterMessageId: ask.afterMessageId } : {}),
            },
          }
        : {}),
      client: {
        connId: this.connId,
        keyId: this.principal.keyId,
        user: this.principal.label,
        ...(this.principal.person ? { person: { issuer: this.principal.person.issuer, subject: this.principal.person.subject } } : {}),
        // session/attach as observer: an observer in this session, whatever the key may (decision 0054).
        role: ask?.sessionRole ?? this.principal.role ?? "observer",
        caps: this.caps,
        attachedAt: Date.now(),
        ...(ask ? { attachedAs: ask.as } : {}),
      },
    };
    const stub = this.objects.session(this.principal.tenantId, sessionId);
    const response = await stub.fetch("https://session.internal/attach", {
      headers: { Upgrade: "websocket", [ATTACH_HEADER]: JSON.stringify(attach) },
    });
    const ws = response.webSocket;
    if (mode === "resume" && response.status === 409)
      throw new ResumeRefused(response.headers.get(RESUME_REFUSED_HEADER) ?? "unknown_cursor");
    // The session's bound on attached clients (decision 0060): its body is the LimitError to answer.
    if (response.status === 429) throw limitRefusal(await response.json());
    if (response.status !== 101 || !ws) throw RpcError.sessionNotFound(sessionId);
    const caps = response.headers.get(RESUMED_CAPS_HEADER);
    // SAFETY: the header is the session's JSON of the ClientAttachment caps this connection advertised.
    if (caps) this.caps = JSON.parse(caps) as ClientAttachment["caps"];
    ws.accept();
    ws.addEventListener("message", (event) => {
      if (typeof event.data === "string" && !this.left.has(ws)) this.events.frame(sessionId, event.data);
    });
    ws.addEventListener("close", (event) => this.onLost(sessionId, ws, event.code));
    ws.addEventListener("error", () => this.onLost(sessionId, ws));
    if (this.closed) ws.close(CLOSE.normal, "client gone");
    return ws;
  }

  /** A session socket that drops under a live client loses messages: the client must reconnect and load. */
  private onLost(sessionId: string, ws: WebSocket, code?: number): void {
    if (this.closed) return;
    const attached = this.sessions.get(sessionId);
    void attached?.then((current) => {
      if (current !== ws) return; // a socket we replaced on purpose
      if (code === CLOSE.sessionDeleted) {
        // session/delete: this client was told (_acp_gateway/session_deleted) and leaves; its connection stays.
        if (this.sessions.get(sessionId) === attached) this.sessions.delete(sessionId);
        return;
      }
      this.events.lost(CLOSE.serviceRestart, `session ${sessionId} was interrupted; reconnect and session/load to resume`);
    });
  }
}

/** A resume the session refused, with its reason (protocol/stream-cursor.ts `ResumeRefusal`). */
class ResumeRefused extends Error {
  constructor(readonly reason: string) {
    super(`resume refused: ${reason}`);
  }
}
