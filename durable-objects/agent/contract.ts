// The AgentObject's RPC contract: the argument and return types of its methods and the header the
// edge Worker hands a dialling agent over with. Its callers: SessionObjects (`toAgent`), the edge
// Worker's client connections (`openSession`, `status`) and its agent routes (`fetch`).

import type { JsonRpcId } from "../../protocol/jsonrpc";
import type { AGENT_METHODS } from "../../protocol/methods";
import type { Limits } from "../../protocol/tenant-limits";
import type { AgentInfo } from "./store";

/** The header the Worker uses to say who dialled in (its value: an `AgentPrincipal` as JSON). */
export const AGENT_PRINCIPAL_HEADER = "X-Acp-Gateway-Agent";

export interface AgentPrincipal {
  tenantId: string;
  agent: string;
  keyId: string;
  expiresAt?: number | null;
  limits?: Partial<Limits>;
}

/**
 * What a session sends towards its agent (`toAgent`). The agent's single connection is held by the
 * AgentObject (one per tenant + agent name); the session asks it to deliver, without waiting, so that
 * neither object is pinned in memory while an agent thinks or a person decides.
 */
export type ToAgent =
  /** A client request, under the session's own id (gwId); the AgentObject gives it an agent-side id. */
  | { type: "request"; gwId: number; method: string; params: unknown }
  /** A notification to relay as is (session/cancel, extensions). */
  | { type: "notification"; method: string; params: unknown }
  /** The answer to one of the agent's requests, under the agent's own id, on the connection it came from. */
  | { type: "response"; epoch: number; id: JsonRpcId; result?: unknown; error?: unknown }
  /** Withdraw a client request that was forwarded under gwId. */
  | { type: "cancel_request"; gwId: number };

/** A client's session/new or session/load, opened through the agent (`openSession`). */
export interface OpenSessionArgs {
  tenantId: string;
  agent: string;
  method: typeof AGENT_METHODS.sessionNew | typeof AGENT_METHODS.sessionLoad;
  params: unknown;
  createdBy: string | null;
  deadlineMs: number;
  relayAlwaysAsMade: boolean;
  /** The tenant's limit overrides (protocol/tenant-limits.ts), kept by the session. */
  limits?: Partial<Limits> | undefined;
}

/** Whether the agent is connected, what it said in initialize, and why it cannot be reached (`status`). */
export type AgentStatus = { connected: boolean; info: AgentInfo | null; unreachable?: string };
