// One client's WebSocket, terminated by the edge Worker. It answers initialize, session/new,
// session/load and session/list itself (with the AgentObject and D1), and relays every other
// message to the SessionObject of its sessionId over one WebSocket per attached session.
// The session wire (frame marks, packed replay: protocol/session-wire.ts) and the id rewriting
// between the sessions and this client (protocol/connection-ids.ts) are pure modules it uses.
// Over 400 lines, knowingly: it is the one place a client connection's state lives (its sessions'
// sockets, its id maps, its rate and its key re-check), and each method is one client request; the
// next split, when it grows, is the session/new|load|resume flow into its own module.

import { recentSessionsOfAgent, sessionIndexed } from "../db/queries/sessions";
import {
  ATTACH_HEADER,
  type AttachRequest,
  type ClientAttachment,
  RESUMED_CAPS_HEADER,
  RESUME_REFUSED_HEADER,
  readSessionFrame,
} from "../protocol/session-wire";
import { ConnectionIds } from "../protocol/connection-ids";
import {
  type JsonRpcId,
  type Message,
  RpcError,
  errorResponse,
  isObject,
  isRequest,
  isResponse,
  parseFrame,
  resultResponse,
  toRpcError,
  sessionIdOf,
} from "../protocol/jsonrpc";
import type { AgentStatus, GatewayObjects, OpenSessionArgs } from "./gateway-objects";
import type { ResponseMessage } from "../protocol/jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST, PROTOCOL_VERSION } from "../protocol/methods";
import { LIVE_SESSION_WINDOW_MS, limitRefusal, limitsOf, liveSessionsError } from "../protocol/tenant-limits";
import { liveSessionCount } from "../db/queries/sessions";
import { type Admission, type RateGate } from "../protocol/rate-limit";
import { ConnectionSlot, rateGate } from "./tenant-limits";
import type { ClientSink } from "./client-sink";
import type { Env } from "../core/env";
import { DEFAULT_KEY_RECHECK_MS, DEFAULT_KEY_UNVERIFIED_GRACE_MS, KeyRecheck, credentialNow } from "./key-recheck";
import { modesNotice, refusedByRole } from "../protocol/people/acp-methods";
import { HOLD, gateModeChanges } from "./mode-gate";
import { HOLD_MODE_CHANGE } from "../protocol/people/mode-approval";
import { withModesMarked } from "../protocol/people/session-modes";
import { logTracedRequest } from "./trace";
import { stage, stageTimingFrom } from "../protocol/stage-timing";
import type { Principal } from "../core/principal";
import { CLOSE, closeQuietly } from "../core/close-codes";
import { ErrorCode } from "../core/rpc-errors";
import { servedCapabilities } from "../protocol/served-capabilities";
import { gatewayPermissionDeadlineMs } from "../protocol/effective-settings";
import { versionNote } from "../protocol/version-negotiation";
import { ConnectionMetrics } from "./connection-metrics";
import { log } from "../core/log";
import { STREAM_METHODS, TRANSPORT_META } from "../protocol/stream-cursor";
import {
  ATTACH_META,
  ATTACH_METHODS,
  type AttachAsk,
  attachCapability,
  attachNotFound,
  detachResult,
  detachedError,
  readAttach,
} from "../protocol/session-attach";

/** WebSocket close code for a protocol violation (RFC 6455). */

export class ClientConnection {
  /** Attached sessions; a promise while attaching, so later messages wait their turn in order. */
  private readonly sessions = new Map<string, Promise<WebSocket>>();
  /** Sessions this connection left by `session/detach`: not attached again by a message naming them, only by attach or load. */
  private readonly detached = new Set<string>();
  /** Session sockets this connection let go: a frame still in flight on one is not the client's any more. */
  private readonly left = new WeakSet<WebSocket>();
  /** This connection's ids for requests the sessions sent to the client. */
  private readonly ids = new ConnectionIds();
  private caps: ClientAttachment["caps"] = { readTextFile: false, writeTextFile: false, terminal: false };
  private closed = false;
  /** ACP's lifecycle: the first message must be initialize (RFD: anything else ends the connection). */
  private initialized = false;

