// AgentObject: one per tenant + agent name. The shell of protocol/agent-relay.ts, which decides what
// happens to every frame between the agent and its sessions. This file holds what the relay cannot:
// the sockets (the agent's, restored from their attachments; a dial_out agent's, dialled here), the
// waits (a client's session/new or /load for the agent's answer, a call for the agent's initialize),
// the alarm, the RPC entry points, and the I/O the relay asks for through its ports: the agent's
// connection, the sessions (links, else RPC: session-links.ts), the tables (store.ts, session-outbox.ts).

import { indexSession, sessionOwner } from "../../db/queries/sessions";
import { DurableObject } from "cloudflare:workers";
import { RpcError, errorResponse, isObject, type ResponseMessage } from "../../protocol/jsonrpc";
import type { Limits } from "../../protocol/tenant-limits";
import { AGENT_METHODS } from "../../protocol/methods";
import type { Env } from "../../core/env";
import type { SessionRef } from "../session/contract";
import { AgentRates, FLOOD_REASON } from "../../connection/tenant-limits";
import type { AgentStatus, OpenSessionArgs } from "../../connection/gateway-objects";
import { AGENT_PRINCIPAL_HEADER, type AgentContract, type AgentPrincipal, type ToAgent } from "./contract";
import { Dialer } from "./dialer";
import { SessionOutboxTable } from "./session-outbox";
import { LINK_IDLE_MS, type LinksTesting, SessionLinks, linksTesting, openSessionLink } from "./session-links";
import { AGENT_LINK_HEADER } from "../../protocol/agent-link-wire";
import { AGENT_EDGE_HEADER, type AgentObjectToEdge, CONTROL_MARK, decodeControl, encodeControl } from "../../protocol/agent-edge-wire";
import { ANSWERED_KEPT, type Admission, type AgentLine, AgentRelay, agentFailingError, dropOldest } from "../../protocol/agent-relay";
import type { Stamped } from "../../protocol/agent-outbox";
import { AgentStore } from "./store";
import { stage, stageTimingFrom } from "../../protocol/stage-timing";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import { testSeams } from "../../core/test-seam";
import { ErrorCode } from "../../core/rpc-errors";
import { type SessionStub, gatewayObjects, objects } from "../objects";
import { Pending } from "../pending";
import { type LogContext, type LogLevel, log } from "../../core/log";

/** How long session/new or session/load may take before the client is told the agent did not answer. */
const OPEN_TIMEOUT_MS = 60_000;
/** How long a client's initialize waits for a freshly connected agent to finish its own initialize. */
const INIT_WAIT_MS = 10_000;
/** When the object's alarm re-sends what a session has not taken (after a restart or a failed call). */
const REDELIVERY_MS = 2_000;
/**
 * While the agent has a session's request to answer, the object's alarm fires this often. If the
 * object crashed meanwhile (and so lost the agent's connection), the alarm starts a new instance,
 * which notices (the relay's `started`) even when the agent never dials back in.
 */
const WATCH_MS = 10_000;

/** A dial-in socket's attachment (under 2 KB): its connection epoch, its key, and whether it is the edge's control socket. */
interface Attachment {
  epoch: number;
  keyId?: string;
  expiresAt?: number | null;
  limits?: Partial<Limits>;
  edge?: boolean;
}

/** A connection to the agent: the dial-in socket (the edge's control socket, or the agent's own) or a dial-out one. */
interface Line extends AgentLine {
  ws: WebSocket;
  epoch: number;
}

/** What tests reach on an instance (test/workerd/agent-*.test.ts): a seam, not part of the RPC type. */
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
const seams = testSeams<AgentObject, AgentTesting>("AgentObject");
/** A live instance's test seam (AgentTesting). */
export const agentTesting = seams.of;

