// A live client connection re-checks its own key every KEY_RECHECK_MS (nothing can address a
// connection held by an edge invocation to close it): revoked, expired or its tenant disabled, it
// closes itself with 4401; D1 unable to answer, it is trusted for a bounded grace, then closed 1013;
// its role changed (a person's groups, a key's stored role), it closes so the client reconnects with it.

import { CLOSE } from "../core/close-codes";
import type { Env } from "../core/env";
import type { Principal, Role, TenantSettings } from "../core/principal";
import { keyValidity } from "../db/queries/keys";
import { tenantStanding } from "../db/queries/tenants";
import { roleOf } from "../protocol/people/roles";

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

  /** Reads the credential's standing now and judges it: null to keep the connection, else how it ends. */
  async recheck(env: Env, principal: Principal): Promise<RecheckEnding | null> {
    const check = await credentialNow(env, principal).then(
      (now) => ({ ok: true as const, valid: now.valid, role: now.role }),
      () => ({ ok: false as const }), // D1 unavailable: the grace bounds how long that is tolerated
    );
    const verdict = this.verdict(check, Date.now());
    if (verdict === "keep" && check.ok && check.role !== principal.role) {
      // What the sessions know of this client (its role in their attachments) is no longer true: it reconnects with the new role.
      const reason = `your role changed from ${principal.role ?? "none"} to ${check.role ?? "none"}; reconnect`;
      return { cause: "roleChanged", code: CLOSE.roleChanged, reason };
    }
    if (verdict === "keep") return null;
    if (verdict === "unverified")
      return {
        cause: verdict,
        code: CLOSE.tryAgainLater,
        reason: "the gateway could not verify the API key (its database is unavailable); reconnect later",
      };
    if (principal.credential.type === "token")
      return {
        cause: verdict,
        code: CLOSE.credentialsRevoked,
        reason: "the identity token expired, or the tenant was disabled: reconnect with a fresh token",
      };
    return { cause: verdict, code: CLOSE.credentialsRevoked, reason: "the API key was revoked or expired, or the tenant was disabled" };
  }
}

/** How a re-check ends a connection, and why (the close's reason tells the client what to do). */
interface RecheckEnding {
  cause: "roleChanged" | "revoked" | "unverified";
  code: number;
  reason: string;
}

/**
 * Whether the connection's credential is still good: a key not revoked nor expired, a person's token
 * not past its exp (the person reconnects with a fresh one), and the tenant not disabled.
 */
export async function credentialStillValid(env: Env, principal: Principal, now = Date.now()): Promise<boolean> {
  return (await credentialNow(env, principal, now)).valid;
}

/**
 * The credential's standing now, read in one D1 query: still valid, and the role it has now (decision
 * 0028: a person's role follows the tenant's group mapping, which an admin may change at any time).
 */
async function credentialNow(env: Env, principal: Principal, now = Date.now()): Promise<{ valid: boolean; role: Role | null }> {
  if (principal.credential.type === "token") {
    const tenant = await tenantStanding(env.DB, principal.tenantId);
    const role = roleOf({ credential: "token", groups: principal.person?.groups ?? [] }, settingsOf(tenant?.settings).roles);
    return { valid: principal.credential.expiresAt > now && tenant?.disabled === false, role };
  }
  const row = await keyValidity(env.DB, principal.keyId);
  if (!row) return { valid: false, role: null };
  const valid = row.revokedAt === null && (row.expiresAt === null || row.expiresAt > now) && !row.disabled;
  return { valid, role: roleOf({ credential: "key", kind: row.kind, stored: row.role }, settingsOf(row.settings).roles) };
}

function settingsOf(text: string | undefined): TenantSettings {
  try {
    const value: unknown = JSON.parse(text ?? "{}");
    return typeof value === "object" && value !== null ? (value as TenantSettings) : {};
  } catch {
    return {};
  }
}
