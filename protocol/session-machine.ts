// The SessionObject's client requests and its turn, and the order of everything it sends the agent,
// as a synchronous state machine: durable-objects/session/session-object.ts is its shell (it restores
// its sockets, parses what arrives, and performs what is asked here through one port, built in
// session/session-parts.ts beside the permission machine's). Pure: no platform import, no await.
// test/unit/session-machine.test.ts drives it, model-based, over interleavings of prompts, requests, cancels, the agent's answers and
// departures, permission requests and their answers, deadlines, idle turns, the three channels'
// outcomes (links that close, stubs that break) and crashes.
//
// It is longer than a shell may be because its order is the order of a client request's life, and it
// holds the whole of it, the way to the agent included: given (a prompt starts the turn, or joins it)
// → to the agent (the order below picks the way and keeps it) → answered by the agent (the answer to
// the turn's last prompt in flight ends the turn), or never delivered, or lost with the agent (an
// error to its client; a turn left with no prompt in flight ends and the clients are told why).
//
// The guarantees, and how:
// - One turn at a time: a prompt while a turn runs is refused (`-32600`, `turn_in_progress`), but
//   for an agent that queues prompts (decision 0067: it advertised it, `meta.promptQueueing`), to
//   which a prompt while the turn runs (not while it is being cancelled) is relayed at once and joins
//   the turn, up to `PROMPTS_IN_FLIGHT_LIMIT` in flight (`prompt_queue_full` past it). The turn is
//   named by its first prompt (`gwId`) and spans every prompt in flight (`prompts`): only the answer,
//   the undelivery or the loss of the last of them ends it, once.
// - Every client request handed on is answered once: by the agent's answer, or an error when it was
//   not delivered, the agent left without answering, or the turn went idle (`takeInflight` takes it
//   in the same step, so a late answer finds nothing).
// - session/cancel reaches the agent before any `cancelled` answer to its permission requests (real
//   agents read a `cancelled` that comes first as the person's rejection): the cancel is given to the
//   order first, and the order keeps it (`AgentOrder`, below).
// - When a turn ends, every permission request still pending is answered `cancelled` (TC-12) — by
//   the agent's answer, a cancel, the deadline, or a prompt never delivered; a turn the agent left
//   leaves them to the agent's departure, which withdraws them — and the permission machine is told
//   the turn is over; when the gateway ended it, every client is told why (`turn_ended`). The shell
//   is told each turn's end once, and by whom (`turnEnded`): the machine decides it, never the shell.
// - A frame reaches the agent at most once and in order (`AgentOrder`, below).

import { type JsonRpcId, RpcError, errorResponse, isObject } from "./jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST } from "./methods";
import { type Limits, limitsOf } from "./tenant-limits";
import type { ToAgent } from "./agent-relay";
import type { ClientAttachment } from "./session-wire";
import type { DecidedBy } from "./pending-permission";
import { type TurnState, promptsInFlight } from "./turn-state";
import { PROMPTS_IN_FLIGHT_LIMIT, promptQueueFull } from "./prompt-queueing";
import type { TurnEnd } from "./session-attach";
import { type SessionHold, refusePromptWhileHeld } from "./unasked-runs";
import { deleteDuringTurn, deletionGoesAhead } from "./session-delete";
import { personKey } from "./people/answering";
import { refusedByRole } from "./people/acp-methods";
import { stage } from "./stage-timing";
import { ErrorCode } from "../core/rpc-errors";
import { GATEWAY_NOTIFICATIONS } from "../core/gateway-notifications";

/** A client request handed on to the agent, under the session's id `gwId`, until it is answered. */
export interface InflightRow {
  gwId: number;
  connId: string;
  clientId: JsonRpcId;
  method: string;
  createdAt: number;
}

/** A turn that runs (or is being cancelled): the prompt's own. */
export type RunningTurn = Exclude<TurnState, { state: "idle" }>;

/** What the machine reads and writes of the session's rows (store.ts). */
export interface SessionTable {
  readonly meta:
    | {
        sessionId: string;
        agent: string;
        deadlineMs: number;
        limits?: Partial<Limits>;
        /** The agent advertised prompt queueing when it opened the session (protocol/prompt-queueing.ts, decision 0067). */
        promptQueueing?: boolean;
      }
    | undefined;
  turn: TurnState;
  /** Set when the agent ran a tool call unasked and the tenant stops such sessions (decision 0056). */
  readonly hold: SessionHold | undefined;
  nextId(): number;
  lastSeq(): number;
  addInflight(row: InflightRow): void;
  takeInflight(gwId: number): InflightRow | undefined;
  inflightByClient(connId: string, clientId: JsonRpcId): InflightRow | undefined;
}

