// Who is calling, once the edge has authenticated a request (worker/auth.ts): the tenant, the key
// or the person's token, the person when one is known, and the tenant's settings. It travels with every request the edge hands on, so every layer below
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
  /**
   * Legacy: accept an API key as the WebSocket subprotocol `acp.bearer.<KEY>` (off by default; browsers
   * get a single-use ticket from POST /v1/tickets and offer `acp.ticket.<TICKET>` instead).
   */
  legacyBearerSubprotocol?: boolean;
}

/**
 * A person, as the tenant's identity provider names them (decision 0025): the verified token's
 * issuer and subject are who they are; the name and groups are what the token says of them. A key
 * issued to one person (`POST /v1/keys {user}`) names them with the issuer "key".
 */
export interface Person {
  issuer: string;
  subject: string;
  /** What people read: the token's name (or email) claim, else the subject. */
  name: string;
  /** The token's groups claim (empty when the tenant names none or the token has none); roles map from these later. */
  groups: string[];
}

/** How the caller proved who they are: an API key, a provider's token (OIDC or Cloudflare Access), or a ticket redeemed for either. */
type Credential =
  | { type: "key" }
  | { type: "token"; via: "oidc" | "access"; /** the token's exp, in ms: a connection opened with it closes then */ expiresAt: number };

export interface Principal {
  tenantId: string;
  tenantSlug: string;
  /**
   * The key's id; for a person signed in with a token, `person:<hash of tenant, issuer, subject>`, so
   * what is counted per key (connections, REST rate) is counted per person.
   */
  keyId: string;
  /** A person's token acts as a client key (roles refine this later). */
  kind: KeyKind;
  credential: Credential;
  /** Who is behind the key: the actor recorded on decisions (a person's display name when there is one). */
  label: string | null;
  /** The person behind the call, when known: a token's subject, or the user a key was issued to. */
  person: Person | null;
  /** The role stored with the key or mapped from the person's groups (not enforced yet: issue 24's roles). */
  role: string | null;
  /** For agent keys: the one agent name the key may dial in as, or null for any. */
  agent: string | null;
  settings: TenantSettings;
  /** When the key was last used (ms), to refresh api_keys.last_used_at at most once a minute. */
  lastUsedAt: number | null;
}
