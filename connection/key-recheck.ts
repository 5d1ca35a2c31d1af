// A live client connection re-checks its own key every KEY_RECHECK_MS (nothing can address a
// connection held by an edge invocation to close it): revoked, expired or its tenant disabled, it
// closes itself with 4401; D1 unable to answer, it is trusted for a bounded grace, then closed 1013.

import type { Env } from "../core/env";
import type { Principal } from "../core/principal";
import { keyValidity } from "../db/queries/keys";
import { tenantDisabled } from "../db/queries/tenants";

export const DEFAULT_KEY_RECHECK_MS = 2000;

/** How long a connection is trusted while D1 cannot answer the re-check (D1 having a bad minute). */
export const DEFAULT_KEY_UNVERIFIED_GRACE_MS = 60_000;

/**
 * The verdict of each re-check of a live connection's key. A failed check (D1 unavailable) is not
 * "still valid": the connection is kept for a bounded grace from the first failure in a row (a
 * revocation made meanwhile takes effect at most that late), then closed with 1013 and a reason.
 */
export class KeyRecheck {
  private failingSince: number | undefined;
  constructor(private readonly graceMs: number) {}

  verdict(check: { ok: true; valid: boolean } | { ok: false }, now: number): "keep" | "revoked" | "unverified" {
    if (check.ok) {
      this.failingSince = undefined;
      return check.valid ? "keep" : "revoked";
    }
    this.failingSince ??= now;
    return now - this.failingSince >= this.graceMs ? "unverified" : "keep";
  }
}

/**
 * Whether the connection's credential is still good: a key not revoked nor expired, a person's token
 * not past its exp (the person reconnects with a fresh one), and the tenant not disabled.
 */
export async function credentialStillValid(env: Env, principal: Principal, now = Date.now()): Promise<boolean> {
  if (principal.credential.type === "token") {
    return principal.credential.expiresAt > now && (await tenantDisabled(env.DB, principal.tenantId)) === false;
  }
  const row = await keyValidity(env.DB, principal.keyId);
  return row !== undefined && row.revokedAt === null && (row.expiresAt === null || row.expiresAt > now) && !row.disabled;
}
