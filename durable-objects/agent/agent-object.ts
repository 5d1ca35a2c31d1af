// AgentObject: one per tenant + agent name. The shell of protocol/agent-relay.ts, which decides what
// happens to every frame between the agent and its sessions. This file holds what the relay cannot:
// the sockets (agent-lines.ts: the agent's, restored from their attachments; a dial_out agent's,
// dialled here), the waits (a client's session/new or /load for the agent's answer: session-opening.ts;
// a call for the agent's initialize), the alarm (agent-alarm.ts), the RPC entry points, and the I/O the
// relay asks for through its ports: the agent's connection, the sessions (links, else RPC:
// session-links.ts), the tables (store.ts, session-outbox.ts).

import { DurableObject } from "cloudflare:workers";
import type { ResponseMessage } from "../../protocol/jsonrpc";
import type { Env } from "../../core/env";
import type { SessionRef } from "../session/contract";
import { AgentRates, FLOOD_REASON } from "../../connection/tenant-limits";
import type { AgentStatus, OpenSessionArgs } from "../../connection/gateway-objects";
import { AGENT_PRINCIPAL_HEADER, type AgentContract, type AgentPrincipal, type ToAgent } from "./contract";
import { SessionOutboxTable } from "./session-outbox";
import { LINK_IDLE_MS, SessionLinks, linksTesting, openSessionLink } from "./session-links";
import { AGENT_LINK_HEADER } from "../../protocol/agent-link-wire";
import { AGENT_EDGE_HEADER } from "../../protocol/agent-edge-wire";
import { ANSWERED_KEPT, type Admission, type AgentLine, AgentRelay, agentFailingError, dropOldest } from "../../protocol/agent-relay";
import type { Stamped } from "../../protocol/agent-outbox";
import { AgentStore } from "./store";
import { stage, stageTimingFrom } from "../../protocol/stage-timing";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import { testSeams } from "../../core/test-seam";
import { gatewayObjects } from "../objects";
import { SessionStubs } from "./session-stubs";
import { Pending } from "../pending";
import { type LogContext, type LogLevel, log } from "../../core/log";
import { type AgentTesting, AgentTestHolds } from "./agent-testing";
import { type Attachment, AgentLines } from "./agent-lines";
import { AgentAlarm } from "./agent-alarm";
import { OPEN_TIMEOUT_MS, SessionOpening } from "./session-opening";

/** How long a client's initialize waits for a freshly connected agent to finish its own initialize. */
const INIT_WAIT_MS = 10_000;

const seams = testSeams<AgentObject, AgentTesting>("AgentObject");
/** A live instance's test seam (agent-testing.ts `AgentTesting`). */
export const agentTesting = seams.of;