  constructor(
    private readonly env: Env,
    /** The gateway's objects, as this layer sees them (durable-objects/objects.ts `gatewayObjects`). */
    private readonly objects: GatewayObjects,
    private readonly principal: Principal,
    private readonly agent: string,
    connectionId: string,
    private readonly sink: ClientSink,
  ) {
    this.connId = connectionId;
    stageTimingFrom(env);
    const every = Number(env.KEY_RECHECK_MS ?? DEFAULT_KEY_RECHECK_MS);
    this.recheck = setInterval(() => void this.recheckKey(), every > 0 ? every : DEFAULT_KEY_RECHECK_MS);
    this.rate = rateGate(objects, principal.tenantId, principal.settings.limits, "client");
    this.slot = new ConnectionSlot(objects, principal.tenantId, principal.keyId, connectionId);
    this.keyCheck = new KeyRecheck(Number(env.KEY_UNVERIFIED_GRACE_MS ?? DEFAULT_KEY_UNVERIFIED_GRACE_MS));
    this.metrics = new ConnectionMetrics(env.METRICS, principal.tenantId, "client", agent);
  }

  private readonly metrics: ConnectionMetrics;
  /** The connection's id towards the sessions: its own, or the dropped connection's whose streams it resumed (decision 0050). */
  private connId: string;

  get connectionId(): string {
    return this.connId;
  }

  private readonly recheck: ReturnType<typeof setInterval>;
  private readonly keyCheck: KeyRecheck;
  private readonly rate: RateGate;
  /** This connection's place among its key's connections (connectionsPerKey), freed on close. */
  private readonly slot: ConnectionSlot;

  /** One message from the client: a text frame, or an HTTP POST's body (`admitted`: its rate checked already, by admit). */
  receive(data: string | ArrayBuffer, admitted = false): void {
    stage("edge.answer", data);
    if (typeof data !== "string") {
      this.reply(
        errorResponse(null, new RpcError(ErrorCode.invalidRequest, "Binary frames are not supported; send JSON-RPC as text frames")),
      );
      return;
    }
    this.metrics.message();
    void this.onClientFrame(data, admitted).catch((error: unknown) =>
      log("error", "edge.client_frame_failed", "a client frame failed", this.logContext(), error),
    );
  }

  private logContext() {
    return { tenantId: this.principal.tenantId, connectionId: this.connectionId, agent: this.agent };
  }

