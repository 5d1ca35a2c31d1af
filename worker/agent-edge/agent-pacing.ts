// A dial-in agent's message rates at the edge (worker/agent-connection.ts): the hold its frames go
// through (protocol/agent-hold.ts, docs/decisions/0023-agent-bursts-held.md), woken by a timer or the
// tenant's lease, its rate scaled by the sessions the connection hosts; a request that comes while the
// hold is full is answered -32029, and a hold that stays full closes the agent (4429). The shell hands
// each frame to `hold.arrive` itself and is handed each frame's turn (`pass`), so the agent's frame
// goes from the shell's listener through the hold and back, as before this file was split off.

import { AgentRates, FLOOD_REASON } from "../../connection/tenant-limits";
import type { ConnectionMetrics } from "../../connection/connection-metrics";
import type { Env } from "../../core/env";
import {
  type Message,
  type ParsedFrame,
  type ResponseMessage,
  isRequest,
  isResponse,
  parseFrame,
  sessionIdOf,
} from "../../protocol/jsonrpc";
import { type Limits, heldFullError, limitsOf } from "../../protocol/tenant-limits";
import { AgentHold, type HoldClose, HostedSessions, type Share, type Wake } from "../../protocol/agent-hold";
import { gatewayObjects } from "../../durable-objects/objects";

/** How long the hold may stay over its byte bound before the agent is closed (decision 0023). */
const HOLD_SUSTAIN_MS = 5000;
/** The hold is woken no more often than this: at 1,000 a second, ten frames a wake. */
const MIN_WAKE_MS = 10;
/** The connection's own rate grows with the sessions it hosts, up to this many times. */
const MAX_SESSION_SCALE = 8;
/** A session counts towards the rate while the connection heard of it within this window. */
const SESSION_ACTIVE_MS = 60_000;

/** The rates' gate is per connection, and the shell is one connection. */
const EDGE_EPOCH = 1;

/**
 * One frame of the agent. Parsed on arrival (to know what it costs); a frame that has to wait keeps
 * its text only, so what is held is bounded by the bytes counted, and is parsed again on its turn.
 */
export interface AgentFrame {
  data: string;
  parsed: ParsedFrame | undefined;
  passed?: true;
  /** When it arrived: a frame the hold passes later reports its wait (the delivery_lag metric). */
  arrivedAt: number;
}

/** What the pacing asks of the shell. */
interface PacingIo {
  /** A frame's turn (the hold passes it, in order): handed to the hold as it is, so the frame goes from the hold straight to the shell. */
  pass: (frame: AgentFrame) => void;
  /** Text for the agent's socket. */
  toAgent(text: string): void;
  /** The hold stayed over its bound: the agent is closed with this reason. */
  closeAgent(reason: string): void;
  /** The hold has nothing to wake for: the shell may finish closing. */
  idle(): void;
  waitUntil(promise: Promise<unknown>): void;
}

export class AgentPacing {
  /** The agent's frames waiting for its rates, in order (protocol/agent-hold.ts). */
  readonly hold: AgentHold<AgentFrame>;
  private readonly rates: AgentRates;
  private readonly limits: Limits;
  /** The connection's own rate for one session; `hosted` scales it. */
  private readonly baseRate: number;
  /** The sessions the connection hosts: its rate is `baseRate` times as many (up to MAX_SESSION_SCALE). */
  private readonly hosted = new HostedSessions(SESSION_ACTIVE_MS, MAX_SESSION_SCALE);
  /** A timer or the tenant's lease is awaited for the hold (`wake`). */
  private waking = false;

  constructor(
    env: Env,
    private readonly tenantId: string,
    overrides: Partial<Limits> | undefined,
    private readonly agent: WebSocket,
    private readonly metrics: ConnectionMetrics,
    private readonly io: PacingIo,
  ) {
    this.rates = new AgentRates(gatewayObjects(env));
    this.rates.overrides = overrides;
    this.limits = limitsOf(overrides);
    this.baseRate = this.limits.messagesPerSecondPerAgentConnection;
    const maxBytes = this.limits.heldBytesPerAgentConnection;
    this.hold = new AgentHold<AgentFrame>(
      { rate: this.baseRate, maxBytes, sustainMs: HOLD_SUSTAIN_MS, ceilingBytes: 2 * maxBytes },
      {
        share: () => this.share(),
        pass: io.pass,
        refuse: (frame) => this.refuse(frame),
        close: (why) => this.overflowed(why),
      },
      Date.now(),
    );
  }

  /** Before the agent's first frame: the tenant's first lease of its message rate (one call to its counter). */
  ready(): Promise<void> {
    return this.rates.warm(EDGE_EPOCH, this.tenantId);
  }

  /** What the hold asks for next: a timer, the tenant's lease, or nothing. */
  wake(next: Wake): void {
    if (this.waking || next === "idle" || next === "closed") return this.io.idle();
    const woken =
      next === "lease"
        ? (this.rates.awaiting(EDGE_EPOCH, this.tenantId) ?? Promise.resolve())
        : new Promise<void>((resolve) => setTimeout(resolve, Math.max(next.in, MIN_WAKE_MS)));
    this.waking = true;
    this.io.waitUntil(
      woken.then(() => {
        this.waking = false;
        this.wake(this.hold.drain(Date.now()));
      }),
    );
  }

  /** The connection's own rate scales with the sessions it hosts (HostedSessions). */
  noteSession(message: Exclude<Message, ResponseMessage>): void {
    const sessionId = sessionIdOf(message);
    if (sessionId !== undefined) this.sessionSeen(sessionId, false);
  }

  /** A session the connection hosts: `vouched` when the AgentObject named it (a request of it, or its grant). */
  sessionSeen(sessionId: string, vouched: boolean): void {
    const now = Date.now();
    const scale = this.hosted.note(sessionId, vouched, now);
    if (scale !== undefined) this.hold.setRate(scale * this.baseRate, now);
  }

  /** The tenant's share for one frame the hold passes; "lease" when its next lease is on the way. */
  private share(): Share {
    if (this.rates.awaiting(EDGE_EPOCH, this.tenantId)) return { ok: false, retryAfterMs: undefined };
    return this.rates.share(EDGE_EPOCH, this.tenantId);
  }

  /** A request that arrived while the hold was over its bound: answered -32029 under its id, not relayed. */
  private refuse({ data, parsed = parseFrame(data) }: AgentFrame): void {
    if (!parsed.ok || isResponse(parsed.message) || !isRequest(parsed.message)) return;
    const error = heldFullError(this.limits.heldBytesPerAgentConnection, this.hold.currentRate, parsed.message.method);
    this.metrics.refused(error.data.reason);
    this.io.toAgent(JSON.stringify({ jsonrpc: "2.0", id: parsed.message.id, error }));
  }

  /** The hold stayed over its bound: closed 4429 with the reason; the sessions hear FLOOD_REASON. */
  private overflowed(why: HoldClose): void {
    this.rates.closeHeld(this.agent, EDGE_EPOCH, this.tenantId, why);
    this.io.closeAgent(FLOOD_REASON);
  }
}
