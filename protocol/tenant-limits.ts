import { ErrorCode } from "../core/rpc-errors";
import { RpcError, isObject } from "./jsonrpc";
import { shardOf } from "./generation-lease";
// Per-tenant limits: the defaults, and reading a tenant's overrides (tenants.settings.limits); the
// limits on one frame are protocol/limits.ts. The
// defaults are sized for a team that leaves agents running for hours: far above what people and
// agents do, low enough that one runaway client or agent cannot take a tenant (or the gateway) down.

export interface Limits {
  /** Messages per second one client connection (WebSocket or Streamable HTTP) may send; bursts of twice that. */
  messagesPerSecondPerConnection: number;
  /** Messages per second one agent connection may send (agents stream much faster than people type); bursts of twice that. */
  messagesPerSecondPerAgentConnection: number;
  /**
   * Bytes of an agent's frames the edge holds while its message rate makes them wait (decision 0023):
   * a burst is drained at the rate, not refused. Over it, the agent's requests are refused (-32029)
   * while notifications and answers are still held; a connection that stays over it for five seconds,
   * or reaches twice it, is closed 4429.
   */
  heldBytesPerAgentConnection: number;
  /** Messages per second all of a tenant's connections, clients and agents, may send together; bursts of twice that. */
  messagesPerSecondPerTenant: number;
  /** Client connections (WebSocket and Streamable HTTP) open at once under one key; more are refused with 429. */
  connectionsPerKey: number;
  /** Sessions a tenant may have live (not idle for a day) at once; session/new beyond it is refused. */
  liveSessionsPerTenant: number;
  /** Permission requests waiting in one session; beyond it the agent's request gets an error. */
  pendingPermissionsPerSession: number;
  /** How long a running turn may go without a word from the agent before the gateway ends it. */
  turnIdleMs: number;
  /**
   * Permission requests outside a turn audited one by one per session and minute. Past it each is
   * still answered `cancelled` at once, and one summarising audit row counts them (decision 0022).
   */
  outsideTurnAuditsPerMinute: number;
  /**
   * Bytes of decision audit the tenant may write to D1 in a UTC day. Past it, rows keep who decided
   * and the operation's length and SHA-256 only, and clients get `_acp_gateway/limit_reached`.
   */
  auditBytesPerDay: number;
  /** Rules (remembered decisions) not revoked; beyond it a new one is refused (decision 0041). */
  rulesPerTenant: number;
  /** Bytes of the rules not revoked (matcher, its text, description, scope); beyond it a new one is refused. */
  ruleBytesPerTenant: number;
  /** Notification targets (webhooks); beyond it a new one is refused, and no request is sent to more. */
  notificationTargetsPerTenant: number;
  /**
   * Client connections attached to one session at once (session/new, load, attach; decision 0060);
   * beyond it an attach is refused (-32029). Each holds up to 1 MiB of stream in the session's memory.
   */
  attachedClientsPerSession: number;
  /** Targets one waiting request is sent to (the first by id); at most HARD_LIMITS' 50 and the tenant's posts per minute. */
  notificationTargetsPerRequest: number;
  /**
   * Webhook POSTs the tenant's sessions send per minute, together. A limit slows, never drops: requests
   * past it wait in their session for the next minute, and the session logs that it paced them.
   */
  webhookPostsPerMinute: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = {
  messagesPerSecondPerConnection: 100,
  messagesPerSecondPerAgentConnection: 1000,
  heldBytesPerAgentConnection: 8 * 1024 * 1024,
  messagesPerSecondPerTenant: 5000,
  connectionsPerKey: 100,
  liveSessionsPerTenant: 500,
  pendingPermissionsPerSession: 32,
  turnIdleMs: 30 * 60 * 1000,
  outsideTurnAuditsPerMinute: 10,
  auditBytesPerDay: 64 * 1024 * 1024,
  rulesPerTenant: 1000,
  ruleBytesPerTenant: 1024 * 1024,
  notificationTargetsPerTenant: 20,
  attachedClientsPerSession: 32,
  notificationTargetsPerRequest: 10,
  webhookPostsPerMinute: 120,
};

/**
 * What no tenant's settings raise the stored-data limits above (decision 0041): rules and targets
 * live in the one D1 every tenant shares. A larger value in a row written by hand is read as these.
 */
export const HARD_LIMITS = {
  rulesPerTenant: 25_000,
  ruleBytesPerTenant: 16 * 1024 * 1024,
  notificationTargetsPerTenant: 50,
  // Each attached socket's stream and each dropped one kept (32 at most) hold up to 1 MiB of the session's 128 MB.
  attachedClientsPerSession: 32,
  notificationTargetsPerRequest: 50,
  webhookPostsPerMinute: 6000,
} as const satisfies Partial<Limits>;

/** How many targets one waiting request is sent to: the tenant's limit, at most the hard maximum and a minute's posts (so one request always fits a minute). */
export function targetsPerRequest(limits: Limits): number {
  return Math.min(limits.notificationTargetsPerRequest, HARD_LIMITS.notificationTargetsPerRequest, webhookPostsPerMinute(limits));
}

/** The tenant's webhook POSTs per minute, at most the hard maximum. */
export function webhookPostsPerMinute(limits: Limits): number {
  return Math.min(limits.webhookPostsPerMinute, HARD_LIMITS.webhookPostsPerMinute);
}

const MINUTE_MS = 60_000;

/** One minute's webhook POSTs so far (the TenantLimitsObject keeps it). */
export interface WebhookWindow {
  minute: number;
  used: number;
}

/**
 * Which of the requests due now may send their webhooks this minute (decision 0061): the leading
 * ones whose posts (`posts[i]` each) fit in what is left of `perMinute`, in order, never one out of
 * turn; the rest wait for `retryAt`, the next minute. Guarantees (test/unit/webhook-pacing.test.ts):
 * never more than `perMinute` posts admitted in one minute, except a single request larger than a
 * whole minute, which is admitted alone in an empty minute (never starved); nothing is dropped.
 */
export function admitWebhooks(
  window: WebhookWindow,
  posts: readonly number[],
  perMinute: number,
  now: number,
): { admitted: number; window: WebhookWindow; retryAt: number } {
  const minute = Math.floor(now / MINUTE_MS);
  let used = window.minute === minute ? window.used : 0;
  let admitted = 0;
  for (const n of posts) {
    if (used + n > perMinute && !(used === 0 && admitted === 0)) break;
    used += n;
    admitted++;
  }
  return { admitted, window: { minute, used }, retryAt: (minute + 1) * MINUTE_MS };
}

/** One rule's bytes (as counted for ruleBytesPerTenant) may not exceed this, whatever the budget. */
export const MAX_RULE_BYTES = 64 * 1024;

/** A tenant's decision audit budget today (TenantLimitsObject), as the REST audit API reports it. */
export interface AuditBudget {
  bytesPerDay: number;
  spentToday: number;
  /** True once a batch did not fit: rows since keep the operation's length and SHA-256 only. */
  exhausted: boolean;
  /** When the day ends (UTC midnight, ms): the budget starts again. */
  resetsAt: number;
}

const DAY_MS = 24 * 3600 * 1000;
/** The UTC day `now` falls in, as a number. */
export const auditDay = (now: number): number => Math.floor(now / DAY_MS);
export const auditDayEnd = (day: number): number => (day + 1) * DAY_MS;

/** The notice a session's clients get when the tenant's audit budget for the day is spent. */
export function auditBudgetSpent(value: number, resetsAt: number): LimitError {
  return limitError(
    "auditBytesPerDay",
    value,
    `This tenant's decision audit has used its ${value} bytes for today; until ${new Date(resetsAt).toISOString()} each entry keeps who decided and the operation's length and SHA-256, not its text (the full text stays in the session's log). Raise limits.auditBytesPerDay in the tenant's settings, or find the agent sending so much.`,
    "audit_budget_spent",
  );
}

/**
 * Lease shards of a tenant's message rate (TenantLimitsObject `${tenantId}/${index}`): each
 * connection leases from one (chosen when it opens), and the shards from the tenant's object, so no
 * one object serves every connection's leases (decision 0031).
 */
export const LIMIT_SHARDS = 64;

/** A lease shard's answer to "wait": until what was asked for is there, at most half a second. */
export const MAX_LEASE_RETRY_MS = 500;

/** How often a live connection renews its slot in the tenant's count; a slot not renewed for three times this is freed. */
export const CONNECTION_RENEW_MS = 20_000;

/** A connection whose isolate died without closing it frees its slot after this long. */
export const CONNECTION_TTL_MS = 3 * CONNECTION_RENEW_MS;

/**
 * The shard (TenantLimitsObject `${tenantId}/${index}`) that counts a key's connections: every
 * connection of a key opens, renews and closes its slot there, so the key's count is exact in one
 * place and the tenant's root serves none of it. Keys hash across the LIMIT_SHARDS shards (FNV-1a),
 * so at 10,000 connections no object takes more than its keys' renewals: at most
 * `connectionsPerKey / CONNECTION_RENEW_MS` per key (5 a second at the default 100).
 */
export function slotShardOf(keyId: string): number {
  return shardOf(keyId, LIMIT_SHARDS);
}

/**
 * The open connections of the keys one object counts (in memory: they describe the live
 * connections, which renew every CONNECTION_RENEW_MS, so an object's restart forgets nothing for
 * longer). Guarantees: a key never has more than `limit` slots taken by `open`; a slot not renewed
 * within CONNECTION_TTL_MS is free; a renewal takes the slot back after a restart (above the limit
 * only by connections that were open before it).
 */
export class SlotTable {
  /** Per key: connection id → when its slot lapses. */
  private readonly slots = new Map<string, Map<string, number>>();

