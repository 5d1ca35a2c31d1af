// The callers' side of the TenantLimitsObject: a connection's rate gate (its own rate and its lease of
// the tenant's), and its slot among the connections of its key.

import { CLOSE, closeQuietly } from "../core/close-codes";
import type { HoldClose } from "../protocol/agent-hold";
import type { JsonRpcId } from "../protocol/jsonrpc";
import { RateGate } from "../protocol/rate-limit";
import { CONNECTION_RENEW_MS, LIMIT_SHARDS, type Limits, limitsOf, slotShardOf } from "../protocol/tenant-limits";
import type { GatewayObjects, SlotOutcome } from "./gateway-objects";

/** Where the tenant's shared counts are kept (durable-objects/objects.ts provides the real one). */
type Objects = Pick<GatewayObjects, "tenantLimits">;

/**
 * The rates a client's or agent's connection is held to, with the tenant's limits (overrides or
 * defaults). Its leases of the tenant's rate come from one lease shard, picked at random when the
 * connection opens: spread evenly, so no shard serves many more connections than another.
 */
export function rateGate(objects: Objects, tenantId: string, overrides: Partial<Limits> | undefined, role: "client" | "agent"): RateGate {
  const limits = limitsOf(overrides);
  const stub = objects.tenantLimits(tenantId, Math.floor(Math.random() * LIMIT_SHARDS));
  return new RateGate(limits, role, (want) => stub.lease(want, limits.messagesPerSecondPerTenant));
}

/**
 * A client connection under one key: counted from its opening to its close, renewed while it lives,
 * all at the key's shard of the TenantLimitsObject (`slotShardOf`), not the tenant's root.
 */
export class ConnectionSlot {
  // First renewed at the first tick: a connection rebuilt after its object restarted takes its slot back then.
  private renewedAt = 0;
  private releasing: Promise<void> | undefined;

  constructor(
    private readonly objects: Objects,
    private readonly tenantId: string,
    private readonly keyId: string,
    private readonly connectionId: string,
  ) {}

  /** Takes a slot for a new connection; refused (with how many are open) when the key has `connectionsPerKey` already. */
  static open(
    objects: Objects,
    tenantId: string,
    keyId: string,
    connectionId: string,
    overrides: Partial<Limits> | undefined,
  ): Promise<SlotOutcome> {
    return objects.tenantLimits(tenantId, slotShardOf(keyId)).openConnection(keyId, connectionId, limitsOf(overrides).connectionsPerKey);
  }

  /** Call often (every few seconds): renews the slot when it is due. */
  renewIfDue(): void {
    const now = Date.now();
    if (this.releasing || now - this.renewedAt < CONNECTION_RENEW_MS) return;
    this.renewedAt = now;
    void this.objects
      .tenantLimits(this.tenantId, slotShardOf(this.keyId))
      .renewConnection(this.keyId, this.connectionId)
      .catch(() => undefined);
  }

  /** Frees the slot; the same promise on every call (a Worker keeps its invocation alive for it with waitUntil). */
  release(): Promise<void> {
    this.releasing ??= this.objects
      .tenantLimits(this.tenantId, slotShardOf(this.keyId))
      .closeConnection(this.keyId, this.connectionId)
      .catch(() => undefined);
    return this.releasing;
  }
}

/**
 * One agent connection's rates, for the AgentObject: a gate per connection (epoch). A request or
 * notification over a rate is answered with the JSON-RPC error (id null for a notification, which
 * has none) and not relayed; a sustained flood closes the connection with 4429 and a reason.
 */
export class AgentRates {
  private current: { epoch: number; gate: RateGate; closed: boolean } | undefined;
  /** The tenant's limit overrides, as last heard (the dial-in's principal, or a client's session/new). */
  overrides: Partial<Limits> | undefined;

  constructor(private readonly objects: Objects) {}

  /** The connection (epoch) opened: its gate takes the tenant's first lease now; resolves when it has. */
  warm(epoch: number, tenantId: string): Promise<void> {
    return this.gateFor(epoch, tenantId).gate.warm();
  }

  /** The tenant's lease on its way when the connection's credit is used up: a caller that can hold frames waits for it. */
  awaiting(epoch: number, tenantId: string): Promise<void> | undefined {
    return this.gateFor(epoch, tenantId).gate.awaiting();
  }

  private gateFor(epoch: number, tenantId: string): { epoch: number; gate: RateGate; closed: boolean } {
    if (this.current?.epoch !== epoch)
      this.current = { epoch, gate: rateGate(this.objects, tenantId, this.overrides, "agent"), closed: false };
    return this.current;
  }

  /**
   * "ok" to relay the frame; "refused" when it was answered with an error; "closing" when this frame
   * made the gateway close the connection (the caller then ends the connection's epoch); "closed"
   * for what still arrives on a connection closed already (dropped).
   */
  admit(
    ws: WebSocket,
    epoch: number,
    tenantId: string,
    method: string,
    id: JsonRpcId | undefined,
  ): "ok" | "refused" | "closing" | "closed" {
    const current = this.gateFor(epoch, tenantId);
    if (current.closed) return "closed";
    const admission = current.gate.admit(method);
    if (admission.ok) return "ok";
    if (!admission.close) {
      try {
        ws.send(JSON.stringify({ jsonrpc: "2.0", id: id ?? null, error: admission.error }));
      } catch {
        // closed meanwhile
      }
      return "refused";
    }
    current.closed = true;
    closeQuietly(ws, CLOSE.rateExceeded, floodReason(admission.error.data));
    return "closing";
  }

  /** The tenant's share for one frame the edge's hold passes (it keeps the connection's own rate itself). */
  share(epoch: number, tenantId: string): { ok: true } | { ok: false; retryAfterMs: number } {
    return this.gateFor(epoch, tenantId).gate.tenantShare();
  }

  /**
   * The edge's hold stayed over its byte bound (or reached its ceiling): the agent kept sending
   * faster than its rate drains. Closed 4429, the reason saying so.
   */
  closeHeld(ws: WebSocket, epoch: number, tenantId: string, why: HoldClose): void {
    this.gateFor(epoch, tenantId).closed = true;
    const mib = (why.heldBytes / (1024 * 1024)).toFixed(1);
    const held = why.cause === "sustained" ? `over ${mib} MiB waiting for 5 s` : `${mib} MiB waiting`;
    closeQuietly(ws, CLOSE.rateExceeded, `kept sending faster than ${why.rate} messages a second (${held})`);
  }
}

/** Why the gateway ended an agent's connection for a flood, as the sessions are told it. */
export const FLOOD_REASON = "kept sending over its message rate";

/** The close reason of a connection that kept sending over a message rate, its own or its tenant's. */
export function floodReason(over: { limit: string; value: number }): string {
  const whose = over.limit === "messagesPerSecondPerTenant" ? "while the tenant was over its" : "over";
  return `kept sending ${whose} ${over.value} messages a second`;
}