/** The one port: the rows, the ways to the agent, and what the shell does for the machine. */
export interface SessionPort {
  table: SessionTable;
  channels: AgentChannels;
  now(): number;
  /**
   * An answer to a client's request, on its connection; `keptForResume`: also kept for it to resume
   * when it is not attached now (retained-streams.ts).
   */
  toConnection(connId: string, text: string, keptForResume: boolean): void;
  /** A gateway notice: kept in the log and sent to every client. */
  notice(method: string, params: object): void;
  /** The permission machine: every pending request answered `cancelled`; the turn over. */
  permissions: { cancelAll(by: DecidedBy): void; turnEnded(): void };
  /** A turn started: the tenant's policy is read and the prompt shown to the other clients. */
  promptStarted(gwId: number, client: ClientAttachment, params: unknown): void;
  /** A prompt joined the running turn (decision 0067): shown to the other clients, as the turn's first is. */
  promptJoined(client: ClientAttachment, params: unknown): void;
  /** The agent answered the prompt: the turn's end is logged and the index touched. */
  promptEnded(result: unknown): void;
  /**
   * The turn `turn` is over (the turn is idle now), and how: the agent answered its prompt, or the
   * gateway ended it (`reason`, as its `turn_ended` notice, sent just before, says). Told once per turn.
   */
  turnEnded(turn: RunningTurn, end: TurnEnd): void;
  /** The agent answered session/set_config_option with the options now set. */
  configOptions(options: unknown[]): void;
  /** session/delete went ahead (or could not reach the agent): the session is forgotten and its clients told. */
  deleted(inflight: InflightRow, result: unknown): void;
  /** A deadline or the turn's idle time may have moved: the alarm is set again. */
  deadlinesChanged(): void;
}

const NOT_HELD = "the agent does not hold this session";
const HAND_OFF_FAILED = "the hand-off to the agent failed";

export class SessionMachine {
  private readonly order: AgentOrder;

  /** `firstKey`: where this instance's frame keys start, above any an earlier instance could still use. */
  constructor(
    private readonly io: SessionPort,
    firstKey: number,
  ) {
    this.order = new AgentOrder(io.channels, (frame, delivered, threw, after) => this.settled(frame, delivered, threw, after), firstKey);
  }

  /** How many frames wait behind an answer on an edge link (the session's test seam reads it). */
  get heldAfterEdgeAnswer(): number {
    return this.order.heldAfterEdgeAnswer;
  }

  // ── out: towards the agent ───────────────────────────────────────────────────────────────────
  /**
   * A frame for the agent, fire and forget, in order (`AgentOrder`); `after` learns how it
   * ended. A bound function: the permission machine and the routed requests are handed it as their port.
   */
  readonly toAgent = (frame: ToAgent, after?: AfterHandOff): void => {
    stage("session.toAgent", frame);
    if (!this.io.table.meta) return;
    this.order.send(frame, after);
  };

  private settled(frame: ToAgent, delivered: boolean, threw: boolean, after: AfterHandOff | undefined): void {
    if (!delivered && frame.type === "request") this.requestUndelivered(frame.gwId, threw ? HAND_OFF_FAILED : NOT_HELD);
    after?.(delivered, threw);
  }

  // ── in: a client's requests and notifications (the frame checked by the shell) ────────────────
  /**
   * A client's request for the agent; a prompt starts the turn. Throws the RpcError its client is
   * answered with. The client's role first, then the session: a watch-only client is refused for its
   * role whether or not the session is still there, as the edge refuses it before it asks for the
   * session (connection/mode-gate.ts `gateRequest`), so both layers give one answer.
   */
  request(client: ClientAttachment, id: JsonRpcId, method: string, params: unknown): void {
    const meta = this.admit(client, method, params);
    const { table } = this.io;
    if (method === AGENT_METHODS.sessionPrompt) return this.prompt(client, id, method, params);
    if (method === AGENT_METHODS.sessionDelete && table.turn.state !== "idle") throw deleteDuringTurn(meta.sessionId, table.turn.user);
    const gwId = table.nextId();
    table.addInflight({ gwId, connId: client.connId, clientId: id, method, createdAt: this.io.now() });
    this.toAgent({ type: "request", gwId, method, params });
  }

