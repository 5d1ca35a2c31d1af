// Closing live connections when their credentials stop being valid.
// Agent connections live in AgentObjects: the API tells every agent object of the tenant at once.
// Client connections live in edge Worker invocations, which nothing can address: each one re-checks
// its own key every KEY_RECHECK_MS (client-connection.ts) and closes itself with 4401.

import { agentNames } from "../db/queries/agents";
import { keyValidity } from "../db/queries/keys";
import type { Env } from "../core/env";

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

/** Closes the agent connections that use this key (keyId null: every agent connection of the tenant). */
export async function closeAgentConnections(env: Env, tenantId: string, keyId: string | null, reason: string): Promise<void> {
  const names = await agentNames(env.DB, tenantId);
  await Promise.all(names.map((name) => env.AGENTS.get(env.AGENTS.idFromName(`${tenantId}/${name}`)).closeConnections(keyId, reason)));
}

/** Whether a key is still good: not revoked, not expired, its tenant not disabled. */
export async function keyStillValid(env: Env, keyId: string, now = Date.now()): Promise<boolean> {
  const row = await keyValidity(env.DB, keyId);
  return row !== undefined && row.revokedAt === null && (row.expiresAt === null || row.expiresAt > now) && !row.disabled;
}
