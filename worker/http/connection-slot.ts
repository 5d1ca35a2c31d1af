// Concurrent connections per key, at the door: a new client connection (a WebSocket upgrade, or a
// Streamable HTTP initialize) takes a slot in its tenant's TenantLimitsObject first, or is refused 429.

import { ConnectionSlot } from "../../connection/tenant-limits";
import { connectionsPerKeyMessage, limitsOf } from "../../protocol/tenant-limits";
import type { Env } from "../../core/env";
import { ApiError } from "../http-error";
import type { Principal } from "../../core/principal";
import { gatewayObjects } from "../../durable-objects/objects";

/** Takes a slot for `connectionId` under the principal's key; 429 with what to do when the key has all its slots in use. */
export async function takeConnectionSlot(env: Env, principal: Principal, connectionId: string): Promise<void> {
  const outcome = await ConnectionSlot.open(
    gatewayObjects(env),
    principal.tenantId,
    principal.keyId,
    connectionId,
    principal.settings.limits,
  );
  if (!outcome.ok) {
    throw new ApiError(429, "too_many_connections", connectionsPerKeyMessage(limitsOf(principal.settings.limits).connectionsPerKey));
  }
}
