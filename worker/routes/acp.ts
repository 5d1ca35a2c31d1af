// /acp?agent=NAME — a client's connection, over either transport of the RFD:
// - GET with Upgrade: websocket — a WebSocket. The key or a person's token comes as Authorization:
//   Bearer; a browser offers a single-use ticket as the subprotocol `acp.ticket.<TICKET>` beside
//   `acp.v1` (POST /v1/tickets; the gateway answers acp.v1; worker/auth.ts). A bad credential is
//   refused with 401 and its reason before the upgrade; the 101 carries Acp-Connection-Id.
// - POST / GET (SSE) / DELETE — Streamable HTTP (worker/http/streamable-http.ts), key as Authorization: Bearer.

import { type Context, Hono } from "hono";
import { defaultAgentName } from "../../db/queries/agents";
import { isAgentName } from "../../protocol/names";
import { ACP_SUBPROTOCOL } from "../auth";
import { ClientConnection } from "../../connection/client-connection";
import { webSocketSink } from "../../connection/client-sink";
import { takeConnectionSlot } from "../http/connection-slot";
import { deleteConnection, openStream, postMessage } from "../http/streamable-http";
import { ApiError } from "../http-error";
import { requireRole } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { gatewayObjects } from "../../durable-objects/objects";

export const acpRoutes = new Hono<AppEnv>();

acpRoutes.get("/acp", requireRole("watch"), async (c) => {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") return openStream(c);
  const principal = c.get("principal");
  const agent = await agentOf(c);
  const connectionId = crypto.randomUUID();
  await takeConnectionSlot(c.env, principal, connectionId);
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  server.accept();
  const connection = new ClientConnection(c.env, gatewayObjects(c.env), principal, agent, connectionId, webSocketSink(server));
  server.addEventListener("message", (event) => connection.receive(event.data));
  // The slot among the key's connections is freed by a call after the close: keep the invocation alive for it.
  const closed = () => {
    connection.close();
    c.executionCtx.waitUntil(connection.slotReleased());
  };
  server.addEventListener("close", closed);
  server.addEventListener("error", closed);
  const headers = new Headers({ "Acp-Connection-Id": connectionId });
  const offered = (c.req.header("Sec-WebSocket-Protocol") ?? "").split(",").map((p) => p.trim());
  if (offered.includes(ACP_SUBPROTOCOL)) headers.set("Sec-WebSocket-Protocol", ACP_SUBPROTOCOL);
  return new Response(null, { status: 101, webSocket: client, headers });
});

acpRoutes.post("/acp", requireRole("watch"), (c) => postMessage(c, () => agentOf(c)));
acpRoutes.delete("/acp", requireRole("watch"), (c) => deleteConnection(c));

/** The agent a new connection talks to: ?agent=NAME, or the tenant's default. */
async function agentOf(c: Context<AppEnv>): Promise<string> {
  const agent = c.req.query("agent") ?? (await defaultAgentName(c.env.DB, c.get("principal").tenantId));
  if (!agent) throw ApiError.badRequest("Name the agent to talk to: /acp?agent=NAME (the tenant has no default agent)");
  if (!isAgentName(agent)) throw ApiError.badRequest(`Invalid agent name: ${JSON.stringify(agent)}`);
  return agent;
}
