// The Worker's environment. The bindings wrangler.toml declares (D1, the Durable Object namespaces,
// the console's assets, the API rate limit, vars) are generated from it by `wrangler types` into
// ../worker-configuration.d.ts as the global `Bindings` (`npm run types`; `npm run check` fails
// when that file is stale): a global type, so this module imports nothing. Added here: what
// wrangler.toml does not declare.

/**
 * The bindings of the Worker and its Durable Objects (wrangler.toml, .dev.vars, secrets). Its
 * Durable Object namespaces are used only by durable-objects/objects.ts, which hands out stubs
 * typed by each object's contract (the lint gate refuses `idFromName`/`getByName` anywhere else).
 */
export interface Env extends Bindings {
  /** The operator's bootstrap secret (wrangler secret put GATEWAY_ADMIN_TOKEN). */
  GATEWAY_ADMIN_TOKEN?: string;
  /** Default deadline of a pending permission request, in ms, when the tenant sets none (default 600000: 10 min). */
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
  /** How long an unused link to a session stays open (the AgentObject's and the edge's), in ms (default 10000; durable-objects/agent/session-links.ts). */
  AGENT_LINK_IDLE_MS?: string;
  /**
   * "1": webhooks may go to loopback, private and link-local hosts, over plain http too
   * (protocol/webhook-url.ts). Unset (off) in a deployment; `npm start` and the tests set it for their
   * receivers on this machine.
   */
  WEBHOOK_ALLOW_PRIVATE?: string;
  /**
   * "1": a tenant's identity provider may publish its keys (JWKS) over plain http (decision 0025).
   * Unset (off) in a deployment; `npm start` and the tests set it for their provider on loopback.
   */
  IDENTITY_ALLOW_HTTP?: string;
  /** The least time between two fetches of one issuer's keys for a token naming an unknown key, in ms (default 30000). */
  JWKS_COOLDOWN_MS?: string;
  /** "1": log the stage timings of the bench's probe frames (protocol/stage-timing.ts); unset in production. */
  STAGE_TIMING?: string;
}
