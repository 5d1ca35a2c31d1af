// Who is calling, once the edge has authenticated a request (worker/auth.ts): the tenant, the key
// and the tenant's settings. It travels with every request the edge hands on, so every layer below
// the edge reads the same shape.

/** What a key is for: a client's editor or page, an agent, or a tenant's administration. */
export type KeyKind = "client" | "agent" | "admin";

/** A tenant's settings (tenants.settings, validated by the tenants API). */
export interface TenantSettings {
  /** Deadline of a pending permission request, in ms. */
  permissionDeadlineMs?: number;
  /** Relay a person's allow_always / reject_always to the agent as made (default: as the *_once). */
  relayAlwaysAsMade?: boolean;
  /** How long a permission request waits with nobody attached before the notification targets are told, in ms. */
  notifyAfterMs?: number;
  /** Overrides of the per-tenant limits (protocol/tenant-limits.ts `limitsOf` reads them); each omitted one is the default. */
  limits?: Record<string, unknown>;
}

export interface Principal {
  tenantId: string;
  tenantSlug: string;
  keyId: string;
  kind: KeyKind;
  /** Who is behind the key: the actor recorded on decisions. */
  label: string | null;
  /** For agent keys: the one agent name the key may dial in as, or null for any. */
  agent: string | null;
  settings: TenantSettings;
  /** When the key was last used (ms), to refresh api_keys.last_used_at at most once a minute. */
  lastUsedAt: number | null;
}