  /**
   * Whether this client may send `method` to this session now: its role first (the edge refused by the
   * key's role already; the client's may be lower, session/attach lowers it), then the session's
   * existence (deleted while this client's socket was still closing: answered, never dropped). Throws
   * the RpcError its client is answered with. Every client request passes here: those for the agent
   * (`request`) and those the gateway keeps (a held mode change, decided by people: mode-approvals.ts).
   */
  admit(client: ClientAttachment, method: string, params: unknown): NonNullable<SessionTable["meta"]> {
    const refusal = refusedByRole(client.role ?? "approver", method);
    if (refusal) throw refusal;
    const meta = this.io.table.meta;
    if (!meta) throw RpcError.sessionNotFound(isObject(params) ? params.sessionId : undefined);
    return meta;
  }

  /**
   * session/prompt: refused while a turn runs, unless it may join it (`joins`); otherwise the turn
   * starts. Either way the prompt goes to the agent at once, as sent.
   */
  private prompt(client: ClientAttachment, id: JsonRpcId, method: string, params: unknown): void {
    const { table } = this.io;
    const turn = table.turn;
    if (turn.state !== "idle" && !this.joins(turn)) {
      const running = `A turn is already running in session ${table.meta?.sessionId}${turn.user ? ` (started by ${turn.user})` : ""}`;
      // The agent's own queue takes a prompt only while the turn runs: a cancel ends every prompt of it.
      const why =
        table.meta?.promptQueueing === true
          ? "; it is being cancelled, and a prompt joins a turn only while it runs: send it once the turn has ended."
          : "; wait for it to end or send session/cancel. Prompts are not queued.";
      throw new RpcError(ErrorCode.invalidRequest, `${running}${why}`, { reason: "turn_in_progress" });
    }
    // Stopped after the agent ran a tool call unasked (decision 0056): refused until a person resumes it.
    refusePromptWhileHeld(table.meta?.sessionId ?? "", table.hold);
    const gwId = table.nextId();
    const now = this.io.now();
    if (turn.state !== "idle") {
      // It joins the turn: the agent queues it, or folds it into what runs, and answers it on its own.
      const who = personKey(client);
      const also = turn.alsoPrompted ?? [];
      table.turn = {
        ...turn,
        prompts: [...promptsInFlight(turn), gwId],
        ...(who === turn.prompter || also.includes(who) ? {} : { alsoPrompted: [...also, who] }),
      };
      table.addInflight({ gwId, connId: client.connId, clientId: id, method, createdAt: now });
      this.io.promptJoined(client, params);
      this.toAgent({ type: "request", gwId, method, params });
      return;
    }
    table.turn = {
      state: "running",
      gwId,
      connId: client.connId,
      user: client.user,
      prompter: personKey(client),
      startedAt: now,
      fromSeq: table.lastSeq(),
    };
    table.addInflight({ gwId, connId: client.connId, clientId: id, method, createdAt: now });
    this.io.promptStarted(gwId, client, params);
    this.toAgent({ type: "request", gwId, method, params });
    this.io.deadlinesChanged(); // the turn's idle timer
  }

  /**
   * Whether a prompt may join the running `turn` (decision 0067): only when the agent queues prompts,
   * while the turn is not being cancelled (a cancel ends the whole turn: a prompt after it starts the
   * next), and below the bound, past which it is refused (`prompt_queue_full`).
   */
  private joins(turn: RunningTurn): boolean {
    const meta = this.io.table.meta;
    if (meta?.promptQueueing !== true || turn.state !== "running") return false;
    const inFlight = promptsInFlight(turn).length;
    if (inFlight >= PROMPTS_IN_FLIGHT_LIMIT) throw promptQueueFull(meta.sessionId, inFlight);
    return true;
  }