export class AgentObject extends DurableObject<Env> implements AgentContract {
  private readonly store: AgentStore;
  private readonly rates: AgentRates;
  private readonly holds: AgentTestHolds;
  private readonly lines: AgentLines;
  private readonly links: SessionLinks;
  private readonly alarms: AgentAlarm;
  private readonly relay: AgentRelay;
  private readonly opening: SessionOpening;
  /** session/new and session/load sent to the agent and awaited in memory, by id: only while the RPC is in flight. */
  private readonly waiters = new Pending<number, null, ResponseMessage>(OPEN_TIMEOUT_MS);
  /** Calls waiting for the agent's answer to initialize (`waitForInitialize`), by a number of their own. */
  private readonly initWaiters = new Pending<number, null, never>(INIT_WAIT_MS);
  private initWaits = 0;
  private readonly stubs: SessionStubs;
  /** The outcome of each session frame handed on, by `${sessionId}:${key}` (`toAgent`), the newest ANSWERED_KEPT. */
  private readonly handedOn = new Map<string, Promise<boolean>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    stageTimingFrom(env);
    // Built in the order each needs the one before: nothing below reads a part not yet made.
    const store = (this.store = new AgentStore(ctx.storage.sql));
    this.rates = new AgentRates(gatewayObjects(env));
    this.links = new SessionLinks({
      open: (sessionId) => this.openLink(sessionId),
      // SAFETY: a link carries only what its session's AgentLink sends, a ToAgent (session/agent-link.ts).
      toAgent: (sessionId, frame, n) => this.fromLink(sessionId, frame as ToAgent, n),
      waitUntil: (promise) => ctx.waitUntil(promise),
      idleMs: Number(env.AGENT_LINK_IDLE_MS ?? LINK_IDLE_MS),
    });
    const deliver = (sessionId: string, items: Stamped[]) => this.deliver(sessionId, items);
    const holds = (this.holds = new AgentTestHolds(deliver, linksTesting(this.links), () => store.epoch));
    seams.attach(this, holds.testing);
    this.stubs = new SessionStubs(env, store, () => holds.testing.session);
    this.lines = new AgentLines(ctx, env, store, this.rates, (ws, text) => holds.send(ws, text));
    this.alarms = new AgentAlarm(ctx, (keyId) => this.closeConnections(keyId, "the agent key expired"));
    this.relay = new AgentRelay({
      agent: { current: () => this.lines.current(), admit: (epoch, method, id) => this.admit(epoch, method, id) },
      tables: store,
      outbox: new SessionOutboxTable(ctx.storage.sql),
      sessions: { deliver: (sessionId, items) => this.holds.deliver(sessionId, items) },
      alarm: { redeliverSoon: () => this.alarms.armRedelivery(), watch: () => this.alarms.armWatch() },
      waits: {
        opened: (agentId, answer) => this.waiters.answer(agentId, answer),
        initialized: () => this.initWaiters.closeAll("initialized"),
        gone: (reason) => this.waiters.closeAll(reason),
      },
    });
    this.opening = new SessionOpening({
      env,
      store,
      rates: this.rates,
      relay: this.relay,
      waiters: this.waiters,
      ensureLine: () => this.ensureLine(),
      waitForInitialize: () => this.waitForInitialize(),
      notConnected: (agent) => this.lines.notConnected(agent),
      session: (sessionId) => this.stubs.of(sessionId),
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
    const epoch = this.relay.connected(this.lines.closeDialIns());
    const pair = new WebSocketPair();
    const edge = request.headers.get(AGENT_EDGE_HEADER) === "1";
    const attachment: Attachment = { epoch, keyId: who.keyId, expiresAt: who.expiresAt ?? null, limits: who.limits, edge };
    this.lines.acceptDialIn(pair[1], attachment);
    this.rates.overrides = who.limits;
    if (typeof who.expiresAt === "number") this.ctx.waitUntil(this.alarms.armBy(who.expiresAt));
    this.relay.initialize(epoch);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }

  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const line = this.lines.dialInOf(ws);
    if (!line) return;
    // The edge (worker/agent-connection.ts) marks where the gateway first has the agent's frame.
    if (!line.edge) {
      stage("agent.in", data);
      return this.relay.agentFrame(data, line.epoch);
    }
    if (typeof data !== "string") return;
    this.holds.controlFrame(data, line.epoch, () => this.relay.controlFrame(data, line.epoch));
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    const epoch = this.lines.forget(ws);
    closeQuietly(ws, code === CLOSE.noStatus ? CLOSE.normal : code, "closed");
    if (epoch !== undefined) this.relay.gone(epoch, reason || `closed with code ${code}`);
  }

  override webSocketError(ws: WebSocket): void {
    const epoch = this.lines.forget(ws);
    if (epoch !== undefined) this.relay.gone(epoch, "connection error");
  }

  /** The connection's message rates for a frame on the agent's own socket (the relay's `agent.admit` port). */
  private admit(epoch: number, method: string, id: Parameters<AgentRates["admit"]>[4]): Admission {
    const line = this.lines.current();
    const tenantId = this.store.meta?.tenantId;
    if (!line || tenantId === undefined) return "ok";
    const rate = this.rates.admit(line.ws, epoch, tenantId, method, id);
    if (rate === "ok") return "ok";
    if (rate !== "closing") return "dropped";
    this.lines.dropDialOut(line);
    return { closed: FLOOD_REASON };
  }

  // ── the agent's connection for a dial_out agent ─────────────────────────────────────────────────
  /** The agent's connection: the dial-in socket, or for a dial_out agent one opened now. */
  private ensureLine(): Promise<AgentLine | undefined> {
    return this.lines.ensure((ws) => this.onDialedOut(ws));
  }