  open(keyId: string, connectionId: string, limit: number, now: number): { ok: true } | { ok: false; open: number } {
    const open = this.live(keyId, now);
    if (!open.has(connectionId) && open.size >= limit) return { ok: false, open: open.size };
    open.set(connectionId, now + CONNECTION_TTL_MS);
    return { ok: true };
  }

  renew(keyId: string, connectionId: string, now: number): void {
    this.live(keyId, now).set(connectionId, now + CONNECTION_TTL_MS);
  }

  close(keyId: string, connectionId: string): void {
    const open = this.slots.get(keyId);
    open?.delete(connectionId);
    if (open?.size === 0) this.slots.delete(keyId);
  }

  /** Live slots across every key. */
  count(now: number): number {
    let n = 0;
    for (const keyId of [...this.slots.keys()]) n += this.live(keyId, now).size;
    return n;
  }

  private live(keyId: string, now: number): Map<string, number> {
    let open = this.slots.get(keyId);
    if (!open) this.slots.set(keyId, (open = new Map()));
    for (const [id, lapses] of open) if (lapses <= now) open.delete(id);
    return open;
  }
}

/** A session counts as live while it was used within this window (the sessions index's updated_at). */
export const LIVE_SESSION_WINDOW_MS = 24 * 3600 * 1000;

/** The tenant's limits: each override that is a positive whole number, else the default. */
export function limitsOf(overrides: unknown): Limits {
  const given = typeof overrides === "object" && overrides !== null ? (overrides as Record<string, unknown>) : {};
  const limits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(DEFAULT_LIMITS) as (keyof Limits)[]) {
    const value = given[key];
    if (typeof value === "number" && Number.isInteger(value) && value > 0) limits[key] = value;
  }
  return limits;
}