  /** A client's notification for the agent: session/cancel ends the turn's waiting; $/cancel_request names the client's own id. */
  notification(client: ClientAttachment, method: string, params: unknown): void {
    if (refusedByRole(client.role ?? "approver", method)) return; // no id to answer; the edge told the client already
    if (method === AGENT_METHODS.sessionCancel)
      return this.cancel({ type: "cancel", connectionId: client.connId, user: client.user }, params);
    if (method === CANCEL_REQUEST) {
      const requestId = isObject(params) ? params.requestId : undefined;
      if (typeof requestId !== "string" && typeof requestId !== "number") return;
      const inflight = this.io.table.inflightByClient(client.connId, requestId);
      if (inflight) this.toAgent({ type: "cancel_request", gwId: inflight.gwId });
      return;
    }
    this.toAgent({ type: "notification", method, params });
  }

  /**
   * session/cancel goes to the agent first, then every pending request is answered `cancelled`
   * (TC-12) and the turn's waiting ends. The order matters to real agents: qwen takes a `cancelled`
   * answer that comes before the cancel as the person's rejection and ends the turn `end_turn`, and
   * codex may apply a late cancel to the next prompt. `params`: the client's own, relayed as sent.
   */
  private cancel(by: DecidedBy, params: unknown): void {
    this.toAgent({ type: "notification", method: AGENT_METHODS.sessionCancel, params });
    this.io.permissions.cancelAll(by);
    const turn = this.io.table.turn;
    if (turn.state === "running") this.io.table.turn = { ...turn, state: "cancelling" };
  }

  // ── in: the agent's answers and departure ─────────────────────────────────────────────────────
  /** The agent answered a client request the session handed on under `gwId` (`text`: its answer, as it sent it). */
  agentAnswered(gwId: number, text: string): void {
    const { table } = this.io;
    if (!table.meta) return; // forgotten earlier in this batch (session/delete)
    const inflight = table.takeInflight(gwId);
    if (!inflight) return;
    // SAFETY: the AgentObject passes on only answers that parseFrame accepted.
    const response = JSON.parse(text) as Record<string, unknown>;
    if (inflight.method === AGENT_METHODS.sessionDelete && deletionGoesAhead(response)) return this.io.deleted(inflight, response.result);
    if (inflight.method === AGENT_METHODS.sessionPrompt) this.promptAnswered(gwId, response.result);
    // Whoever set an option, a client attaching later gets the current set in its session/load answer.
    if (
      inflight.method === AGENT_METHODS.sessionSetConfigOption &&
      isObject(response.result) &&
      Array.isArray(response.result.configOptions)
    ) {
      this.io.configOptions(response.result.configOptions);
    }
    this.io.toConnection(inflight.connId, JSON.stringify({ ...response, id: inflight.clientId }), true);
  }

  /**
   * The agent's connection is gone (its permission and routed requests were withdrawn by the caller):
   * the client requests it was asked (`gwIds`) are answered with an error, and a turn among them ends.
   */
  agentGone(reason: string, gwIds: readonly number[]): void {
    const { table } = this.io;
    const meta = table.meta;
    if (!meta) return;
    const message = `The agent "${meta.agent}" disconnected (${reason}) before answering`;
    for (const gwId of gwIds) {
      const inflight = table.takeInflight(gwId);
      if (!inflight) continue;
      const error = new RpcError(ErrorCode.internalError, `${message} ${inflight.method}`, { reason: "agent_disconnected" });
      this.io.toConnection(inflight.connId, JSON.stringify(errorResponse(inflight.clientId, error)), true);
    }
    this.abandon(gwIds, "agent_disconnected", message);
    this.io.deadlinesChanged();
  }

  // ── the alarm ────────────────────────────────────────────────────────────────────────────────
  /** A permission request waited past its deadline: exactly what a client's session/cancel does, and the clients are told why. */
  deadlinePassed(): void {
    const meta = this.io.table.meta;
    this.cancel({ type: "deadline" }, { sessionId: meta?.sessionId });
    this.ended(
      "permission_deadline",
      `A permission request waited ${Math.round((meta?.deadlineMs ?? 0) / 1000)} s without an answer; the gateway cancelled the turn.`,
    );
  }

  /**
   * The gateway stops the turn on its own (decision 0056: the agent ran a tool call no one was asked
   * about): exactly what a client's session/cancel does, and the clients are told why.
   */
  stopTurn(reason: string, message: string): void {
    this.cancel({ type: "cancel" }, { sessionId: this.io.table.meta?.sessionId });
    this.ended(reason, message);
  }

