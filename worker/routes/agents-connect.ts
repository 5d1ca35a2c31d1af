// GET /agents/NAME/connect — a cloud agent dials in over WebSocket with an agent key. The edge holds
// the agent's socket (worker/agent-connection.ts) and the AgentObject of (tenant, NAME) its control
// socket; the gateway is the agent's client from then on.

import { Hono } from "hono";
import { agentNameClaim, claimDialIn } from "../../db/queries/agents";
import { AGENT_PRINCIPAL_HEADER, type AgentPrincipal } from "../../durable-objects/agent/contract";
import { isAgentName } from "../../protocol/names";
import { AGENT_EDGE_HEADER } from "../../protocol/agent-edge-wire";
import { AgentConnection } from "../agent-connection";
import { ApiError } from "../http-error";
import { requireKey } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { objects } from "../../durable-objects/objects";

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
  // A name is not up for grabs: one registered as dial_out is the gateway's to dial; a dial_in name
  // belongs to the key that first dialled in under it, or to the key an admin bound it to (a key
  // created for the name, api_keys.agent, or PUT /v1/agents/{name}/owner). Another key is refused
  // before the AgentObject hears of it, so the live agent is never replaced by it.
  const claim = await agentNameClaim(c.env.DB, principal.tenantId, name, principal.keyId, Date.now());
  if (claim.mode === "dial_out") {
    throw ApiError.forbidden(`The agent "${name}" is registered as dial_out: the gateway dials it, it cannot dial in`);
  }
  const keyForName = principal.agent === name;
  const rebind = `have an admin bind the name to this key (${principal.keyId}): PUT /v1/agents/${name}/owner with {"keyId":"${principal.keyId}"}`;
  if (claim.boundToOtherKey && !keyForName) {
    throw ApiError.forbidden(
      `The agent name "${name}" is bound to another agent key; dial in with that key, use another name, or revoke that key and ${rebind}`,
    );
  }
  const owned = `The agent name "${name}" belongs to another agent key (the first to dial in under it, or the one an admin bound it to); dial in with that key, use another name, or ${rebind}`;
  if (claim.owner !== null && claim.owner !== principal.keyId && !keyForName) throw ApiError.forbidden(owned);
  // An agent that dials in under a name the tenant has not registered registers it, and owns it.
  if (claim.owner !== principal.keyId) {
    const owner = await claimDialIn(c.env.DB, principal.tenantId, name, principal.keyId, keyForName);
    if (owner !== principal.keyId) throw ApiError.forbidden(owned);
  }
  const stub = objects.agent(c.env, principal.tenantId, name);
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
  headers.set(AGENT_EDGE_HEADER, "1");
  const upstream = await stub.fetch(new Request(c.req.raw.url, { headers }));
  const control = upstream.webSocket;
  if (upstream.status !== 101 || !control) return upstream;
  // The edge terminates the agent's socket (worker/agent-connection.ts): the AgentObject gets the
  // control socket, and a session's stream goes from here to its SessionObject once granted.
  control.accept();
  const pair = new WebSocketPair();
  const [agentEnd, server] = [pair[0], pair[1]];
  server.accept();
  const connection = new AgentConnection(
    c.env,
    { tenantId: principal.tenantId, agent: name, limits: principal.settings.limits },
    server,
    control,
    (p) => c.executionCtx.waitUntil(p),
  );
  await connection.ready();
  return new Response(null, { status: 101, webSocket: agentEnd });
});
