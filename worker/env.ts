import type { ConnectionObject } from "../durable-objects/connection/connection-object";
import type { AgentObject } from "../durable-objects/agent/agent-object";
import type { RulesObject } from "../durable-objects/rules/rules-object";
import type { SessionObject } from "../durable-objects/session/session-object";
import type { TenantLimitsObject } from "../durable-objects/tenant/tenant-limits-object";

/** The bindings of the Worker and its Durable Objects (wrangler.toml, .dev.vars, secrets). */
export interface Env {
  DB: D1Database;
  SESSIONS: DurableObjectNamespace<SessionObject>;
  AGENTS: DurableObjectNamespace<AgentObject>;
  /** One per Streamable HTTP client connection, named `${tenantId}/${connectionId}`. */
  CONNECTIONS: DurableObjectNamespace<ConnectionObject>;
  /** One per tenant: the tenant's remembered decisions, cached and compiled. */
  RULES: DurableObjectNamespace<RulesObject>;
  /** One per tenant: the counts that span its connections (message-rate leases, connections per key). */
  TENANT_LIMITS: DurableObjectNamespace<TenantLimitsObject>;
  /** The web console's static files (web/). */
  ASSETS?: Fetcher;
  /** Per-key request limit of the REST API (wrangler.toml [[ratelimits]]). */
  API_RATE_LIMIT?: RateLimit;
  /** The operator's bootstrap secret (wrangler secret put GATEWAY_ADMIN_TOKEN). */
  GATEWAY_ADMIN_TOKEN?: string;
  /** Default deadline of a pending permission request, in ms, when the tenant sets none. */
  PERMISSION_DEADLINE_MS?: string;
  /** How often a client connection re-checks that its key is still valid, in ms (default 2000). */
  KEY_RECHECK_MS?: string;
  /** How long a client connection stays open while its key cannot be re-checked (D1 down), in ms (default 60000). */
  KEY_UNVERIFIED_GRACE_MS?: string;
  /** Streamable HTTP: how often an idle SSE stream gets a keepalive comment, in ms (default 15000). */
  HTTP_KEEPALIVE_MS?: string;
  /** Streamable HTTP: how long messages are held for a stream with no reader, in ms (default 30000). */
  HTTP_STREAM_WINDOW_MS?: string;
  /** Streamable HTTP: messages held for a stream with no reader (default 1000). */
  HTTP_STREAM_MAX_MESSAGES?: string;
  /** Streamable HTTP: bytes held for a stream with no reader, or unread by a slow one (default 8 MiB). */
  HTTP_STREAM_MAX_BYTES?: string;
  /** HMAC key of approval links (wrangler secret put APPROVAL_LINK_SECRET); without it no link is issued or accepted. */
  APPROVAL_LINK_SECRET?: string;
}