  /** The agent made no progress for the tenant's turnIdleMs: every prompt in flight fails naming why, the agent is told to cancel, clients learn the turn ended. */
  idle(): void {
    const { table } = this.io;
    const meta = table.meta;
    const turn = table.turn;
    if (!meta || turn.state === "idle") return;
    const seconds = Math.round(limitsOf(meta.limits).turnIdleMs / 1000);
    const message = `The agent "${meta.agent}" made no progress for ${seconds} s (no message, nobody asked); the gateway ended the turn.`;
    for (const gwId of promptsInFlight(turn)) {
      const inflight = table.takeInflight(gwId);
      if (!inflight) continue;
      const error = new RpcError(ErrorCode.internalError, message, { reason: "turn_idle" });
      this.io.toConnection(inflight.connId, JSON.stringify(errorResponse(inflight.clientId, error)), true);
    }
    table.turn = { state: "idle" };
    this.io.permissions.turnEnded();
    this.toAgent({ type: "notification", method: AGENT_METHODS.sessionCancel, params: { sessionId: meta.sessionId } });
    this.gatewayEnded(turn, "turn_idle", message);
  }

  // ── the turn's ends ──────────────────────────────────────────────────────────────────────────
  /**
   * The agent answered a prompt of the turn: the turn goes on while another is in flight; the last
   * one's answer ends it, and requests still open can no longer be acted on: answered cancelled (TC-12).
   */
  private promptAnswered(gwId: number, result: unknown): void {
    const { table } = this.io;
    const turn = table.turn;
    if (turn.state === "idle" || !promptsInFlight(turn).includes(gwId)) return;
    if (this.stillInFlight(turn, [gwId])) return;
    this.io.permissions.cancelAll({ type: "turn_end" });
    table.turn = { state: "idle" };
    this.io.permissions.turnEnded();
    this.io.promptEnded(result);
    this.io.turnEnded(turn, { by: "agent", result });
  }

  /** A client request that never reached the agent: its sender gets an error, a prompt's turn ends. */
  private requestUndelivered(gwId: number, reason: string): void {
    const { table } = this.io;
    const inflight = table.takeInflight(gwId);
    const meta = table.meta;
    if (!inflight || !meta) return;
    if (inflight.method === AGENT_METHODS.sessionDelete) return this.io.deleted(inflight, {});
    const message = `The gateway could not hand ${inflight.method} to the agent "${meta.agent}" (${reason}); nothing was done, try again`;
    const error = new RpcError(ErrorCode.internalError, message, { reason: "agent_unreachable" });
    this.io.toConnection(inflight.connId, JSON.stringify(errorResponse(inflight.clientId, error)), false);
    this.abandon([gwId], "agent_unreachable", message, true);
  }

  /**
   * Prompts of the turn (among `gwIds`) will never be answered: when no other is in flight, the turn
   * ends and the clients are told why. `cancelPending`: the requests still pending are answered
   * `cancelled` first (TC-12).
   */
  private abandon(gwIds: readonly number[], reason: string, message: string, cancelPending = false): void {
    const { table } = this.io;
    const turn = table.turn;
    if (turn.state === "idle" || !promptsInFlight(turn).some((gwId) => gwIds.includes(gwId))) return;
    if (this.stillInFlight(turn, gwIds)) return;
    if (cancelPending) this.io.permissions.cancelAll({ type: "turn_end" });
    table.turn = { state: "idle" };
    this.io.permissions.turnEnded();
    this.gatewayEnded(turn, reason, message);
  }

  /** `done` are out of flight: true (and the turn keeps the rest) while another prompt of `turn` is still in flight. */
  private stillInFlight(turn: RunningTurn, done: readonly number[]): boolean {
    const rest = promptsInFlight(turn).filter((gwId) => !done.includes(gwId));
    if (rest.length === 0) return false;
    this.io.table.turn = { ...turn, prompts: rest };
    return true;
  }

  /**
   * The gateway ended the turn: `_acp_gateway/turn_ended` with the reason, logged and sent to every
   * client. A turn being cancelled (a deadline, an unasked run) ends later, with the agent's answer.
   */
  private ended(reason: string, message: string): void {
    this.io.notice(GATEWAY_NOTIFICATIONS.turnEnded, { sessionId: this.io.table.meta?.sessionId, reason, message });
  }