  /** Whether this connection is attached to the session (HTTP answers 409 for one it is not). */
  isAttached(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /** Leaves one session; the session goes on for its other clients. */
  detach(sessionId: string): void {
    void this.detachSession(sessionId);
  }

  /** A revoked or expired key, or a disabled tenant, ends the connection within one interval. */
  private async recheckKey(): Promise<void> {
    if (this.closed) return;
    this.metrics.flushIfDue();
    this.slot.renewIfDue();
    const check = await credentialNow(this.env, this.principal).then(
      (now) => ({ ok: true as const, valid: now.valid, role: now.role }),
      () => ({ ok: false as const }), // D1 unavailable: KeyRecheck bounds how long that is tolerated
    );
    const verdict = this.keyCheck.verdict(check, Date.now());
    if (this.closed) return;
    if (verdict === "keep" && check.ok && check.role !== this.principal.role) {
      // What the sessions know of this client (its role in their attachments) is no longer true: it reconnects with the new role.
      this.sink.close(CLOSE.roleChanged, `your role changed from ${this.principal.role ?? "none"} to ${check.role ?? "none"}; reconnect`);
      this.close();
      return;
    }
    if (verdict === "keep") return;
    if (verdict === "unverified") {
      closeQuietly(
        this.sink,
        CLOSE.tryAgainLater,
        "the gateway could not verify the API key (its database is unavailable); reconnect later",
      );
    } else if (this.principal.credential.type === "token") {
      closeQuietly(
        this.sink,
        CLOSE.credentialsRevoked,
        "the identity token expired, or the tenant was disabled: reconnect with a fresh token",
      );
    } else closeQuietly(this.sink, CLOSE.credentialsRevoked, "the API key was revoked or expired, or the tenant was disabled");
    this.close();
  }

  // ── from the client ───────────────────────────────────────────────────────────────────────────
  private async onClientFrame(text: string, admitted: boolean): Promise<void> {
    const parsed = parseFrame(text);
    if (!parsed.ok) {
      if (parsed.reply) this.reply(parsed.reply);
      return;
    }
    const message = parsed.message;
    if (!this.initialized && isRequest(message) && message.method === STREAM_METHODS.resume) {
      return this.resumeStreams(message.id, "params" in message ? message.params : undefined);
    }
    if (!this.initialized) {
      if (!isRequest(message) || message.method !== AGENT_METHODS.initialize) {
        this.sink.close(CLOSE.protocolError, "the first message must be an initialize request");
        this.close();
        return;
      }
      this.initialized = true;
    }
    if (isResponse(message)) return this.onClientResponse(message);
    if (!admitted && !this.withinRate(message.method, isRequest(message) ? message.id : null)) return;
    try {
      if (isRequest(message)) await this.onClientRequest(message.id, message.method, message, text);
      else await this.onClientNotification(message.method, message, text);
    } catch (error) {
      if (isRequest(message))
        this.reply(
          errorResponse(message.id, toRpcError(error, "edge", "Internal error in the gateway; the session is unharmed, try again")),
        );
    }
  }

  private async onClientRequest(id: JsonRpcId, method: string, message: Message, text: string): Promise<void> {
    const params = "params" in message ? message.params : undefined;
    logTracedRequest(this.logContext(), method, params);
    const gate = refusedByRole(this.principal.role, method) ?? (await this.gateModes(method, params, true));
    if (gate === HOLD) return this.holdModeChange(id, message);
    if (gate) throw gate;
    switch (method) {
      case AGENT_METHODS.initialize:
        return this.reply(resultResponse(id, await this.initialize(params)));
      case AGENT_METHODS.authenticate:
        // The gateway authenticated this connection by its API key already.
        return this.reply(resultResponse(id, {}));
      case AGENT_METHODS.logout:
        // Ends this connection's authentication only: never relayed (the agent's login is every client's).
        this.reply(resultResponse(id, {}));
        this.sink.close(CLOSE.normal, "logged out");
        return this.close();
      case AGENT_METHODS.sessionNew:
        return this.openSession(id, AGENT_METHODS.sessionNew, params);
      case AGENT_METHODS.sessionLoad:
        return this.loadSession(id, params);
      case AGENT_METHODS.sessionResume:
        return this.resumeSession(id, params);
      case AGENT_METHODS.sessionList:
        return this.reply(resultResponse(id, await this.listSessions(params)));
      case AGENT_METHODS.sessionClose:
        return this.closeSession(id, params);
      case ATTACH_METHODS.attach:
        return this.attachByRequest(id, params);
      case ATTACH_METHODS.detach:
        return this.detachByRequest(id, params);
    }
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined) {
      if (isObject(params) && "sessionId" in params) throw RpcError.invalidParams("params.sessionId must be a string");
      throw new RpcError(
        ErrorCode.methodNotFound,
        `Method not found: ${method}. The gateway routes requests by params.sessionId, and answers initialize, authenticate, session/new, session/load, session/resume and session/list itself.`,
        { method },
      );
    }
    const session = await this.session(sessionId);
    session.send(text);
  }

