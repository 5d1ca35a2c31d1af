// The requests waiting across the session, one table each, written in the same synchronous step as
// what they wait for: a client's request handed on to the agent (`inflight`, by the session's id
// gwId: the session machine's rows, protocol/session-machine.ts), and an agent's fs/terminal/
// elicitation request routed to one client (`agent_requests`, by the id the client saw:
// agent-request-routing.ts). The tables are made by store-migrations.ts; session/delete empties them
// with the rest of the session (store.ts `forget`).

import type { JsonRpcId } from "../../protocol/jsonrpc";
import type { InflightRow } from "../../protocol/session-machine";

export interface AgentRequestRow {
  outId: number;
  agentReqId: JsonRpcId;
  agentEpoch: number;
  connId: string;
  method: string;
}

export class RequestRows {
  constructor(private readonly sql: SqlStorage) {}

  // ── client requests in flight to the agent ────────────────────────────────
  addInflight(r: InflightRow): void {
    this.sql.exec(
      "INSERT INTO inflight (gw_id, conn_id, client_id, method, created_at) VALUES (?, ?, ?, ?, ?)",
      r.gwId,
      r.connId,
      JSON.stringify(r.clientId),
      r.method,
      r.createdAt,
    );
  }
  takeInflight(gwId: number): InflightRow | undefined {
    const row = this.sql.exec<InflightSql>("DELETE FROM inflight WHERE gw_id = ? RETURNING *", gwId).toArray()[0];
    return row ? inflightFromSql(row) : undefined;
  }
  inflightByClient(connId: string, clientId: JsonRpcId): InflightRow | undefined {
    const row = this.sql
      .exec<InflightSql>("SELECT * FROM inflight WHERE conn_id = ? AND client_id = ?", connId, JSON.stringify(clientId))
      .toArray()[0];
    return row ? inflightFromSql(row) : undefined;
  }
  inflight(): InflightRow[] {
    return this.sql.exec<InflightSql>("SELECT * FROM inflight ORDER BY gw_id").toArray().map(inflightFromSql);
  }

  // ── agent requests routed to one client (fs/*, terminal/*, extensions) ────
  addAgentRequest(r: AgentRequestRow): void {
    this.sql.exec(
      "INSERT INTO agent_requests (out_id, agent_req_id, agent_epoch, conn_id, method) VALUES (?, ?, ?, ?, ?)",
      r.outId,
      JSON.stringify(r.agentReqId),
      r.agentEpoch,
      r.connId,
      r.method,
    );
  }
  takeAgentRequest(outId: number): AgentRequestRow | undefined {
    const row = this.sql.exec<AgentRequestSql>("DELETE FROM agent_requests WHERE out_id = ? RETURNING *", outId).toArray()[0];
    return row ? agentRequestFromSql(row) : undefined;
  }
  agentRequests(where: { connId?: string; agentReqId?: JsonRpcId; epoch?: number } = {}): AgentRequestRow[] {
    return this.sql
      .exec<AgentRequestSql>("SELECT * FROM agent_requests")
      .toArray()
      .map(agentRequestFromSql)
      .filter(
        (r) =>
          (where.connId === undefined || r.connId === where.connId) &&
          (where.agentReqId === undefined || r.agentReqId === where.agentReqId) &&
          (where.epoch === undefined || r.agentEpoch === where.epoch),
      );
  }
}

type AgentRequestSql = { out_id: number; agent_req_id: string; agent_epoch: number; conn_id: string; method: string };
function agentRequestFromSql(r: AgentRequestSql): AgentRequestRow {
  return {
    outId: r.out_id,
    agentReqId: JSON.parse(r.agent_req_id) as JsonRpcId,
    agentEpoch: r.agent_epoch,
    connId: r.conn_id,
    method: r.method,
  };
}
type InflightSql = { gw_id: number; conn_id: string; client_id: string; method: string; created_at: number };
function inflightFromSql(r: InflightSql): InflightRow {
  return {
    gwId: r.gw_id,
    connId: r.conn_id,
    clientId: JSON.parse(r.client_id) as JsonRpcId,
    method: r.method,
    createdAt: r.created_at,
  };
}