  /** The gateway ended `turn` itself (it is idle now): every client told why, then the turn's end (the PR's turn_complete). */
  private gatewayEnded(turn: RunningTurn, reason: string, message: string): void {
    this.ended(reason, message);
    this.io.turnEnded(turn, { by: "gateway", reason });
  }
}

// ── the order towards the agent ─────────────────────────────────────────────────────────────────
// The order in which the session's frames reach its agent, part of this machine (`toAgent` hands every
// frame to it): which of the three ways each frame takes (the edge link, the agent link, an RPC call
// to the AgentObject), when a frame waits, and the one second try of a frame whose hand-off failed.
// Kept in this file because it is the middle of a request's life (given → to the agent → answered);
// the model test drives both as one.
//
// Its guarantees, and how:
// - Frames reach the agent in the order they were given, but for two answers to the agent's own
//   requests, which may pass each other. A link carries its frames in order and RPC calls on one stub
//   are delivered in the order made, so a frame takes the agent link only while no RPC call is out,
//   and an answer takes the edge link only while nothing is out on the other two; the frames given
//   while an answer is out on the edge wait here (`afterEdge`) until every such answer is settled.
// - This holds when a failure is of a channel (a link closes: its frames fail oldest first; a stub
//   whose object crashed: its calls throw in order), which is how they fail. A frame the AgentObject
//   fails alone while later ones on its link go through is tried again behind them, and a frame
//   given while the link is closing (its send refused, its frames not yet failed) goes by RPC ahead
//   of their second tries.
// - The one second try of the frames a link failed goes on one fresh stub, in order (found by the
//   model test: a fresh stub each, as before, kept no order between them).
// - A frame reaches the agent at most once: both tries carry the frame's key, and the AgentObject
//   (and, for an answer, the edge) hands a key on once.
// - Every frame given is settled exactly once (`settled`): delivered, not held by the agent, or its
//   hand-off failed twice; only a frame of a session deleted meanwhile is dropped unsettled. A frame
//   that failed on a link or the edge, or whose call threw, is tried once more by RPC (after a link's
//   or a call's failure on a fresh stub: one whose object crashed stays broken).

/** How a frame sent on a link ended: it reached the agent, it did not, or the link or the AgentObject failed it. */
export type LinkOutcome = "delivered" | "undelivered" | "failed";

/** How an RPC call to the AgentObject ended: true or false as it answered, or it threw. */
export type RpcOutcome = "delivered" | "undelivered" | "threw";

/** The three ways to the agent (the shell's agent-socket.ts and the AgentObject's stub). */
export interface AgentChannels {
  /** On the newest edge link, under `key`; false when there is none or it is closing. `settle` is called once, later. */
  edge(frame: ToAgent, key: number, settle: (outcome: LinkOutcome) => void): boolean;
  /** On the agent link, under `key`; false when there is none or it is closing. `settle` is called once, later. */
  link(frame: ToAgent, key: number, settle: (outcome: LinkOutcome) => void): boolean;
  /**
   * As an RPC call, on a fresh stub when `fresh` (the shell also drops a stub whose call threw);
   * `settle` is called once, later. False when the session is gone (deleted): the frame is dropped.
   */
  rpc(frame: ToAgent, key: number, fresh: boolean, settle: (outcome: RpcOutcome) => void): boolean;
}

/** Told once per frame how it ended: `threw` when its hand-off itself failed (twice). */
export type AfterHandOff = (delivered: boolean, threw: boolean) => void;

/** What the order tells its owner once a frame is settled (session-machine.ts). */
export type FrameSettled = (frame: ToAgent, delivered: boolean, threw: boolean, after: AfterHandOff | undefined) => void;

interface Out {
  frame: ToAgent;
  after: AfterHandOff | undefined;
  via: "edge" | "link" | "rpc";
  /** Already the second try. */
  retried: boolean;
}