  private async onClientNotification(method: string, message: Message, text: string): Promise<void> {
    const params = "params" in message ? message.params : undefined;
    const gate = refusedByRole(this.principal.role, method) ?? (await this.gateModes(method, params, false));
    // A notification cannot wait for a second person, so the gate refuses it rather than hold it; never relayed held.
    const refusal =
      gate === HOLD ? new RpcError(ErrorCode.notPermitted, "This change needs a second person's approval; send it as a request.") : gate;
    // A notification has no id to answer: the refusal is an error response with id null, so the client still learns why.
    if (refusal) return this.reply(errorResponse(null, refusal));
    if (method === CANCEL_REQUEST) {
      // Only the session that holds the request acts on it; the others find nothing to cancel.
      for (const pending of this.sessions.values()) (await pending).send(text);
      return;
    }
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined) return; // A notification has no answer; one we cannot route is dropped.
    try {
      (await this.session(sessionId)).send(text);
    } catch {
      // Unknown session: notifications get no error response.
    }
  }

  /** A mode or configuration change that can make the agent ask less: judged and audited (connection/mode-gate.ts). */
  private gateModes(method: string, params: unknown, request: boolean): Promise<RpcError | typeof HOLD | null> {
    return gateModeChanges(
      { db: this.env.DB, principal: this.principal, agent: this.agent, connectionId: this.connectionId },
      method,
      params,
      request,
    );
  }

  /** Four eyes holds this change (decision 0061): the session keeps it, wrapped, until a second person decides. */
  private async holdModeChange(id: JsonRpcId, message: Message): Promise<void> {
    const sessionId = sessionIdOf(message);
    if (sessionId === undefined) throw RpcError.invalidParams("params.sessionId must be a string");
    const session = await this.session(sessionId);
    // It waits as long as the agent's permission requests do.
    const deadlineMs = permissionDeadlineMs(this.env, this.principal);
    session.send(JSON.stringify({ jsonrpc: "2.0", id, method: HOLD_MODE_CHANGE, params: { sessionId, request: message, deadlineMs } }));
  }

  private onClientResponse(message: Message & { id: JsonRpcId | null }): void {
    const answer = this.ids.toSession(message);
    if (!answer) return; // Answer to a request that was withdrawn, or not ours: nothing to do.
    const session = this.sessions.get(answer.sessionId);
    if (!session) return;
    void session.then((ws) => ws.send(answer.text)).catch(() => undefined);
  }

  // ── resuming a dropped WebSocket's streams (the draft RFD, decision 0050) ──────────────────────
  /**
   * `stream/resume {connectionId, streams: {sessionId: cursor}}`, a new socket's first frame in place
   * of initialize: each session replays what the dropped socket missed (its frames after the cursor,
   * with their cursors), then `stream/resumed` with the turn's state, then live. A stream it cannot
   * resume gets `stream/resume_failed {sessionId, reason}` and is not attached: never a live stream
   * that skipped what was missed. Once one resumed, this socket goes on as the dropped connection
   * (its id, its capabilities); with none, it must initialize.
   */
  private async resumeStreams(id: JsonRpcId, params: unknown): Promise<void> {
    const request = resumeRequest(params);
    if (typeof request === "string") return this.reply(errorResponse(id, RpcError.invalidParams(request)));
    // In place of initialize: what the client sends next waits on nothing (a refusal leaves it free to initialize).
    this.initialized = true;
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
    for (const r of refused) this.send(JSON.stringify({ jsonrpc: "2.0", method: STREAM_METHODS.resumeFailed, params: r }));
    if (resumed.length === 0) this.connId = own;
    this.reply(resultResponse(id, { connectionId: this.connId, resumed, refused }));
  }

  private async resumeStream(sessionId: string, cursor: string): Promise<{ ok: true } | { ok: false; reason: string }> {
    const attaching = this.connectSession(sessionId, "resume", undefined, cursor);
    this.sessions.set(sessionId, attaching);
    try {
      await attaching;
      return { ok: true };
    } catch (error) {
      if (this.sessions.get(sessionId) === attaching) this.sessions.delete(sessionId);
      return { ok: false, reason: error instanceof ResumeRefused ? error.reason : "unknown_cursor" };
    }
  }

  // ── answered by the gateway ───────────────────────────────────────────────────────────────────
  private async initialize(params: unknown): Promise<Record<string, unknown>> {
    const fs = isObject(params) && isObject(params.clientCapabilities) ? params.clientCapabilities : {};
    const fsCaps = isObject(fs.fs) ? fs.fs : {};
    this.caps = {
      readTextFile: fsCaps.readTextFile === true,
      writeTextFile: fsCaps.writeTextFile === true,
      terminal: fs.terminal === true,
      elicitationForm: isObject(fs.elicitation) && isObject(fs.elicitation.form),
      elicitationUrl: isObject(fs.elicitation) && isObject(fs.elicitation.url),
      notices: isObject(fs.session) && isObject(fs.session.notices),
    };
    const status = await this.agentStatus();
    // An agent that refused the gateway's initialize: the client learns why, not empty capabilities.
    if (status.failing) throw new RpcError(ErrorCode.internalError, status.failing, { reason: "agent_failing", agent: this.agent });
    const info = status.info;
    const served = servedCapabilities(info?.agentCapabilities);
    const note = versionNote(params);
    return {
      protocolVersion: PROTOCOL_VERSION,
      // The gateway keeps every session's history, so it can always load: it replays them itself.
      // It keeps the sessions list too, so it can always delete from it (protocol/session-delete.ts).
      // Only what the gateway serves reaches the client (protocol/served-capabilities.ts, decision 0042).
      agentCapabilities: {
        ...served,
        loadSession: true,
        sessionCapabilities: sessionCapabilities(served.sessionCapabilities, this.principal.role),
      },
      authMethods: [],
      agentInfo: info?.agentInfo ?? { name: this.agent },
      _meta: {
        acpGateway: {
          connectionId: this.connectionId,
          agent: this.agent,
          agentConnected: status.connected,
          // Which mode and configuration changes need more than driving a session (decision 0041).
          modes: modesNotice(this.principal.role, this.principal.settings.modes),
          ...(status.unreachable ? { agentUnreachable: status.unreachable } : {}),
          // What the agent said about itself, outside any session (`_auth/status_update`): its newest of each.
          ...(status.notices && status.notices.length > 0 ? { agentNotices: status.notices } : {}),
          // A client that asked a newer version is answered v1, and told so in words (decision 0060).
          ...(note ? { protocolVersion: note } : {}),
        },
        // The draft RFD's `capabilities.transport` (resumable streams), here until the RFD lands (decision 0050).
        ...(this.sink.transport ? { [TRANSPORT_META]: this.sink.transport } : {}),
      },
    };
  }

  private async openSession(id: JsonRpcId, method: typeof AGENT_METHODS.sessionNew, params: unknown): Promise<void> {
    await this.checkLiveSessions();
    const answer = await this.openThroughAgent(method, params);
    if (answer.error !== undefined || !isObject(answer.result) || typeof answer.result.sessionId !== "string") {
      return this.reply({ ...answer, id });
    }
    const sessionId = answer.result.sessionId;
    // Register the attach before answering, so a prompt sent right after the answer waits for it.
    const attached = this.attach(sessionId, "replay");
    // Which of the agent's modes are governed, for this session (decision 0061).
    this.reply({ ...answer, result: withModesMarked(answer.result), id });
    await attached.catch(() => undefined);
  }

  private async loadSession(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam("session/load", params);
    if (!(await this.sessionIndexed(sessionId))) {
      const status = await this.agentStatus();
      if (status.info?.agentCapabilities.loadSession !== true) throw RpcError.sessionNotFound(sessionId);
      const answer = await this.openThroughAgent(AGENT_METHODS.sessionLoad, params);
      if (answer.error !== undefined) return this.reply({ ...answer, id });
    }
    void this.detachSession(sessionId);
    this.detached.delete(sessionId);
    await this.attach(sessionId, "load", id);
  }

  /**
   * `session/attach` (the draft RFD, PR #533; decision 0054): beside session/load, for a live session
   * of this tenant. The role asked is checked against the key's (readAttach: never raised); the session
   * replays what `historyPolicy` says, answers, re-sends what waits unless `none`, then streams live —
   * in one step of its own. A second attach replaces the first, as a second load does.
   */
  private async attachByRequest(id: JsonRpcId, params: unknown): Promise<void> {
    const ask = readAttach(params, this.principal.role, () => crypto.randomUUID());
    if (!(await this.sessionIndexed(ask.sessionId))) throw attachNotFound(ask.sessionId);
    void this.detachSession(ask.sessionId);
    this.detached.delete(ask.sessionId);
    await this.attach(ask.sessionId, "attach", id, ask).catch((error: unknown) => {
      throw error instanceof RpcError && error.code === ErrorCode.limitExceeded ? error : attachNotFound(ask.sessionId);
    });
  }

  /** `session/detach`: this client stops receiving the session; the session and its other clients go on. */
  private async detachByRequest(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam(ATTACH_METHODS.detach, params);
    if (!this.sessions.has(sessionId) && !(await this.sessionIndexed(sessionId))) throw attachNotFound(sessionId);
    await this.detachSession(sessionId);
    this.detached.add(sessionId);
    this.reply(resultResponse(id, detachResult(sessionId)));
  }

  private async resumeSession(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam("session/resume", params);
    if (!(await this.sessionIndexed(sessionId))) throw RpcError.sessionNotFound(sessionId);
    if (!this.sessions.has(sessionId)) await this.attach(sessionId, "live");
    this.reply(resultResponse(id, {}));
  }

  /** session/close: this client leaves the session; the session, and the agent's, live on for the others. */
  private async closeSession(id: JsonRpcId, params: unknown): Promise<void> {
    const sessionId = sessionIdParam("session/close", params);
    if (!this.sessions.has(sessionId) && !(await this.sessionIndexed(sessionId))) throw RpcError.sessionNotFound(sessionId);
    void this.detachSession(sessionId);
    this.reply(resultResponse(id, {}));
  }

  private async listSessions(params: unknown): Promise<Record<string, unknown>> {
    const cwd = isObject(params) && typeof params.cwd === "string" ? params.cwd : null;
    const cursor = isObject(params) && typeof params.cursor === "string" ? Number(params.cursor) : Number.MAX_SAFE_INTEGER;
    const limit = 100;
    const rows = await recentSessionsOfAgent(this.env.DB, {
      tenantId: this.principal.tenantId,
      agent: this.agent,
      cwd,
      updatedBefore: Number.isFinite(cursor) ? cursor : Number.MAX_SAFE_INTEGER,
      limit,
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      sessions: page.map((r) => ({
        sessionId: r.sessionId,
        cwd: r.cwd,
        ...(r.title ? { title: r.title } : {}),
        updatedAt: new Date(r.updatedAt).toISOString(),
      })),
      ...(rows.length > limit && last ? { nextCursor: String(last.updatedAt) } : {}),
    };
  }

  // ── sessions ─────────────────────────────────────────────────────────────────────────────────
  /** The attached session socket, attaching live on first use if the session exists for this tenant. */
  private session(sessionId: string): Promise<WebSocket> {
    const existing = this.sessions.get(sessionId);
    if (existing) return existing;
    if (this.detached.has(sessionId)) return Promise.reject(detachedError(sessionId));
    const attaching = this.sessionIndexed(sessionId).then((found) => {
      if (!found) {
        this.sessions.delete(sessionId);
        throw RpcError.sessionNotFound(sessionId);
      }
      return this.connectSession(sessionId, "live");
    });
    this.sessions.set(sessionId, attaching);
    attaching.catch(() => undefined);
    return attaching;
  }

  private attach(sessionId: string, mode: AttachRequest["mode"], loadRequestId?: JsonRpcId, ask?: AttachAsk): Promise<WebSocket> {
    const attaching = this.connectSession(sessionId, mode, loadRequestId, undefined, ask);
    this.sessions.set(sessionId, attaching);
    attaching.catch(() => this.sessions.delete(sessionId));
    return attaching;
  }

  private async connectSession(
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
      if (typeof event.data === "string" && !this.left.has(ws)) this.onSessionFrame(sessionId, event.data);
    });
    ws.addEventListener("close", (event) => this.onSessionLost(sessionId, ws, event.code));
    ws.addEventListener("error", () => this.onSessionLost(sessionId, ws));
    if (this.closed) ws.close(CLOSE.normal, "client gone");
    return ws;
  }

  /** Lets go of the session's socket (settles once it is let go); what it still carries is dropped. */
  private detachSession(sessionId: string): Promise<void> {
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

  /** A session socket that drops under a live client loses messages: the client must reconnect and load. */
  private onSessionLost(sessionId: string, ws: WebSocket, code?: number): void {
    if (this.closed) return;
    const attached = this.sessions.get(sessionId);
    void attached?.then((current) => {
      if (current !== ws) return; // a socket we replaced on purpose
      if (code === CLOSE.sessionDeleted) {
        // session/delete: this client was told (_acp_gateway/session_deleted) and leaves; its connection stays.
        if (this.sessions.get(sessionId) === attached) this.sessions.delete(sessionId);
        return;
      }
      this.sink.close(CLOSE.serviceRestart, `session ${sessionId} was interrupted; reconnect and session/load to resume`);
      this.close();
    });
  }

  // ── from the sessions ────────────────────────────────────────────────────────────────────────
  private onSessionFrame(sessionId: string, text: string): void {
    stage("edge.in", text);
    const frame = readSessionFrame(text);
    if (frame.kind === "messages") {
      for (const message of frame.texts) this.send(message, sessionId);
      return;
    }
    const rewritten = this.ids.toClient(sessionId, frame.text);
    if (rewritten !== undefined) this.send(rewritten, sessionId);
  }

  // ── plumbing ─────────────────────────────────────────────────────────────────────────────────
  private sessionIndexed(sessionId: string): Promise<boolean> {
    return sessionIndexed(this.env.DB, this.principal.tenantId, sessionId);
  }

  private agentStub() {
    return this.objects.agent(this.principal.tenantId, this.agent);
  }

  private async agentStatus(): Promise<AgentStatus> {
    // SAFETY: RPC types turn `unknown` fields into `never`; the value is the AgentStatus the object returned.
    return (await this.agentStub().status(this.principal.tenantId, this.agent)) as unknown as AgentStatus;
  }

  /** session/new, or session/load of a session the gateway does not know, asked of the agent for this client. */
  private async openThroughAgent(method: OpenSessionArgs["method"], params: unknown): Promise<ResponseMessage> {
    const args: OpenSessionArgs = {
      tenantId: this.principal.tenantId,
      agent: this.agent,
      method,
      params,
      createdBy: this.principal.label,
      deadlineMs: permissionDeadlineMs(this.env, this.principal),
      relayAlwaysAsMade: this.principal.settings.relayAlwaysAsMade === true,
      limits: this.principal.settings.limits,
    };
    // SAFETY: as above; openSession returns a JSON-RPC response object.
    return (await this.agentStub().openSession(args)) as unknown as ResponseMessage;
  }

  /** session/new beyond the tenant's live sessions is refused before the agent is asked (unknown count: allowed). */
  private async checkLiveSessions(): Promise<void> {
    const limit = limitsOf(this.principal.settings.limits).liveSessionsPerTenant;
    const since = Date.now() - LIVE_SESSION_WINDOW_MS;
    const live = await liveSessionCount(this.env.DB, this.principal.tenantId, since).catch(() => 0);
    if (live >= limit) {
      const error = liveSessionsError(limit);
      throw new RpcError(error.code, error.message, error.data);
    }
  }

  /** The message rates (the connection's and the tenant's) for one request or notification; HTTP answers a refusal 429. */
  admit(method: string): Admission {
    const admission = this.rate.admit(method);
    if (!admission.ok) this.metrics.refused(admission.error.data.reason);
    return admission;
  }

  /** Over a message rate: an error for what was refused; a sustained flood closes the connection. */
  private withinRate(method: string, id: JsonRpcId | null): boolean {
    const admission = this.admit(method);
    if (admission.ok) return true;
    if (!admission.close) {
      this.reply({ jsonrpc: "2.0", id, error: admission.error });
      return false;
    }
    const { limit, value } = admission.error.data;
    const whose = limit === "messagesPerSecondPerTenant" ? "while the tenant was over its" : "over";
    this.sink.close(CLOSE.rateExceeded, `kept sending ${whose} ${value} messages a second`);
    this.close();
    return false;
  }

  private reply(message: object): void {
    const error = (message as { error?: { code?: unknown } }).error;
    if (typeof error?.code === "number") this.metrics.answeredError(error.code);
    this.send(JSON.stringify(message));
  }

  private send(text: string, sessionId?: string): void {
    if (this.closed) return;
    try {
      this.sink.send(text, sessionId);
      stage("edge.out", text);
    } catch {
      this.close();
    }
  }

  /** Settles once the connection's slot among its key's connections is freed (after close). */
  slotReleased(): Promise<void> {
    return this.slot.release();
  }

  /**
   * The connection ends. `resumable`: its sessions keep its streams for a `stream/resume` (a WebSocket
   * that dropped); false lets them go at once (an HTTP connection ended: it resumes in its own
   * ConnectionObject, never at the sessions), and the others learn it left now (decision 0060).
   */
  close(resumable = true): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.recheck);
    this.metrics.close();
    void this.slot.release();
    const [code, reason] = resumable ? [CLOSE.normal, "client gone"] : [CLOSE.detached, "connection ended"];
    for (const pending of this.sessions.values()) {
      void pending.then((ws) => ws.close(code, reason)).catch(() => undefined);
    }
    this.sessions.clear();
    this.sink.close(CLOSE.normal, "closed");
  }
}

