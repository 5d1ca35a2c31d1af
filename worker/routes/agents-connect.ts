// GET /agents/NAME/connect — a cloud agent dials in over WebSocket with an agent key. The
// AgentObject of (tenant, NAME) takes the socket; the gateway is the agent's client from then on.

import { Hono } from "hono";
import { registerDialIn } from "../../db/queries/agents";
import { AGENT_PRINCIPAL_HEADER, type AgentPrincipal } from "../../durable-objects/agent/contract";
import { isAgentName } from "../../protocol/names";
import { ApiError } from "../http-error";
import { requireKey } from "../middleware/require-key";
import type { AppEnv } from "../types";

export const agentConnectRoutes = new Hono<AppEnv>();

agentConnectRoutes.get("/agents/:name/connect", requireKey("agent"), async (c) => {
  const name = c.req.param("name");
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new ApiError(426, "upgrade_required", "GET /agents/NAME/connect is a WebSocket endpoint: connect with Upgrade: websocket");
  }
  if (!isAgentName(name)) throw ApiError.badRequest(`Invalid agent name: ${JSON.stringify(name)}`);
  const principal = c.get("principal");
  if (principal.agent !== null && principal.agent !== name) {
    throw ApiError.forbidden(`This agent key may dial in only as "${principal.agent}"`);
  }
  // A name is not up for grabs: one registered as dial_out, or bound to an agent key, is only that one's.
  const claim = await nameClaim(c.env.DB, principal.tenantId, name, principal.keyId);
  if (claim.mode === "dial_out") {
    throw ApiError.forbidden(`The agent "${name}" is registered as dial_out: the gateway dials it, it cannot dial in`);
  }
  if (claim.boundToOtherKey && principal.agent !== name) {
    throw ApiError.forbidden(`The agent name "${name}" is bound to another agent key; dial in with that key or use another name`);
  }
  // An agent that dials in under a name the tenant has not registered registers it.
  await registerDialIn(c.env.DB, principal.tenantId, name);
  const stub = c.env.AGENTS.get(c.env.AGENTS.idFromName(`${principal.tenantId}/${name}`));
  const headers = new Headers(c.req.raw.headers);
  // The key's expiry goes with the connection: the AgentObject closes it then (revocation is pushed by the API).
  headers.set(
    AGENT_PRINCIPAL_HEADER,
    JSON.stringify({
      tenantId: principal.tenantId,
      agent: name,
      keyId: principal.keyId,
      expiresAt: claim.expiresAt,
      limits: principal.settings.limits,
    } satisfies AgentPrincipal),
  );
  return stub.fetch(new Request(c.req.raw.url, { headers }));
});

/** Who else holds the name (its registration mode, another live key bound to it) and when this key expires. */
async function nameClaim(db: D1Database, tenantId: string, name: string, keyId: string) {
  const row = await db
    .prepare(
      `SELECT (SELECT mode FROM agents WHERE tenant_id = ?1 AND name = ?2) AS mode,
              EXISTS (SELECT 1 FROM api_keys WHERE tenant_id = ?1 AND kind = 'agent' AND agent = ?2 AND id != ?3 AND revoked_at IS NULL
                        AND (expires_at IS NULL OR expires_at > ?4)) AS bound,
              (SELECT expires_at FROM api_keys WHERE id = ?3) AS expires_at`,
    )
    .bind(tenantId, name, keyId, Date.now())
    .first<{ mode: string | null; bound: number; expires_at: number | null }>();
  return { mode: row?.mode ?? null, boundToOtherKey: row?.bound === 1, expiresAt: row?.expires_at ?? null };
}
