// The session's turn: a client's session/prompt starts it (one at a time, never queued); the
// agent's answer ends it; session/cancel, a permission deadline or a turn that makes no progress
// end it early, the requests still pending answered `cancelled` (TC-12) and the clients told why.

import { type JsonRpcId, RpcError, errorResponse } from "../../protocol/jsonrpc";
import { AGENT_METHODS } from "../../protocol/methods";
import { limitsOf } from "../../protocol/tenant-limits";
import type { ToAgent } from "../agent/contract";
import type { AttachedClients } from "./clients";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { DecidedBy } from "./contract";
import type { PermissionLifecycle } from "./permission-lifecycle";
import type { SessionInfo } from "./session-info";
import type { SessionStore } from "./store";
import { ErrorCode } from "../../core/rpc-errors";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { personKey } from "../../protocol/people/answering";
import type { TenantPolicy } from "./tenant-policy";
import { refusePromptWhileHeld } from "../../protocol/unasked-runs";

export interface TurnParts {
  store: SessionStore;
  clients: AttachedClients;
  info: SessionInfo;
  permissions: PermissionLifecycle;
  toAgent(frame: ToAgent): void;
  scheduleDeadline(): void;
  /** The tenant's four-eyes policy, read as each turn starts. */
  policy: TenantPolicy;
}

export class TurnControl {
  constructor(private readonly parts: TurnParts) {}

  /** A client's session/prompt: refused while a turn runs; otherwise the turn starts and the prompt goes to the agent. */
  start(client: ClientAttachment, id: JsonRpcId, method: string, params: unknown): void {
    const { store } = this.parts;
    const turn = store.turn;
    if (turn.state !== "idle") {
      throw new RpcError(
        ErrorCode.invalidRequest,
        `A turn is already running in session ${store.meta?.sessionId}${turn.user ? ` (started by ${turn.user})` : ""}; wait for it to end or send session/cancel. Prompts are not queued.`,
        { reason: "turn_in_progress" },
      );
    }
    // Stopped after the agent ran a tool call unasked (decision 0056): refused until a person resumes it.
    refusePromptWhileHeld(store.meta?.sessionId ?? "", store.hold);
    const gwId = store.nextId();
    store.turn = {
      state: "running",
      gwId,
      connId: client.connId,
      user: client.user,
      prompter: personKey(client),
      startedAt: Date.now(),
      fromSeq: store.lastSeq(),
    };
    this.parts.policy.turnStarted(gwId);
    store.addInflight({ gwId, connId: client.connId, clientId: id, method, createdAt: Date.now() });
    this.parts.info.recordPrompt(client, params);
    this.parts.toAgent({ type: "request", gwId, method, params });
    this.parts.scheduleDeadline(); // the turn's idle timer
  }

  /**
   * session/cancel goes to the agent first, then every pending request is answered `cancelled`
   * (TC-12) and the turn's waiting ends. The order matters to real agents: qwen takes a `cancelled`
   * answer that comes before the cancel as the person's rejection and ends the turn `end_turn`, and
   * codex may apply a late cancel to the next prompt. `toAgent` sends frames in the order it is
   * called (agent-link.ts: an answer never takes the edge link while a frame before it is on its way
   * through the AgentObject), so the agent reads the cancel before any answer. `params`: the client's
   * own, relayed as sent.
   */
  cancel(by: DecidedBy, params: unknown): void {
    this.parts.toAgent({ type: "notification", method: AGENT_METHODS.sessionCancel, params });
    this.parts.permissions.cancelAll(by);
    const turn = this.parts.store.turn;
    if (turn.state === "running") this.parts.store.turn = { ...turn, state: "cancelling" };
  }

  /** The agent answered the prompt. */
  end(gwId: number, result: unknown): void {
    const turn = this.parts.store.turn;
    if (turn.state === "idle" || turn.gwId !== gwId) return;
    // Requests still open when the turn ends can no longer be acted on: answer them cancelled (TC-12).
    this.parts.permissions.cancelAll({ type: "turn_end" });
    this.parts.store.turn = { state: "idle" };
    this.parts.permissions.turnEnded();
    this.parts.store.append("turn_end", JSON.stringify({ result }));
    this.parts.info.touchIndex();
  }

  /** A permission request waited past its deadline: exactly what a client's session/cancel does, and the clients are told why. */
  deadlinePassed(): void {
    const meta = this.parts.store.meta;
    this.cancel({ type: "deadline" }, { sessionId: meta?.sessionId });
    this.ended(
      "permission_deadline",
      `A permission request waited ${Math.round((meta?.deadlineMs ?? 0) / 1000)} s without an answer; the gateway cancelled the turn.`,
    );
  }

  /** The agent never answered: the prompt fails naming why, the agent is told to cancel, clients learn the turn ended. */
  endIdle(): void {
    const { store } = this.parts;
    const meta = store.meta;
    const turn = store.turn;
    if (!meta || turn.state === "idle") return;
    const seconds = Math.round(limitsOf(meta.limits).turnIdleMs / 1000);
    const message = `The agent "${meta.agent}" made no progress for ${seconds} s (no message, nobody asked); the gateway ended the turn.`;
    const inflight = store.takeInflight(turn.gwId);
    if (inflight) {
      const error = new RpcError(ErrorCode.internalError, message, { reason: "turn_idle" });
      this.parts.clients.toConnection(inflight.connId, JSON.stringify(errorResponse(inflight.clientId, error)));
    }
    store.turn = { state: "idle" };
    this.parts.permissions.turnEnded();
    this.parts.toAgent({ type: "notification", method: AGENT_METHODS.sessionCancel, params: { sessionId: meta.sessionId } });
    this.ended("turn_idle", message);
  }

  /**
   * The turn's prompt (one of `gwIds`) will never be answered (the agent left, or the prompt never
   * reached it): the turn ends and the clients are told why. `cancelPending`: the requests still
   * pending are answered `cancelled` first (TC-12). Nothing happens when no such turn runs.
   */
  abandon(gwIds: readonly number[], reason: string, message: string, cancelPending = false): void {
    const { store } = this.parts;
    const turn = store.turn;
    if (turn.state === "idle" || !gwIds.includes(turn.gwId)) return;
    if (cancelPending) this.parts.permissions.cancelAll({ type: "turn_end" });
    store.turn = { state: "idle" };
    this.parts.permissions.turnEnded();
    this.ended(reason, message);
  }

  /** The gateway ended the turn: `_acp_gateway/turn_ended` with the reason, logged and sent to every client. */
  ended(reason: string, message: string): void {
    this.parts.info.notice(GATEWAY_NOTIFICATIONS.turnEnded, { sessionId: this.parts.store.meta?.sessionId, reason, message });
  }
}