export interface LimitError {
  code: number;
  message: string;
  data: { reason: string; limit: keyof Limits; value: number };
}

function limitError(limit: keyof Limits, value: number, message: string, reason = "limit_exceeded"): LimitError {
  return { code: ErrorCode.limitExceeded, message, data: { reason, limit, value } };
}

/** The notice (`_acp_gateway/limit_reached`, in the session's log) when requests' webhooks wait for the next minute. */
export function webhooksPaced(value: number, waiting: number, retryAt: number): LimitError {
  return limitError(
    "webhookPostsPerMinute",
    value,
    `This tenant's sessions sent their ${value} webhook notifications for this minute; ${waiting} waiting request(s) of this session will be sent to the notification targets at ${new Date(retryAt).toISOString()}, not dropped. Raise limits.webhookPostsPerMinute, or send requests to fewer targets.`,
    "webhooks_paced",
  );
}

/** The notice the clients get when a session's out-of-turn requests start being summarised. */
export function outsideTurnAuditLimit(sessionId: string, value: number): LimitError {
  return limitError(
    "outsideTurnAuditsPerMinute",
    value,
    `The agent of session ${sessionId} sent more than ${value} permission requests outside a turn this minute; each is still answered cancelled, and the rest of this minute's are counted in one audit row instead of one row each.`,
    "outside_turn_audit_summarised",
  );
}

