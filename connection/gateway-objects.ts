// What the connection logic asks of the gateway's Durable Objects. connection/ sits below
// durable-objects/, so it names here what it needs, and durable-objects/objects.ts (`gatewayObjects`)
// provides it from the real stubs; each object's contract uses these types for the same calls.

import type { ResponseMessage } from "../protocol/jsonrpc";
import type { AGENT_METHODS } from "../protocol/methods";
import type { LeaseGrant } from "../protocol/rate-limit";
import type { Limits } from "../protocol/tenant-limits";
import type { AgentInfo, AgentNotice } from "../protocol/agent-relay";

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

/** What the agent said in `initialize`, as its AgentObject keeps it (defined once, by the relay that reads it). */
export type { AgentInfo };

/** Whether the agent is connected, what it said in initialize, and why it cannot be reached (`status`). */
/**
 * `failing`: the agent's connection refused the gateway's initialize, with the agent's message;
 * `notices`: its newest notification of each method that named no session (decision 0042).
 */
export type AgentStatus = { connected: boolean; info: AgentInfo | null; unreachable?: string; failing?: string; notices?: AgentNotice[] };

/** A connection's slot among its key's (`openConnection`): refused with how many are open. */
export type SlotOutcome = { ok: true } | { ok: false; open: number };

/** A session's object: a client attaches with a WebSocket upgrade (protocol/session-wire.ts's header). */
interface SessionPort {
  fetch(url: string, init: RequestInit): Promise<Response>;
}

/** The AgentObject of one agent name. */
interface AgentPort {
  openSession(args: OpenSessionArgs): Promise<ResponseMessage>;
  status(tenantId: string, agent: string): Promise<AgentStatus>;
}

/** The tenant's shared counts: message-rate leases and connections per key. */
interface TenantLimitsPort {
  lease(want: number, ratePerSecond: number): Promise<LeaseGrant>;
  openConnection(keyId: string, connectionId: string, limit: number): Promise<SlotOutcome>;
  renewConnection(keyId: string, connectionId: string): Promise<void>;
  closeConnection(keyId: string, connectionId: string): Promise<void>;
}

export interface GatewayObjects {
  session(tenantId: string, sessionId: string): SessionPort;
  agent(tenantId: string, agent: string): AgentPort;
  /** The tenant's limits object, or (with `leaseShard`) one of its lease shards, which serve only `lease`. */
  tenantLimits(tenantId: string, leaseShard?: number): TenantLimitsPort;
}