export class AgentOrder {
  /** Each frame's key for the AgentObject's once-only hand-off (the shell starts it where no earlier instance's could be in use). */
  private nextKey: number;
  /** RPC calls not yet settled: while there are any, frames go by RPC too, so none overtakes another. */
  private rpcInFlight = 0;
  /** Frames on the agent link not settled yet: while there are any (or RPC calls), an answer goes that way too. */
  private linkInFlight = 0;
  /** Answers on an edge link not settled yet: while there are any, the frames after them wait in `afterEdge`. */
  private edgeInFlight = 0;
  private readonly afterEdge: { frame: ToAgent; after: AfterHandOff | undefined; key: number }[] = [];
  /** What is out, by key (one try of a key is out at a time). */
  private readonly out = new Map<number, Out>();

  constructor(
    private readonly channels: AgentChannels,
    private readonly settled: FrameSettled,
    firstKey: number,
  ) {
    this.nextKey = firstKey;
  }

  /** How many frames wait behind an answer on an edge link (the session's test seam reads it). */
  get heldAfterEdgeAnswer(): number {
    return this.afterEdge.length;
  }

  /** A frame for the agent, fire and forget, in order; `after` learns how it ended. */
  send(frame: ToAgent, after?: AfterHandOff): void {
    this.first(frame, after, this.nextKey++);
  }

  /** The outcome of a frame sent on a link (agent or edge) under `key`. */
  private linkSettled(key: number, outcome: LinkOutcome): void {
    const out = this.out.get(key);
    if (!out || out.via === "rpc") return;
    this.out.delete(key);
    if (out.via === "edge") {
      this.edgeInFlight--;
      // The edge failed it: the one second try goes through the AgentObject (no stub is broken).
      if (outcome === "failed") this.byRpc(out.frame, out.after, key, false);
      else this.settled(out.frame, outcome === "delivered", false, out.after);
      if (this.edgeInFlight === 0) for (const next of this.afterEdge.splice(0)) this.first(next.frame, next.after, next.key);
      return;
    }
    this.linkInFlight--;
    // The link failed, maybe with its AgentObject (a crash): the one try by RPC goes on a fresh stub,
    // and the frames failed with it follow on that same stub (a stub each would keep no order).
    if (outcome === "failed") this.byRpc(out.frame, out.after, key, this.rpcInFlight === 0);
    else this.settled(out.frame, outcome === "delivered", false, out.after);
  }

  /** The outcome of an RPC call made under `key`. */
  private rpcSettled(key: number, outcome: RpcOutcome): void {
    const out = this.out.get(key);
    if (out?.via !== "rpc") return;
    this.out.delete(key);
    this.rpcInFlight--;
    if (outcome !== "threw") this.settled(out.frame, outcome === "delivered", false, out.after);
    // The shell dropped the stub if it is still the one that threw.
    else if (!out.retried) this.byRpc(out.frame, out.after, key, false);
    else this.settled(out.frame, false, true, out.after);
  }

  /** A frame's first try: it waits behind an answer on the edge, or takes the edge, the link or RPC, in that order of preference. */
  private first(frame: ToAgent, after: AfterHandOff | undefined, key: number): void {
    if ((this.edgeInFlight > 0 && frame.type !== "response") || this.afterEdge.length > 0) {
      this.afterEdge.push({ frame, after, key });
      return;
    }
    if (frame.type === "response" && this.rpcInFlight === 0 && this.linkInFlight === 0) {
      this.out.set(key, { frame, after, via: "edge", retried: false });
      if (this.channels.edge(frame, key, (outcome) => this.linkSettled(key, outcome))) {
        this.edgeInFlight++;
        return;
      }
      this.out.delete(key);
    }
    if (this.rpcInFlight === 0) {
      this.out.set(key, { frame, after, via: "link", retried: false });
      this.linkInFlight++;
      if (this.channels.link(frame, key, (outcome) => this.linkSettled(key, outcome))) return;
      this.linkInFlight--;
      this.out.delete(key);
    }
    this.call(frame, after, key, false, false);
  }

  /** The one second try, always by RPC. */
  private byRpc(frame: ToAgent, after: AfterHandOff | undefined, key: number, fresh: boolean): void {
    this.call(frame, after, key, true, fresh);
  }

  private call(frame: ToAgent, after: AfterHandOff | undefined, key: number, retried: boolean, fresh: boolean): void {
    this.out.set(key, { frame, after, via: "rpc", retried });
    this.rpcInFlight++;
    if (this.channels.rpc(frame, key, fresh, (outcome) => this.rpcSettled(key, outcome))) return;
    this.rpcInFlight--;
    this.out.delete(key);
  }
}