  /** A dial-out connection is up: it becomes the current epoch, and the gateway initializes the agent. */
  private async onDialedOut(ws: WebSocket): Promise<void> {
    const epoch = this.relay.connected(false);
    const line = this.lines.dialedOut(ws, epoch);
    ws.addEventListener("message", (event) => this.relay.agentFrame(event.data as string | ArrayBuffer, epoch));
    const lost = (reason: string) => {
      if (this.lines.dropDialOut(line)) this.relay.gone(epoch, reason);
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
    let line = this.lines.current() ?? (frame.type === "request" ? await this.ensureLine() : undefined);
    // An agent accepts nothing before it has answered initialize; waiters wake in arrival order.
    if (line && !this.relay.initialized) {
      await this.waitForInitialize();
      line = this.lines.current();
    }
    // An agent that refused initialize gets nothing: a request is answered with its message.
    const failing = this.relay.failing;
    if (line && failing) {
      if (frame.type === "request") this.relay.unreachable(ref.sessionId, frame.gwId, agentFailingError(agent, failing));
      return frame.type === "request";
    }
    if (!line && frame.type === "request") {
      this.relay.unreachable(ref.sessionId, frame.gwId, this.lines.notConnected(agent));
      return true; // answered, with the error
    }
    return this.relay.handOn(ref.sessionId, frame);
  }

  private fromLink(sessionId: string, frame: ToAgent, n: number): Promise<boolean> {
    const meta = this.store.meta;
    return meta ? this.toAgent(meta.name, { tenantId: meta.tenantId, sessionId }, frame, n) : Promise.resolve(false);
  }

  // ── deliveries to the sessions (the relay's `sessions` port) ─────────────────────────────────────
  /** A batch for a session: on its link when one is open (session-links.ts), otherwise by RPC. */
  private deliver(sessionId: string, items: Stamped[]): void {
    const call = (this.links.deliver(sessionId, items) ?? this.stubs.of(sessionId).fromAgentBatch(items)).then(
      () => this.relay.delivered(sessionId, items),
      (e: unknown) => {
        this.log("warn", "agent.delivery_failed", "delivering to a session failed; the alarm retries", { sessionId }, e);
        this.stubs.drop(sessionId); // a stub that threw may be broken for good
        this.relay.deliveryFailed(sessionId);
      },
    );
    this.ctx.waitUntil(call);
  }

  /** The session's end of a link (session-links.ts), or undefined when the session refuses it. */
  private async openLink(sessionId: string): Promise<WebSocket | undefined> {
    const meta = this.store.meta;
    return meta ? openSessionLink(this.stubs.of(sessionId), AGENT_LINK_HEADER, meta.name) : undefined;
  }

  /** Redelivery, the watch over a lost connection, expired keys (agent-alarm.ts). */
  override alarm(): void {
    this.alarms.fired();
    this.relay.alarm();
  }

  // ── RPC from the Worker ──────────────────────────────────────────────────────────────────────
  /** A revoked key, or a disabled tenant (keyId null): its agent connection closes now. */
  closeConnections(keyId: string | null, reason: string): number {
    const sockets = keyId === null ? this.ctx.getWebSockets() : this.ctx.getWebSockets(`key:${keyId}`);
    for (const ws of sockets) {
      const epoch = this.lines.forget(ws);
      closeQuietly(ws, CLOSE.credentialsRevoked, reason);
      if (epoch !== undefined) this.relay.gone(epoch, reason);
    }
    // The tenant disabled, the agent removed or re-registered: a dial-out connection closes too.
    const dialOut = keyId === null ? this.lines.closeDialOut(reason) : undefined;
    if (dialOut !== undefined) this.relay.gone(dialOut, reason);
    return sockets.length + (dialOut !== undefined ? 1 : 0);
  }

  async status(tenantId: string, agent: string): Promise<AgentStatus> {
    this.store.meta ??= { tenantId, name: agent };
    const line = await this.ensureLine();
    if (line) await this.waitForInitialize();
    const unreachable = line ? undefined : this.lines.unreachable;
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

  /** session/new or session/load through the agent (session-opening.ts). */
  openSession(args: OpenSessionArgs): Promise<ResponseMessage> {
    return this.opening.open(args);
  }

  /** A log line carrying this agent's tenant and name (core/log.ts). */
  private log(level: LogLevel, event: string, msg: string, context: LogContext = {}, error?: unknown): void {
    log(level, event, msg, { tenantId: this.store.meta?.tenantId, agent: this.store.meta?.name, ...context }, error);
  }
}