/** A resume the session refused, with its reason (protocol/stream-cursor.ts `ResumeRefusal`). */
class ResumeRefused extends Error {
  constructor(readonly reason: string) {
    super(`resume refused: ${reason}`);
  }
}

/** Sessions one `stream/resume` may name. */
const MAX_RESUMED_STREAMS = 64;
const CONNECTION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `stream/resume`'s params, or what is wrong with them. */
function resumeRequest(params: unknown): { connectionId: string; streams: Record<string, string> } | string {
  if (!isObject(params) || typeof params.connectionId !== "string" || !CONNECTION_ID.test(params.connectionId)) {
    return "stream/resume needs params.connectionId: the Acp-Connection-Id of the dropped connection";
  }
  const streams = params.streams;
  if (!isObject(streams) || Object.keys(streams).length === 0 || Object.keys(streams).length > MAX_RESUMED_STREAMS) {
    return `stream/resume needs params.streams: {sessionId: cursor}, 1 to ${MAX_RESUMED_STREAMS} sessions`;
  }
  const cursors: Record<string, string> = {};
  for (const [sessionId, cursor] of Object.entries(streams)) {
    if (typeof cursor !== "string")
      return `stream/resume: the cursor of session ${sessionId} must be a string (the last _meta["acp/cursor"] seen)`;
    cursors[sessionId] = cursor;
  }
  return { connectionId: params.connectionId, streams: cursors };
}

/** What `initialize` says of sessions: the agent's served capabilities, delete, and attach under `_meta` until PR #533 lands (decision 0054). */
function sessionCapabilities(served: unknown, role: Principal["role"]): Record<string, unknown> {
  const agents = isObject(served) ? served : {};
  const meta = isObject(agents._meta) ? agents._meta : {};
  return { ...agents, delete: {}, _meta: { ...meta, [ATTACH_META]: attachCapability(role) } };
}

/** The `params.sessionId` a session method needs, or the invalid-params error that says so. */
function sessionIdParam(method: string, params: unknown): string {
  const sessionId = isObject(params) ? params.sessionId : undefined;
  if (typeof sessionId !== "string") throw RpcError.invalidParams(`${method} needs params.sessionId (a string)`);
  return sessionId;
}

/** How long a permission request of the session waits for an answer: the tenant's setting, else PERMISSION_DEADLINE_MS, else 10 min. */
function permissionDeadlineMs(env: Env, principal: Principal): number {
  const fromTenant = principal.settings.permissionDeadlineMs;
  if (typeof fromTenant === "number" && fromTenant > 0) return fromTenant;
  return gatewayPermissionDeadlineMs(env.PERMISSION_DEADLINE_MS);
}
