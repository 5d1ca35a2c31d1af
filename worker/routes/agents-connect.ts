// GET /agents/NAME/connect — a cloud agent dials in over WebSocket with an agent key. The
// AgentObject of (tenant, NAME) takes the socket; the gateway is the agent's client from then on.

import { Hono } from "hono";
import { agentNameClaim, registerDialIn } from "../../db/queries/agents";
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
  const claim = await agentNameClaim(c.env.DB, principal.tenantId, name, principal.keyId, Date.now());
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
