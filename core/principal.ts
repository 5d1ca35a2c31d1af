// Who is calling, once the edge has authenticated a request (worker/auth.ts): the tenant, the key
// or the person's token, the person when one is known, and the tenant's settings. It travels with every request the edge hands on, so every layer below
// the edge reads the same shape.

/** What a key is for: a client's editor or page, an agent, or a tenant's administration. */
export type KeyKind = "client" | "agent" | "admin";

/** What a person may do in a tenant (decision 0028), least first; each role may do all that the ones before it may. */
export const ROLES = ["observer", "member", "approver", "admin", "owner"] as const;
export type Role = (typeof ROLES)[number];

/** The tenant's mapping from a person's groups to roles (settings.roles; protocol/people/roles.ts reads it). */
export interface RoleSettings {
  /** Group name (as the token's groups claim says it) → role; a person in several gets the highest. */
  groups?: Record<string, Role>;
  /** The role of a signed-in person in no mapped group (default: observer). */
  defaultPersonRole?: Role;
}

/** Operations that need a second person (settings.fourEyes; protocol/people/four-eyes.ts reads it). */
export interface FourEyesSettings {
  operations: FourEyesOperation[];
  /**
   * Let a credential that names no person (the admin key, a key issued to nobody) approve what needs
   * a second person (decision 0041; default false: four eyes counts people, not credentials).
   */
  keysApprove?: boolean;
}

/** Mode and configuration changes the tenant forbids (settings.modes; protocol/people/modes.ts, decision 0041). */
export interface ModeSettings {
  /** Modes or values refused to everyone, whatever their role (compared case- and separator-folded). */
  forbid?: string[];
  /** Refuse every change that can make the agent ask less (every governed mode or value), to everyone. */
  forbidLessOversight?: boolean;
  /** Hold every governed change an approver proposes until a second person approves it (decision 0061). */
  fourEyes?: boolean;
}

/** One operation a second person must approve: every field given must match (kind, program, argv prefix, path glob). */
export interface FourEyesOperation {
  /** The tool call's kind (execute, edit, delete…); omitted: execute when a program or prefix is named, else any. */
  kind?: string;
  /** The program a command runs (its basename: `rm`, `git`). */
  program?: string;
  /** The command's first words, as argv after the shell parsed it: `["git", "push"]`. */
  prefix?: string[];
  /** A gitignore-style glob over the call's resolved paths: `/srv/prod/**`. */
  path?: string;
  /** `not_prompter` (default): anyone but the person who prompted the turn approves; `two_approvals`: two distinct people. */
  require?: "not_prompter" | "two_approvals";
}

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
  /** Roles of signed-in people from their groups (decision 0028). */
  roles?: RoleSettings;
  /** Operations that need a second person (decision 0028). */
  fourEyes?: FourEyesSettings;
  /** Modes and configuration values the tenant forbids (decision 0041). */
  modes?: ModeSettings;
  /** An agent that runs a tool call nobody was asked about: `stop` the session (default) or only `tell` (decision 0056). */
  unaskedRuns?: "stop" | "tell";
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
  /** A person's token acts as a client key; what it may do is its role. */
  kind: KeyKind;
  credential: Credential;
  /** Who is behind the key: the actor recorded on decisions (a person's display name when there is one). */
  label: string | null;
  /** The person behind the call, when known: a token's subject, or the user a key was issued to. */
  person: Person | null;
  /**
   * What the caller may do (decision 0028): the key's stored role, else its kind's default (an admin
   * key `owner`, a client key `approver`); a person's token: their groups through settings.roles,
   * else settings.roles.defaultPersonRole, else `observer`. Null for an agent key.
   */
  role: Role | null;
  /** For agent keys: the one agent name the key may dial in as, or null for any. */
  agent: string | null;
  settings: TenantSettings;
  /** When the key was last used (ms), to refresh api_keys.last_used_at at most once a minute. */
  lastUsedAt: number | null;
}
