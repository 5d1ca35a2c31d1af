// GET /acp?agent=NAME — a client's WebSocket. The key comes as Authorization: Bearer, or for
// browsers as the subprotocol `acp.bearer.<KEY>` offered beside `acp.v1` (the gateway answers acp.v1).
// A bad key is refused with 401 before the upgrade; the 101 carries Acp-Connection-Id.

import { Hono } from "hono";
import { defaultAgentName } from "../../db/queries/agents";
import { isAgentName } from "../../protocol/names";
import { ACP_SUBPROTOCOL } from "../auth";
import { ClientConnection } from "../client-connection";
import { ApiError } from "../http-error";
import { requireKey } from "../middleware/require-key";
import type { AppEnv } from "../types";

export const acpRoutes = new Hono<AppEnv>();

acpRoutes.get("/acp", requireKey("client", "admin"), async (c) => {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new ApiError(426, "upgrade_required", "GET /acp is a WebSocket endpoint: connect with Upgrade: websocket");
  }
  const principal = c.get("principal");
  const agent = c.req.query("agent") ?? (await defaultAgentName(c.env.DB, principal.tenantId));
  if (!agent) throw ApiError.badRequest("Name the agent to talk to: /acp?agent=NAME (the tenant has no default agent)");
  if (!isAgentName(agent)) throw ApiError.badRequest(`Invalid agent name: ${JSON.stringify(agent)}`);
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  server.accept();
  const connectionId = crypto.randomUUID();
  new ClientConnection(c.env, principal, agent, connectionId, server);
  const headers = new Headers({ "Acp-Connection-Id": connectionId });
  const offered = (c.req.header("Sec-WebSocket-Protocol") ?? "").split(",").map((p) => p.trim());
  if (offered.includes(ACP_SUBPROTOCOL)) headers.set("Sec-WebSocket-Protocol", ACP_SUBPROTOCOL);
  return new Response(null, { status: 101, webSocket: client, headers });
});