export function pendingLimitError(sessionId: string, value: number): LimitError {
  return limitError(
    "pendingPermissionsPerSession",
    value,
    `Too many permission requests are waiting in session ${sessionId} (the tenant's limit is ${value}); the gateway refused this one. Wait for people to answer the ones already asked.`,
    "pending_permission_limit",
  );
}

/** The message-rate limits: one connection's (a client's or an agent's), and the whole tenant's. */
export type RateLimit = "messagesPerSecondPerConnection" | "messagesPerSecondPerAgentConnection" | "messagesPerSecondPerTenant";

/** The error for a message over a rate; `method` names what was refused. */
export function rateLimitError(limit: RateLimit, value: number, method: string): LimitError {
  const over =
    limit === "messagesPerSecondPerTenant"
      ? `Too many messages from this tenant's connections together (its limit is ${value} a second across all clients and agents, bursts of ${2 * value})`
      : `Too many messages on this connection (the tenant's limit is ${value} a second, bursts of ${2 * value})`;
  return limitError(
    limit,
    value,
    `${over}; ${method} was refused. Slow down and retry; a connection that keeps sending over the limit is closed.`,
    limit === "messagesPerSecondPerTenant" ? "tenant_rate_limited" : "rate_limited",
  );
}

/** The error for an agent's request that arrived while the edge held `value` bytes of its frames or more. */
export function heldFullError(value: number, rate: number, method: string): LimitError {
  return limitError(
    "heldBytesPerAgentConnection",
    value,
    `The gateway holds ${value} bytes of this agent's messages waiting for its rate (${rate} a second) already; ${method} was refused. Slow down and retry; notifications are still held, and a connection that stays over the bound for five seconds is closed.`,
    "agent_hold_full",
  );
}

/** The refusal of a new connection beyond its key's limit (HTTP 429 before the upgrade or initialize). */
export function connectionsPerKeyMessage(value: number): string {
  return `This API key already has ${value} connections open (the tenant's limit; WebSocket and Streamable HTTP connections count). Close one (DELETE /acp for an HTTP connection) and retry, use another key, or ask the tenant's admin to raise settings.limits.connectionsPerKey.`;
}

/** The bound on one session's attached clients as the session applies it: the tenant's, never above the hard maximum. */
export function attachedClientsBound(overrides: unknown): number {
  return Math.min(limitsOf(overrides).attachedClientsPerSession, HARD_LIMITS.attachedClientsPerSession);
}

/** The refusal of one more client attaching to a session that has `value` attached. */
export function attachedClientsError(sessionId: string, value: number): LimitError {
  return limitError(
    "attachedClientsPerSession",
    value,
    `Session ${sessionId} already has ${value} clients attached (the tenant's limit); this attach was refused and nothing of the session was sent. Detach a client (session/detach) or close one, or ask the tenant's admin to raise settings.limits.attachedClientsPerSession (at most ${HARD_LIMITS.attachedClientsPerSession}).`,
    "attached_clients_limit",
  );
}

/** A LimitError as it crossed a wire (a session's 429 body), as the error to answer; anything else is an internal error. */
export function limitRefusal(body: unknown): RpcError {
  const e = isObject(body) ? body : {};
  if (e.code !== ErrorCode.limitExceeded || typeof e.message !== "string")
    return new RpcError(ErrorCode.internalError, "The session refused the attach without saying why");
  return new RpcError(ErrorCode.limitExceeded, e.message, e.data);
}

export function liveSessionsError(value: number): LimitError {
  return limitError(
    "liveSessionsPerTenant",
    value,
    `The tenant already has ${value} live sessions (its limit; a session is live for a day after its last use); session/new was refused. Continue an existing session with session/load, or ask the tenant's admin to raise settings.limits.liveSessionsPerTenant.`,
    "live_session_limit",
  );
}