export class AgentObject extends DurableObject<Env> implements AgentContract {
  private readonly store: AgentStore;
  private readonly relay: AgentRelay;
  private readonly links: SessionLinks;
  private readonly rates: AgentRates;
  private readonly dialer = new Dialer();
  /** session/new and session/load sent to the agent and awaited in memory, by id: only while the RPC is in flight. */
  private readonly waiters = new Pending<number, null, ResponseMessage>(OPEN_TIMEOUT_MS);
  /** Calls waiting for the agent's answer to initialize (`waitForInitialize`), by a number of their own. */
  private readonly initWaiters = new Pending<number, null, never>(INIT_WAIT_MS);
  private initWaits = 0;
  /** The current epoch's dial-in socket once found (finding it deserialises every socket's attachment). */
  private dialIn?: Line;
  /** The outbound connection of a dial_out agent (not hibernatable: it lives while the object does). */
  private dialOut?: Line;
  private connecting?: Promise<WebSocket | undefined>;
  private readonly sessionStubs = new Map<string, SessionStub>();
  /** The outcome of each session frame handed on, by `${sessionId}:${key}` (`toAgent`), the newest ANSWERED_KEPT. */
  private readonly handedOn = new Map<string, Promise<boolean>>();
  private redeliveryArmed = false;
  private readonly testing: AgentTesting;
  /** Deliveries a test holds (`AgentTesting.held`), by session. */
  private readonly heldDeliveries = new Map<string, Stamped[]>();
  /** Grants a test withholds (`AgentTesting.grants`), the newest by session. */
  private readonly withheldGrants = new Map<string, Extract<AgentObjectToEdge, { t: "grant" }>>();
  private watchArmed = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    stageTimingFrom(env);
    this.store = new AgentStore(ctx.storage.sql);
    this.rates = new AgentRates(gatewayObjects(env));
    this.links = new SessionLinks({
      open: (sessionId) => this.openLink(sessionId),
      // SAFETY: a link carries only what its session's AgentLink sends, a ToAgent (session/agent-link.ts).
      toAgent: (sessionId, frame, n) => this.fromLink(sessionId, frame as ToAgent, n),
      waitUntil: (promise) => ctx.waitUntil(promise),
      idleMs: Number(env.AGENT_LINK_IDLE_MS ?? LINK_IDLE_MS),
    });
    this.relay = new AgentRelay({
      agent: { current: () => this.current(), admit: (epoch, method, id) => this.admit(epoch, method, id) },
      tables: this.store,
      outbox: new SessionOutboxTable(ctx.storage.sql),
      sessions: { deliver: (sessionId, items) => this.deliverUnlessHeld(sessionId, items) },
      alarm: { redeliverSoon: () => this.armRedelivery(), watch: () => this.armWatch() },
      waits: {
        opened: (agentId, answer) => this.waiters.answer(agentId, answer),
        initialized: () => this.initWaiters.closeAll("initialized"),
        gone: (reason) => this.waiters.closeAll(reason),
      },
    });
    const store = this.store;
    this.testing = seams.attach(this, {
      links: linksTesting(this.links),
      get epoch() {
        return store.epoch;
      },
      grants: true,
      deliver: (sessionId) => {
        const items = this.heldDeliveries.get(sessionId);
        this.heldDeliveries.delete(sessionId);
        if (items) this.deliver(sessionId, items);
      },
      grant: (sessionId, c) => {
        const withheld = this.withheldGrants.get(sessionId);
        const line = this.current();
        if (!withheld || !line) return false;
        line.ws.send(encodeControl({ ...withheld, c }));
        return true;
      },
    });
    void ctx.blockConcurrencyWhile(async () => this.relay.started());
  }

  // ── the agent dials in (directly, or through the edge's control socket) ─────────────────────────
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade") !== "websocket") return new Response("expected a WebSocket", { status: 426 });
    const who = JSON.parse(request.headers.get(AGENT_PRINCIPAL_HEADER) ?? "null") as AgentPrincipal | null;
    if (!who) return new Response("missing principal", { status: 400 });
    this.store.meta = { tenantId: who.tenantId, name: who.agent };
    // The newest connection takes over; the old one's sessions stay readable in their objects.
    const previous = this.ctx.getWebSockets();
    this.dialIn = undefined;
    for (const old of previous) closeQuietly(old, CLOSE.replaced, "replaced by a newer connection of the same agent");
    const epoch = this.relay.connected(previous.length > 0);
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [`key:${who.keyId}`]);
    const edge = request.headers.get(AGENT_EDGE_HEADER) === "1";
    const attachment: Attachment = { epoch, keyId: who.keyId, expiresAt: who.expiresAt ?? null, limits: who.limits, edge };
    pair[1].serializeAttachment(attachment);
    this.dialIn = this.lineOf(pair[1], epoch, edge);
    this.rates.overrides = who.limits;
    if (typeof who.expiresAt === "number") this.ctx.waitUntil(this.armAlarmBy(who.expiresAt));
    this.relay.initialize(epoch);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const line = this.dialInOf(ws);
    if (!line) return;
    // The edge (worker/agent-connection.ts) marks where the gateway first has the agent's frame.
    if (!line.edge) {
      stage("agent.in", data);
      return this.relay.agentFrame(data, line.epoch);
    }
    if (typeof data !== "string") return;
    const hook = this.testing.controlFrame;
    if (hook) hook(data, line.epoch, () => this.relay.controlFrame(data, line.epoch));
    else this.relay.controlFrame(data, line.epoch);
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    const epoch = this.forget(ws);
    closeQuietly(ws, code === CLOSE.noStatus ? CLOSE.normal : code, "closed");
    if (epoch !== undefined) this.relay.gone(epoch, reason || `closed with code ${code}`);
  }

  override webSocketError(ws: WebSocket): void {
    const epoch = this.forget(ws);
    if (epoch !== undefined) this.relay.gone(epoch, "connection error");
  }

  /** A dial-in socket, restored from its attachment (and kept, when it is the current epoch's). */
  private dialInOf(ws: WebSocket): Line | undefined {
    if (this.dialIn?.ws === ws) return this.dialIn;
    const attachment = ws.deserializeAttachment() as Attachment | undefined;
    this.rates.overrides ??= attachment?.limits;
    if (!attachment) return undefined;
    const line = this.lineOf(ws, attachment.epoch, attachment.edge === true);
    if (attachment.epoch === this.store.epoch) this.dialIn = line;
    return line;
  }

  /** A dial-in socket is closing: the epoch it ends, if it is the current one. */
  private forget(ws: WebSocket): number | undefined {
    if (this.dialIn?.ws === ws) this.dialIn = undefined;
    const attachment = ws.deserializeAttachment() as Attachment | undefined;
    return attachment && attachment.epoch === this.store.epoch ? attachment.epoch : undefined;
  }

  /** The current epoch's connection (the relay's `agent.current` port). */
  private current(): Line | undefined {
    const epoch = this.store.epoch;
    if (this.dialOut?.epoch === epoch) return this.dialOut;
    if (this.dialIn?.epoch === epoch) return this.dialIn;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as Attachment | undefined;
      if (attachment?.epoch !== epoch) continue;
      this.dialIn = this.lineOf(ws, epoch, attachment.edge === true);
      return this.dialIn;
    }
    return undefined;
  }

  /** The connection's message rates for a frame on the agent's own socket (the relay's `agent.admit` port). */
  private admit(epoch: number, method: string, id: Parameters<AgentRates["admit"]>[4]): Admission {
    const line = this.current();
    const tenantId = this.store.meta?.tenantId;
    if (!line || tenantId === undefined) return "ok";
    const rate = this.rates.admit(line.ws, epoch, tenantId, method, id);
    if (rate === "ok") return "ok";
    if (rate !== "closing") return "dropped";
    if (this.dialOut === line) this.dialOut = undefined;
    return { closed: FLOOD_REASON };
  }

  // ── the agent's connection for a dial_out agent ─────────────────────────────────────────────────
  /** The agent's connection: the dial-in socket, or for a dial_out agent one opened now. */
  private async ensureLine(): Promise<AgentLine | undefined> {
    const line = this.current();
    if (line) return line;
    const meta = this.store.meta;
    if (!meta) return undefined;
    this.connecting ??= this.dialer.connect(this.env, meta, { onOpen: (ws) => this.onDialedOut(ws) }).finally(() => {
      this.connecting = undefined;
    });
    const ws = await this.connecting;
    return ws ? this.lineOf(ws, this.store.epoch, false) : undefined;
  }

  /** A dial-out connection is up: it becomes the current epoch, and the gateway initializes the agent. */
  private async onDialedOut(ws: WebSocket): Promise<void> {
    const epoch = this.relay.connected(false);
    const line = this.lineOf(ws, epoch, false);
    this.dialOut = line;
    ws.addEventListener("message", (event) => this.relay.agentFrame(event.data as string | ArrayBuffer, epoch));
    const lost = (reason: string) => {
      if (this.dialOut !== line) return;
      this.dialOut = undefined;
      this.relay.gone(epoch, reason);
    };
    ws.addEventListener("close", (event) => lost(event.reason || `closed with code ${event.code}`));
    ws.addEventListener("error", () => lost("connection error"));
    this.relay.initialize(epoch);
    await this.waitForInitialize();
  }

  /** Resolves once the current connection has answered initialize (or after INIT_WAIT_MS). */
  private waitForInitialize(): Promise<void> {
    if (this.relay.initialized || this.relay.failing) return Promise.resolve();
    // Answered, or timed out: either way the caller goes on (and finds the agent initialized or not).
    return new Promise((resolve) => this.initWaiters.add(++this.initWaits, null, () => resolve()));
  }

  private notConnected(agent: string): RpcError {
    const unreachable = this.dialer.lastError;
    return unreachable
      ? new RpcError(ErrorCode.internalError, `The agent "${agent}" is unreachable: ${unreachable}`, { reason: "agent_unreachable" })
      : new RpcError(ErrorCode.internalError, `The agent "${agent}" is not connected to the gateway; start it or try again later`, {
          reason: "agent_not_connected",
        });
  }

  // ── RPC from SessionObjects (and the same frames on their links): deliver to the agent ─────────
  /**
   * Delivers one frame; false when it did not reach the agent (a request was then answered with an
   * error, or must be). `key`: the session's number for the frame, the same on its second try (by
   * link, then by RPC): a key seen before gets the first try's outcome and hands nothing on again.
   */
  toAgent(agent: string, ref: SessionRef, frame: ToAgent, key?: number): Promise<boolean> {
    stage("agent.toAgent", frame);
    if (key === undefined) return this.handOn(agent, ref, frame);
    const once = `${ref.sessionId}:${key}`;
    const earlier = this.handedOn.get(once);
    if (earlier) return earlier;
    const outcome = this.handOn(agent, ref, frame);
    this.handedOn.set(once, outcome);
    // A hand-off that threw may be tried again; the kept outcomes are bounded (a second try comes within seconds).
    outcome.catch(() => this.handedOn.delete(once));
    dropOldest(this.handedOn, ANSWERED_KEPT);
    return outcome;
  }

  private async handOn(agent: string, ref: SessionRef, frame: ToAgent): Promise<boolean> {
    if (!this.relay.mayHandOn(ref.tenantId, agent, ref.sessionId)) return false;
    // A dial-in socket is found synchronously, so frames keep their order; a dial_out agent may be dialled now.
    let line = this.current() ?? (frame.type === "request" ? await this.ensureLine() : undefined);
    // An agent accepts nothing before it has answered initialize; waiters wake in arrival order.
    if (line && !this.relay.initialized) {
      await this.waitForInitialize();
      line = this.current();
    }
    // An agent that refused initialize gets nothing: a request is answered with its message.
    const failing = this.relay.failing;
    if (line && failing) {
      if (frame.type === "request") this.relay.unreachable(ref.sessionId, frame.gwId, agentFailingError(agent, failing));
      return frame.type === "request";
    }
    if (!line && frame.type === "request") {
      this.relay.unreachable(ref.sessionId, frame.gwId, this.notConnected(agent));
      return true; // answered, with the error
    }
    return this.relay.handOn(ref.sessionId, frame);
  }

  private fromLink(sessionId: string, frame: ToAgent, n: number): Promise<boolean> {
    const meta = this.store.meta;
    return meta ? this.toAgent(meta.name, { tenantId: meta.tenantId, sessionId }, frame, n) : Promise.resolve(false);
  }

  /** A line to the agent: its sends go through `toLine`. */
  private lineOf(ws: WebSocket, epoch: number, edge: boolean): Line {
    return { ws, epoch, edge, send: (text) => this.toLine(ws, text) };
  }

  /** A frame for the agent's line; a test may watch or withhold the grants among them (AgentTesting). */
  private toLine(ws: WebSocket, text: string): void {
    const { grants, granted } = this.testing;
    const grant = (!grants || granted) && text.startsWith(CONTROL_MARK) ? decodeControl(text) : undefined;
    if (grant?.t === "grant") {
      if (!grants) return void this.withheldGrants.set(grant.s, grant);
      granted?.(grant.s);
    }
    ws.send(text);
  }

  // ── deliveries to the sessions (the relay's `sessions` port) ─────────────────────────────────────
  /** The relay's delivery to a session, unless a test holds the session's (AgentTesting `held`). */
  private deliverUnlessHeld(sessionId: string, items: Stamped[]): void {
    if (this.testing.held?.(sessionId)) this.heldDeliveries.set(sessionId, items);
    else this.deliver(sessionId, items);
  }

  /** A batch for a session: on its link when one is open (session-links.ts), otherwise by RPC. */
  private deliver(sessionId: string, items: Stamped[]): void {
    const call = (this.links.deliver(sessionId, items) ?? this.session(sessionId).fromAgentBatch(items)).then(
      () => this.relay.delivered(sessionId, items),
      (e: unknown) => {
        this.log("warn", "agent.delivery_failed", "delivering to a session failed; the alarm retries", { sessionId }, e);
        this.sessionStubs.delete(sessionId); // a stub that threw may be broken for good
        this.relay.deliveryFailed(sessionId);
      },
    );
    this.ctx.waitUntil(call);
  }

  /** The session's end of a link (session-links.ts), or undefined when the session refuses it. */
  private async openLink(sessionId: string): Promise<WebSocket | undefined> {
    const meta = this.store.meta;
    return meta ? openSessionLink(this.session(sessionId), AGENT_LINK_HEADER, meta.name) : undefined;
  }

  private session(sessionId: string): SessionStub {
    let stub = this.sessionStubs.get(sessionId);
    if (!stub) {
      // Only an AgentObject that holds its meta (its tenant) delivers to sessions: without it there is no session to name.
      const tenantId = this.store.meta?.tenantId;
      if (tenantId === undefined) throw new Error("the agent connection has no meta: it cannot name a session");
      stub = objects.session(this.env, tenantId, sessionId);
      this.sessionStubs.set(sessionId, stub);
    }
    const replace = seams.find(this)?.session;
    return replace ? replace(sessionId, stub) : stub;
  }

  // ── the alarm: redelivery, the watch over a lost connection, expired keys ─────────────────────
  private armWatch(): void {
    if (this.watchArmed) return;
    this.watchArmed = true;
    this.ctx.waitUntil(this.armAlarmBy(Date.now() + WATCH_MS));
  }

  private armRedelivery(): void {
    if (this.redeliveryArmed) return;
    this.redeliveryArmed = true;
    this.ctx.waitUntil(this.armAlarmBy(Date.now() + REDELIVERY_MS));
  }

  /** The alarm fires at the earliest of what asked for it (alarm() re-arms each). */
  private async armAlarmBy(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }

  override alarm(): void {
    this.closeExpired();
    this.redeliveryArmed = false;
    this.watchArmed = false;
    this.relay.alarm();
  }

  /** Agent keys expire: the connection closes then, within seconds, as a client's does. */
  private closeExpired(): void {
    const now = Date.now();
    let next: number | undefined;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as Attachment | undefined;
      const expiresAt = attachment?.expiresAt;
      if (typeof expiresAt !== "number") continue;
      if (expiresAt <= now && attachment?.keyId) this.closeConnections(attachment.keyId, "the agent key expired");
      else if (expiresAt > now) next = Math.min(next ?? expiresAt, expiresAt);
    }
    if (next !== undefined) this.ctx.waitUntil(this.armAlarmBy(next));
  }

  // ── RPC from the Worker ──────────────────────────────────────────────────────────────────────
  /** A revoked key, or a disabled tenant (keyId null): its agent connection closes now. */
  closeConnections(keyId: string | null, reason: string): number {
    const sockets = keyId === null ? this.ctx.getWebSockets() : this.ctx.getWebSockets(`key:${keyId}`);
    for (const ws of sockets) {
      const epoch = this.forget(ws);
      closeQuietly(ws, CLOSE.credentialsRevoked, reason);
      if (epoch !== undefined) this.relay.gone(epoch, reason);
    }
    // The tenant disabled, the agent removed or re-registered: a dial-out connection closes too.
    const dialOut = keyId === null ? this.dialOut : undefined;
    if (dialOut) {
      this.dialOut = undefined;
      closeQuietly(dialOut.ws, CLOSE.normal, reason);
      this.relay.gone(dialOut.epoch, reason);
    }
    return sockets.length + (dialOut ? 1 : 0);
  }

  async status(tenantId: string, agent: string): Promise<AgentStatus> {
    this.store.meta ??= { tenantId, name: agent };
    const line = await this.ensureLine();
    if (line) await this.waitForInitialize();
    const unreachable = line ? undefined : this.dialer.lastError;
    // A connection whose initialize failed is no connection: it is failing, with the agent's message.
    const failing = line ? this.relay.failing : undefined;
    return {
      connected: line !== undefined && !failing,
      info: failing ? null : (this.store.info ?? null),
      ...(unreachable ? { unreachable } : {}),
      ...(failing ? { failing: agentFailingError(agent, failing).message } : {}),
      notices: this.store.notices,
    };
  }

  /** session/new or session/load through the agent; on success the SessionObject is set up and indexed. */
  async openSession(args: OpenSessionArgs): Promise<ResponseMessage> {
    this.store.meta ??= { tenantId: args.tenantId, name: args.agent };
    this.rates.overrides = args.limits;
    const line = await this.ensureLine();
    if (!line) return errorResponse(0, this.notConnected(args.agent));
    await this.waitForInitialize();
    const failing = this.relay.failing;
    if (failing) return errorResponse(0, agentFailingError(args.agent, failing));
    const { agentId, epoch } = this.relay.opening();
    const loadId = args.method === AGENT_METHODS.sessionLoad ? sessionIdOfParams(args.params) : undefined;
    // A loaded session must exist before the agent replays its history into it.
    if (loadId) {
      const refused = await this.setUpSession(args, loadId, epoch, undefined);
      if (refused) {
        this.relay.openAbandoned(agentId);
        return errorResponse(agentId, refused);
      }
    }
    const response = new Promise<ResponseMessage>((resolve) =>
      this.waiters.add(agentId, null, (outcome) => {
        if (outcome.kind === "answered") return resolve(outcome.value);
        if (outcome.kind === "closed") {
          return resolve(errorResponse(agentId, RpcError.internal(`The agent disconnected (${outcome.reason}) before answering`)));
        }
        this.relay.openAbandoned(agentId);
        const late = `The agent "${args.agent}" did not answer ${args.method} within ${OPEN_TIMEOUT_MS / 1000} s`;
        resolve(errorResponse(agentId, RpcError.internal(late)));
      }),
    );
    line.send(JSON.stringify(withParams({ jsonrpc: "2.0", id: agentId, method: args.method }, args.params)));
    const answer = await response;
    if (answer.error !== undefined || !isObject(answer.result)) return answer;
    const sessionId = loadId ?? answer.result.sessionId;
    if (typeof sessionId !== "string" || sessionId === "") {
      return errorResponse(agentId, RpcError.internal(`The agent answered ${args.method} without a sessionId`));
    }
    const refused = await this.setUpSession(args, sessionId, epoch, answer.result);
    return refused ? errorResponse(agentId, refused) : answer;
  }

  /** Sets up and indexes the session, or says why the agent may not claim it (then nothing changed). */
  private async setUpSession(
    args: OpenSessionArgs,
    sessionId: string,
    epoch: number,
    result: Record<string, unknown> | undefined,
  ): Promise<RpcError | undefined> {
    const cwd = isObject(args.params) && typeof args.params.cwd === "string" ? args.params.cwd : "";
    const opening = args.method === AGENT_METHODS.sessionNew ? "new" : "load";
    const owner = await sessionOwner(this.env.DB, args.tenantId, sessionId);
    const claimed =
      owner !== undefined && (opening === "new" || owner !== args.agent)
        ? { ok: false as const, message: `session ${sessionId} already exists and belongs to agent "${owner}"` }
        : await this.session(sessionId).init(
            {
              agent: args.agent,
              cwd,
              createdBy: args.createdBy,
              deadlineMs: args.deadlineMs,
              relayAlwaysAsMade: args.relayAlwaysAsMade,
              ...(args.limits ? { limits: args.limits } : {}),
              ...(result ? { result } : {}),
            },
            opening,
          );
    if (!claimed.ok) {
      return new RpcError(
        ErrorCode.internalError,
        `The agent "${args.agent}" answered ${args.method} with a session id the gateway refused: ${claimed.message}. That session is unchanged; try again, and if this repeats the agent is misbehaving.`,
        { reason: "session_id_taken", sessionId },
      );
    }
    this.relay.sessionOpened(sessionId, epoch);
    // The index row of an existing session is only touched for its own agent (never re-assigned).
    await indexSession(this.env.DB, { tenantId: args.tenantId, sessionId, agent: args.agent, cwd, createdBy: args.createdBy });
    return undefined;
  }

  /** A log line carrying this agent's tenant and name (core/log.ts). */
  private log(level: LogLevel, event: string, msg: string, context: LogContext = {}, error?: unknown): void {
    log(level, event, msg, { tenantId: this.store.meta?.tenantId, agent: this.store.meta?.name, ...context }, error);
  }
}

function withParams(message: Record<string, unknown>, params: unknown): Record<string, unknown> {
  if (params !== undefined) message.params = params;
  return message;
}

function sessionIdOfParams(params: unknown): string | undefined {
  return isObject(params) && typeof params.sessionId === "string" ? params.sessionId : undefined;
}
