// Who is calling: an API key (Authorization: Bearer, or for browsers a WebSocket subprotocol)
// resolved to its tenant. Keys are stored as SHA-256 hashes; the looked-up hash is compared again
// in constant time so that no timing difference depends on the secret.

import { keyWithTenantByHash, markKeyUsed } from "../db/queries/keys";
import type { Principal, TenantSettings } from "../core/principal";
import { sha256Hex } from "../protocol/ids";
import type { Env } from "../core/env";

/** The subprotocol browsers use to carry the key: `acp.bearer.<KEY>`, offered beside `acp.v1`. */
const BEARER_SUBPROTOCOL_PREFIX = "acp.bearer.";
export const ACP_SUBPROTOCOL = "acp.v1";

/** The key a request carries, from the Authorization header or the WebSocket subprotocol list. */
export function presentedKey(request: Request): string | undefined {
  const header = request.headers.get("Authorization");
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1];
  }
  const protocols = request.headers.get("Sec-WebSocket-Protocol");
  if (protocols) {
    for (const p of protocols.split(",")) {
      const name = p.trim();
      if (name.startsWith(BEARER_SUBPROTOCOL_PREFIX)) return name.slice(BEARER_SUBPROTOCOL_PREFIX.length);
    }
  }
  return undefined;
}

/** The principal behind a key, or null for a key that is unknown, revoked, expired or of a disabled tenant. */
export async function authenticate(env: Env, key: string | undefined, now = Date.now()): Promise<Principal | null> {
  if (!key || key.length > 512) return null;
  const hash = await sha256Hex(key);
  const row = await keyWithTenantByHash(env.DB, hash);
  if (!row || !constantTimeEqual(row.key.hash, hash)) return null;
  const { key: stored, tenant } = row;
  if (stored.revokedAt !== null || (stored.expiresAt !== null && stored.expiresAt <= now) || tenant.disabled) return null;
  return {
    tenantId: stored.tenantId,
    tenantSlug: tenant.slug,
    keyId: stored.id,
    kind: stored.kind,
    label: stored.label,
    agent: stored.agent,
    settings: parseSettings(tenant.settings),
    lastUsedAt: stored.lastUsedAt,
  };
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
  if (principal.lastUsedAt !== null && now - principal.lastUsedAt < 60_000) return undefined;
  return markKeyUsed(env.DB, principal.keyId, now).catch((e: unknown) => console.error("auth: last_used_at update failed", e));
}
