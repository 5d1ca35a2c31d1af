// Who is calling (decision 0025). One credential per request, found in this order:
// 1. `Authorization: Bearer <value>`: a JWT (three base64url parts; an API key never holds a dot) is a
//    person's token from the tenant's OpenID Connect provider; anything else is an API key.
// 2. `Cf-Access-Jwt-Assertion`: Cloudflare Access's token, when the tenant configured Access.
// 3. On a WebSocket upgrade of /acp, the subprotocol `acp.ticket.<TICKET>` (POST /v1/tickets), or the
//    legacy `acp.bearer.<KEY>` where the tenant turned it on (off by default).
// A token names no tenant of its own: the request names it (`Acp-Tenant: <slug>` or `?tenant=<slug>`)
// and only that tenant's provider is tried; (issuer, audience) is unique across tenants, so a token
// valid for tenant A is never valid for B. A key or ticket already belongs to one tenant; a request
// naming another tenant beside it is refused.
// Keys are stored as SHA-256 hashes; the looked-up hash is compared again in constant time so that no
// timing difference depends on the secret.

import { identityProvider, proveIssuerAudience } from "../db/queries/identity";
import { keyWithTenantByHash, keyWithTenantById, markKeyUsed } from "../db/queries/keys";
import { tenantBySlug } from "../db/queries/tenants";
import type { ApiKey } from "../db/schema";
import type { Person, Principal, TenantSettings } from "../core/principal";
import { sha256Hex } from "../protocol/ids";
import type { Env } from "../core/env";
import { looksLikeJwt, verifyToken } from "./identity";
import { roleOf } from "../protocol/people/roles";
import { type TicketHolder, redeem } from "./tickets";
import { log } from "../core/log";

/** The legacy subprotocol that carries a key: `acp.bearer.<KEY>`, refused unless the tenant allows it. */
const BEARER_SUBPROTOCOL_PREFIX = "acp.bearer.";
/** The subprotocol that carries a ticket: `acp.ticket.<TICKET>`, offered beside `acp.v1`. */
const TICKET_SUBPROTOCOL_PREFIX = "acp.ticket.";
export const ACP_SUBPROTOCOL = "acp.v1";
/** The header that names the tenant a person's token is for. */
const TENANT_HEADER = "Acp-Tenant";

export type Authentication = { ok: true; principal: Principal } | { ok: false; reason: string };

const refused = (reason: string): Authentication => ({ ok: false, reason });
const NO_CREDENTIAL =
  "Missing credentials: send Authorization: Bearer <API key or identity token> (a token also names the tenant: Acp-Tenant: <slug>)";

/** The principal behind the request's credential, or why there is none. */
export async function authenticateRequest(env: Env, request: Request, now = Date.now()): Promise<Authentication> {
  const url = new URL(request.url);
  const namedTenant = request.headers.get(TENANT_HEADER) ?? url.searchParams.get("tenant");
  const header = request.headers.get("Authorization");
  let result: Authentication;
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) return refused("The Authorization header must be: Bearer <API key or identity token>");
    result = looksLikeJwt(match[1]) ? await fromToken(env, "oidc", match[1], namedTenant) : await fromKey(env, match[1], now);
  } else if (request.headers.get("Cf-Access-Jwt-Assertion")) {
    result = await fromToken(env, "access", request.headers.get("Cf-Access-Jwt-Assertion") ?? "", namedTenant);
  } else {
    const offered = (request.headers.get("Sec-WebSocket-Protocol") ?? "").split(",").map((p) => p.trim());
    const ticket = offered.find((p) => p.startsWith(TICKET_SUBPROTOCOL_PREFIX))?.slice(TICKET_SUBPROTOCOL_PREFIX.length);
    const legacy = offered.find((p) => p.startsWith(BEARER_SUBPROTOCOL_PREFIX))?.slice(BEARER_SUBPROTOCOL_PREFIX.length);
    if (ticket !== undefined) {
      if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket") return refused("A ticket opens only a WebSocket");
      result = await fromTicket(env, ticket, url.pathname, now);
    } else if (legacy !== undefined) {
      result = await fromKey(env, legacy, now);
      if (result.ok && result.principal.settings.legacyBearerSubprotocol !== true) {
        return refused(
          "The acp.bearer.<key> subprotocol is off for this tenant (it puts the key where proxies log it): get a ticket with POST /v1/tickets and offer acp.ticket.<ticket>",
        );
      }
    } else return refused(NO_CREDENTIAL);
  }
  if (result.ok && namedTenant !== null && namedTenant !== result.principal.tenantSlug) {
    return refused(`This credential is for another tenant than "${namedTenant}"`);
  }
  return result;
}

/** The principal behind a key, or why not: unknown, revoked, expired, or of a disabled tenant. */
async function fromKey(env: Env, key: string, now: number): Promise<Authentication> {
  if (key.length > 512) return refused("Invalid API key");
  const hash = await sha256Hex(key);
  const row = await keyWithTenantByHash(env.DB, hash);
  if (!row || !constantTimeEqual(row.key.hash, hash)) return refused("Invalid API key: send Authorization: Bearer <key>");
  return keyPrincipal(row.key, row.tenant, now);
}

