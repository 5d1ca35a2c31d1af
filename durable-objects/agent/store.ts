// The AgentObject's durable state: who it is, the agent's capabilities, the connection epoch, the
// sessions this agent owns, and the map of the sessions' requests in flight to the agent. The map
// of the agent's own requests to sessions lives in memory (protocol/agent-relay.ts, `inbound`).
// protocol/agent-relay.ts reads and writes it through its `AgentTables` port.

import type { AgentInfo } from "../../connection/gateway-objects";
import { MetaTable } from "../meta-table";
import type { AgentInitFailure, AgentNotice, AgentTables, Outbound } from "../../protocol/agent-relay";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, active_epoch INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS outbound (agent_id INTEGER PRIMARY KEY, epoch INTEGER NOT NULL, kind TEXT NOT NULL, session_id TEXT, gw_id INTEGER);
CREATE INDEX IF NOT EXISTS outbound_session ON outbound (session_id, gw_id);
DROP TABLE IF EXISTS inbound;
`;

export interface AgentMeta {
  tenantId: string;
  name: string;
}

export class AgentStore implements AgentTables {
  /** Meta values read on every frame (who, epoch, info), kept after the first read (meta-table.ts). */
  private readonly cache: MetaTable;
  /** Sessions known to be this agent's (a session is never taken away from its agent). */
  private readonly owned = new Set<string>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(SCHEMA);
    this.cache = new MetaTable(sql);
  }

  get meta(): AgentMeta | undefined {
    return this.cache.get("agent");
  }
  set meta(value: AgentMeta) {
    this.cache.set("agent", value);
  }
  get info(): AgentInfo | undefined {
    return this.cache.get("info");
  }
  set info(value: AgentInfo) {
    this.cache.set("info", value);
  }
  /** The newest failed initialize (the agent is failing while its epoch is current), or null. */
  get initFailure(): AgentInitFailure | null {
    return this.cache.get<AgentInitFailure | null>("init_failure") ?? null;
  }
  set initFailure(value: AgentInitFailure | null) {
    this.cache.set("init_failure", value);
  }
  /** The agent's newest notification of each method that named no session. */
  get notices(): AgentNotice[] {
    return this.cache.get<AgentNotice[]>("notices") ?? [];
  }
  set notices(value: AgentNotice[]) {
    this.cache.set("notices", value);
  }
  /** Each dial-in is a new epoch; answers meant for an older connection are dropped. */
  get epoch(): number {
    return this.cache.get<number>("epoch") ?? 0;
  }
  set epoch(value: number) {
    this.cache.set("epoch", value);
  }
  /** The newest connection epoch whose sessions were told it is gone (once per connection). */
  get goneEpoch(): number {
    return this.cache.get<number>("gone_epoch") ?? 0;
  }
  set goneEpoch(value: number) {
    this.cache.set("gone_epoch", value);
  }
  nextId(): number {
    const next = (this.cache.get<number>("next_id") ?? 0) + 1;
    this.cache.set("next_id", next);
    return next;
  }

  addSession(sessionId: string, epoch: number): void {
    this.sql.exec("INSERT OR REPLACE INTO sessions (session_id, active_epoch) VALUES (?, ?)", sessionId, epoch);
  }
  ownsSession(sessionId: string): boolean {
    if (this.owned.has(sessionId)) return true;
    const owns = this.sql.exec("SELECT 1 FROM sessions WHERE session_id = ?", sessionId).toArray().length > 0;
    if (owns) this.owned.add(sessionId);
    return owns;
  }
  /** Marks a session active in `epoch`; reads first, so a session marked already costs no write (and no commit). */
  markActive(sessionId: string, epoch: number): void {
    const row = this.sql.exec<{ active_epoch: number }>("SELECT active_epoch FROM sessions WHERE session_id = ?", sessionId).toArray()[0];
    if (row && row.active_epoch !== epoch) this.sql.exec("UPDATE sessions SET active_epoch = ? WHERE session_id = ?", epoch, sessionId);
  }
  activeSessions(epoch: number): string[] {
    return this.sql
      .exec<{ session_id: string }>("SELECT session_id FROM sessions WHERE active_epoch = ?", epoch)
      .toArray()
      .map((r) => r.session_id);
  }

  addOutbound(o: Outbound): void {
    this.sql.exec(
      "INSERT INTO outbound (agent_id, epoch, kind, session_id, gw_id) VALUES (?, ?, ?, ?, ?)",
      o.agentId,
      o.epoch,
      o.kind,
      o.sessionId,
      o.gwId,
    );
  }
  outbound(agentId: number): Outbound | undefined {
    const row = this.sql.exec<OutboundSql>("SELECT * FROM outbound WHERE agent_id = ?", agentId).toArray()[0];
    return row ? outboundFromSql(row) : undefined;
  }
  takeOutbound(agentId: number): Outbound | undefined {
    const row = this.sql.exec<OutboundSql>("DELETE FROM outbound WHERE agent_id = ? RETURNING *", agentId).toArray()[0];
    return row ? outboundFromSql(row) : undefined;
  }
  outboundFor(sessionId: string, gwId: number): Outbound | undefined {
    const row = this.sql.exec<OutboundSql>("SELECT * FROM outbound WHERE session_id = ? AND gw_id = ?", sessionId, gwId).toArray()[0];
    return row ? outboundFromSql(row) : undefined;
  }
  /** Whether a session's request still waits on the agent's answer. */
  awaitsAgent(): boolean {
    return this.sql.exec("SELECT 1 FROM outbound WHERE kind = 'forward' LIMIT 1").toArray().length > 0;
  }
  /** Removes and returns every request still waiting on a connection that is gone. */
  takeOutboundOfEpoch(epoch: number): Outbound[] {
    return this.sql.exec<OutboundSql>("DELETE FROM outbound WHERE epoch <= ? RETURNING *", epoch).toArray().map(outboundFromSql);
  }
}

type OutboundSql = { agent_id: number; epoch: number; kind: Outbound["kind"]; session_id: string | null; gw_id: number | null };
function outboundFromSql(r: OutboundSql): Outbound {
  return { agentId: r.agent_id, epoch: r.epoch, kind: r.kind, sessionId: r.session_id, gwId: r.gw_id };
}
