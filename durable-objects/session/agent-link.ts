// What a session sends towards its agent. The agent's single connection is held by the AgentObject
// (one per tenant + agent name); the session asks it to deliver, without waiting, so that neither
// object is pinned in memory while an agent thinks or a person decides.

import type { JsonRpcId } from "../../protocol/jsonrpc";

export type ToAgent =
  /** A client request, under the session's own id (gwId); the AgentObject gives it an agent-side id. */
  | { type: "request"; gwId: number; method: string; params: unknown }
  /** A notification to relay as is (session/cancel, extensions). */
  | { type: "notification"; method: string; params: unknown }
  /** The answer to one of the agent's requests, under the agent's own id, on the connection it came from. */
  | { type: "response"; epoch: number; id: JsonRpcId; result?: unknown; error?: unknown }
  /** Withdraw a client request that was forwarded under gwId. */
  | { type: "cancel_request"; gwId: number };

export interface SessionRef {
  tenantId: string;
  sessionId: string;
}

/**
 * What the AgentObject delivers to a session, in order: the agent's frames, its answers, and the
 * news that its connection is gone. `seq` is the AgentObject's own increasing number for each item
 * (set when the item is stored in its outbox): an item can be delivered twice after a restart, and
 * the session applies each seq once.
 */
export type FromAgent = (
  | { kind: "frame"; epoch: number; text: string }
  /** `agentId`: the AgentObject's id of the request, whose map entry goes once the session has the answer. */
  | { kind: "response"; gwId: number; text: string; agentId?: number }
  | { kind: "gone"; epoch: number; reason: string; gwIds: number[] }
) & { seq?: number };