function keyPrincipal(stored: ApiKey, tenant: { slug: string; disabled: boolean; settings: string }, now: number): Authentication {
  if (stored.revokedAt !== null) return refused("This API key was revoked");
  if (stored.expiresAt !== null && stored.expiresAt <= now) return refused("This API key has expired");
  if (tenant.disabled) return refused("This tenant is disabled");
  const person: Person | null =
    stored.user !== null ? { issuer: "key", subject: stored.user, name: stored.label ?? stored.user, groups: [] } : null;
  const settings = parseSettings(tenant.settings);
  return {
    ok: true,
    principal: {
      tenantId: stored.tenantId,
      tenantSlug: tenant.slug,
      keyId: stored.id,
      kind: stored.kind,
      credential: { type: "key" },
      label: stored.label ?? stored.user,
      person,
      role: roleOf({ credential: "key", kind: stored.kind, stored: stored.role }, settings.roles),
      agent: stored.agent,
      settings,
      lastUsedAt: stored.lastUsedAt,
    },
  };
}

/** A person's token, verified against the named tenant's provider only. */
async function fromToken(env: Env, via: "oidc" | "access", token: string, tenantSlug: string | null): Promise<Authentication> {
  if (tenantSlug === null) return refused(`An identity token needs the tenant named: send ${TENANT_HEADER}: <slug> (or ?tenant=<slug>)`);
  if (token.length > 16 * 1024) return refused("The identity token is over 16 KiB");
  const tenant = await tenantBySlug(env.DB, tenantSlug);
  const provider = tenant && (await identityProvider(env.DB, tenant.id, via));
  if (!tenant || !provider) {
    const what = via === "oidc" ? "OpenID Connect (PUT /v1/tenant/oidc)" : "Cloudflare Access (PUT /v1/tenant/access)";
    return refused(`Tenant "${tenantSlug}" does not exist or has not configured ${what}`);
  }
  if (tenant.disabled) return refused("This tenant is disabled");
  const check = await verifyToken(env, provider, token);
  if (!check.ok) return refused(`Identity token refused: ${check.reason}`);
  // The first tenant whose person signs in with a pair proves it; any other naming it is refused (decision 0041).
  const prover = await proveIssuerAudience(env.DB, provider.issuer, provider.audience, tenant.id, Date.now());
  if (prover !== tenant.id)
    return refused(
      "Identity token refused: another tenant proved this issuer and audience first (its people signed in with them); give this tenant its own audience (client id)",
    );
  const settings = parseSettings(tenant.settings);
  return {
    ok: true,
    principal: {
      tenantId: tenant.id,
      tenantSlug: tenant.slug,
      keyId: `person:${(await sha256Hex(`${tenant.id}\n${check.person.issuer}\n${check.person.subject}`)).slice(0, 32)}`,
      kind: "client",
      credential: { type: "token", via, expiresAt: check.expiresAt },
      label: check.person.name,
      person: check.person,
      role: roleOf({ credential: "token", groups: check.person.groups }, settings.roles),
      agent: null,
      settings,
      lastUsedAt: null,
    },
  };
}

/** A ticket, redeemed once; who it was issued to must still be good (key not revoked, token not expired). */
async function fromTicket(env: Env, ticket: string, path: string, now: number): Promise<Authentication> {
  const redeemed = await redeem(env, ticket, path, now);
  if (!redeemed.ok) return redeemed;
  const holder: TicketHolder = redeemed.holder;
  if (holder.credential.type === "key") {
    const row = await keyWithTenantById(env.DB, redeemed.tenantId, holder.keyId);
    if (!row) return refused("The key this ticket was issued to no longer exists");
    return keyPrincipal(row.key, row.tenant, now);
  }
  if (holder.credential.expiresAt <= now) return refused("The identity token this ticket was issued for has expired");
  const tenant = await tenantBySlug(env.DB, holder.tenantSlug);
  if (!tenant || tenant.id !== redeemed.tenantId || tenant.disabled) return refused("This tenant is disabled");
  // The role is mapped again from the settings of now: a mapping changed since the ticket was issued applies.
  const settings = parseSettings(tenant.settings);
  const role = roleOf({ credential: "token", groups: holder.person?.groups ?? [] }, settings.roles);
  return { ok: true, principal: { ...holder, role, settings, lastUsedAt: null } };
}

/** Equal strings, compared so that the time taken does not depend on where they first differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  return bytesEqualInConstantTime(new TextEncoder().encode(a), new TextEncoder().encode(b));
}

/** Reads every byte of both inputs whatever they hold: no early exit on the first difference. */
export function bytesEqualInConstantTime(x: ArrayLike<number>, y: ArrayLike<number>): boolean {
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

function parseSettings(text: string): TenantSettings {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === "object" && value !== null ? (value as TenantSettings) : {};
  } catch {
    return {};
  }
}

/** Records that a key was used, at most once a minute per key, off the request's path. */
export function touchKey(env: Env, principal: Principal, now = Date.now()): Promise<unknown> | undefined {
  if (principal.credential.type !== "key") return undefined;
  if (principal.lastUsedAt !== null && now - principal.lastUsedAt < 60_000) return undefined;
  return markKeyUsed(env.DB, principal.keyId, now).catch((e: unknown) =>
    log(
      "warn",
      "auth.key_touch_failed",
      "recording when a key was last used failed",
      { tenantId: principal.tenantId, keyId: principal.keyId },
      e,
    ),
  );
}
