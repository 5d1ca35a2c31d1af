// The edge Worker: authenticates, terminates client WebSockets, hands agents to their AgentObject,
// and serves the REST API. Durable Object classes are exported from here for wrangler.

import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { auditApi } from "./api/audit";
import { metricsApi } from "./api/metrics";
import { notificationsApi } from "./api/notifications";
import { validationHook } from "./api/openapi";
import { rulesApi } from "./api/rules";
import { sessionsApi } from "./api/sessions";
import { approvalsApi } from "./api/approvals";
import { modeChangesApi } from "./api/mode-changes";
import { agentsApi } from "./api/agents";
import { identityApi } from "./api/identity";
import { signInApi } from "./api/sign-in";
import { keysApi } from "./api/keys";
import { ticketsApi } from "./api/tickets";
import { tenantsApi } from "./api/tenants";
import { settingsApi } from "./api/settings";
import { errorBody, onError } from "./http-error";
import { acpRoutes } from "./routes/acp";
import { agentConnectRoutes } from "./routes/agents-connect";
import { approveRoutes } from "./routes/approve";
import { requestLog } from "./middleware/request-log";
import type { AppEnv } from "./types";

export { AgentObject } from "../durable-objects/agent/agent-object";
export { ConnectionObject } from "../durable-objects/connection/connection-object";
export { RulesObject } from "../durable-objects/rules/rules-object";
export { SessionObject } from "../durable-objects/session/session-object";
export { TenantLimitsObject } from "../durable-objects/tenant/tenant-limits-object";

const app = new Hono<AppEnv>();
app.use("*", requestLog);
app.get("/health", (c) => c.json({ ok: true }));
app.use(
  "/v1/*",
  bodyLimit({ maxSize: 64 * 1024, onError: (c) => c.json(errorBody("too_large", "The request body is over the 64 KiB limit"), 413) }),
);
app.route("/", acpRoutes);
app.route("/", agentConnectRoutes);
app.route("/", approveRoutes);

// The REST API whose OpenAPI document is generated from its schemas.
const api = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
api.route("/", sessionsApi);
api.route("/", approvalsApi);
api.route("/", modeChangesApi);
api.route("/", tenantsApi);
api.route("/", keysApi);
api.route("/", identityApi);
api.route("/", settingsApi);
api.route("/", signInApi);
api.route("/", ticketsApi);
api.route("/", agentsApi);
api.route("/", rulesApi);
api.route("/", auditApi);
api.route("/", notificationsApi);
api.route("/", metricsApi);
api.doc("/v1/openapi.json", { openapi: "3.0.0", info: { title: "ACP Gateway API", version: "0.1.0" } });
app.route("/", api);

app.notFound(async (c) => {
  const path = new URL(c.req.url).pathname;
  // What is not the API may be one of the web console's static files.
  if (c.req.method === "GET" && !path.startsWith("/v1/") && c.env.ASSETS) {
    const asset = await c.env.ASSETS.fetch(c.req.raw);
    if (asset.status !== 404) return asset;
  }
  return c.json(errorBody("not_found", `No route for ${c.req.method} ${path}`), 404);
});
app.onError(onError);

export default app;
