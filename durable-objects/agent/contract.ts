// The AgentObject's RPC contract: its methods, their argument and return types, and the header the
// edge Worker hands a dialling agent over with. Its callers: SessionObjects (`toAgent`), the client
// connections (`openSession`, `status`), the edge's agent routes (`fetch`) and the REST API
// (`closeConnections`); agent-object.ts implements it, callers reach it through ../objects.ts.

import type { ResponseMessage } from "../../protocol/jsonrpc";
import type { ToAgent } from "../../protocol/agent-relay";
import type { Limits } from "../../protocol/tenant-limits";
import type { AgentStatus, OpenSessionArgs } from "../../connection/gateway-objects";
import type { SessionRef } from "../session/contract";

/** The header the Worker uses to say who dialled in (its value: an `AgentPrincipal` as JSON). */
export const AGENT_PRINCIPAL_HEADER = "X-Acp-Gateway-Agent";

export interface AgentPrincipal {
  tenantId: string;
  agent: string;
  keyId: string;
  expiresAt?: number | null;
  limits?: Partial<Limits>;
}

/** What a session sends towards its agent (`toAgent`): defined beside the logic that hands it on. */
export type { ToAgent } from "../../protocol/agent-relay";

/** The AgentObject's RPC methods; a dialling agent's (or the edge's control) socket is its `fetch`. */
export interface AgentContract extends Rpc.DurableObjectBranded {
  /** A session's frame for the agent, handed on once per key; true when it reached the agent. */
  toAgent(agent: string, ref: SessionRef, frame: ToAgent, key?: number): Promise<boolean>;
  /** Closes the agent's connections (of one key, or all): how many were closed. */
  closeConnections(keyId: string | null, reason: string): number;
  status(tenantId: string, agent: string): Promise<AgentStatus>;
  /** A client's session/new or session/load, through the agent: its answer. */
  openSession(args: OpenSessionArgs): Promise<ResponseMessage>;
}
