// The D1 schema, as code. drizzle-kit generates the SQL in db/migrations from this file
// (`npm run db:generate`); wrangler and the tests apply those migrations.
// Every tenant-owned table carries tenant_id, and every query in db/queries/ filters on it.
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const tenants = sqliteTable("tenants", {
  id: text("id").primaryKey(),
  slug: text("slug").notNull().unique(),
  name: text("name").notNull(),
  disabled: integer("disabled", { mode: "boolean" }).notNull().default(false),
  /** JSON object of tenant settings (worker/auth.ts TenantSettings; validated by the tenants API). */
  settings: text("settings").notNull().default("{}"),
  createdAt: integer("created_at")
    .notNull()
    .default(sql`(unixepoch() * 1000)`),
});

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    kind: text("kind", { enum: ["client", "agent", "admin"] }).notNull(),
    /** Who is behind the key; the actor recorded on decisions. */
    label: text("label"),
    /** For client keys issued to one person: who (their subject at the tenant's provider, or a name). */
    user: text("user"),
    /** The role the key carries (stored now, enforced with issue 24's roles). */
    role: text("role"),
    /** For agent keys: the one agent name this key may dial in as (null: any agent of the tenant). */
    agent: text("agent"),
    /** The first characters of the key, shown to identify it. */
    prefix: text("prefix").notNull(),
    /** Hex SHA-256 of the whole key. The key itself is never stored. */
    hash: text("hash").notNull(),
    createdAt: integer("created_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
    lastUsedAt: integer("last_used_at"),
    expiresAt: integer("expires_at"),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_hash").on(t.hash), index("api_keys_tenant").on(t.tenantId, t.createdAt)],
);

export const agents = sqliteTable(
  "agents",
  {
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    name: text("name").notNull(),
    description: text("description"),
    mode: text("mode", { enum: ["dial_in", "dial_out"] })
      .notNull()
      .default("dial_in"),
    url: text("url"),
    /** JSON object of header name → value, sent when dialling out. Write-only in the API. */
    headers: text("headers"),
    isDefault: integer("is_default", { mode: "boolean" }).notNull().default(false),
    /**
     * For dial_in: the agent key the name belongs to — the first key that dialled in under it, or the
     * key an admin bound it to (PUT /v1/agents/{name}/owner). Null: not yet claimed.
     */
    ownerKeyId: text("owner_key_id"),
    /**
     * The agent decides approvals itself (decision 0056): JSON of its latest tool call run without asking
     * anyone, as a session saw it ({ at, sessionId, toolCallId, kind }). Null: never seen.
     */
    decidesItself: text("decides_itself"),
    createdAt: integer("created_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
    updatedAt: integer("updated_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.name] })],
);

/** The tenant's sessions index: answers session/list and GET /v1/sessions without waking objects. */
export const sessions = sqliteTable(
  "sessions",
  {
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id").notNull(),
    agent: text("agent").notNull(),
    cwd: text("cwd").notNull(),
    title: text("title"),
    createdBy: text("created_by"),
    createdAt: integer("created_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
    updatedAt: integer("updated_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
    /** The turn as the SessionObject last published it (live-index.ts): idle, running or cancelling. */
    turnState: text("turn_state").notNull().default("idle"),
    /** How many permission requests wait on a person, as last published. */
    waiting: integer("waiting").notNull().default(0),
    /** The version of that state (live-index.ts): a write older than the one D1 holds changes nothing. */
    liveVersion: integer("live_version").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.sessionId] }), index("sessions_tenant_updated").on(t.tenantId, t.updatedAt)],
);

export type Tenant = typeof tenants.$inferSelect;
export type ApiKey = typeof apiKeys.$inferSelect;
export type AgentRow = typeof agents.$inferSelect;
export type SessionRow = typeof sessions.$inferSelect;

/** Remembered decisions: "always allow" / "always reject", per tenant, with an explicit scope. */
export const decisionRules = sqliteTable(
  "decision_rules",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    decision: text("decision", { enum: ["allow", "reject"] }).notNull(),
    /** Scope: each set field narrows the rule; none set means the whole tenant. */
    scopeProject: text("scope_project"),
    scopeUser: text("scope_user"),
    scopeAgent: text("scope_agent"),
    /** JSON of the matcher: { type: "tool" | "command" | "path" | "exact", ... } (protocol/rules/rules.ts). */
    matcher: text("matcher").notNull(),
    /** The matcher as searchable text, for `GET /v1/rules?q=`. */
    matcherText: text("matcher_text").notNull(),
    description: text("description").notNull(),
    expiresAt: integer("expires_at"),
    createdByKey: text("created_by_key"),
    createdByUser: text("created_by_user"),
    createdFromSession: text("created_from_session"),
    createdFromToolCall: text("created_from_tool_call"),
    createdAt: integer("created_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
    revokedAt: integer("revoked_at"),
    hits: integer("hits").notNull().default(0),
    lastHitAt: integer("last_hit_at"),
  },
  (t) => [index("decision_rules_tenant").on(t.tenantId, t.createdAt)],
);

/** How every permission request was resolved: by a person, a rule, a cancel, a deadline, a disconnect. */
export const decisionAudit = sqliteTable(
  "decision_audit",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    sessionId: text("session_id").notNull(),
    agent: text("agent").notNull(),
    toolCallId: text("tool_call_id"),
    kind: text("kind"),
    name: text("name"),
    /** The operation in full: the command, or the paths. */
    operation: text("operation"),
    /** `refused`: a person's answer refused by role, turn or four eyes; `approval_recorded`: the first of two approvals; `proposed`: a mode change held for a second person (decision 0061). */
    outcome: text("outcome", { enum: ["selected", "cancelled", "withdrawn", "refused", "approval_recorded", "proposed"] }).notNull(),
    optionId: text("option_id"),
    optionKind: text("option_kind"),
    decidedBy: text("decided_by", {
      enum: [
        "person",
        "link",
        "rule",
        "cancel",
        "deadline",
        "turn_end",
        "agent_disconnected",
        "agent_withdrew",
        "operation_changed",
        "agent",
      ],
    }).notNull(),
    decidedByKey: text("decided_by_key"),
    decidedByUser: text("decided_by_user"),
    /** The person who decided, as their provider names them (decision 0025): issuer and subject. */
    decidedByIssuer: text("decided_by_issuer"),
    decidedBySubject: text("decided_by_subject"),
    /** The person's role when they answered (decision 0028). */
    decidedByRole: text("decided_by_role"),
    /** The client connection they answered from (Acp-Connection-Id). */
    decidedByConnection: text("decided_by_connection"),
    /** The policy that applied: `four_eyes:not_prompter` | `four_eyes:two_approvals`. */
    policy: text("policy"),
    /** Why a refused answer was refused, or what a recorded approval waits for. */
    reason: text("reason"),
    /** Under two approvals: the earlier approval(s), JSON `[{user, role, connectionId, at}]`. */
    approvedBy: text("approved_by"),
    ruleId: text("rule_id"),
    at: integer("at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
  },
  (t) => [
    index("decision_audit_tenant").on(t.tenantId, t.at),
    index("decision_audit_person").on(t.tenantId, t.decidedByIssuer, t.decidedBySubject, t.at),
  ],
);

/**
 * The tenant's audit hash chain (decision 0024, protocol/audit-chain.ts): append-only, one link per
 * version of a decision_audit row as it was written, numbered per tenant with no gap. A row written
 * again under its id (a summarising row, its count risen) is a new link; no link is ever updated.
 */
export const auditChain = sqliteTable(
  "audit_chain",
  {
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    seq: integer("seq").notNull(),
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull(),
    /** The entry in canonical JSON, as hashed, exported as it is. */
    entry: text("entry").notNull(),
    /** SHA-256 of `entry`: what makes a retried write find its link instead of adding a second. */
    entryDigest: text("entry_digest").notNull(),
    auditId: text("audit_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.seq] }), uniqueIndex("audit_chain_entry").on(t.tenantId, t.entryDigest)],
);

/**
 * Audit entries written and waiting for their link (decision 0035): staged by each session's
 * outbox, chained by whoever chains next, oldest first (`id`), and deleted in the commit that
 * chains them. Never read by the API: the export drains it first.
 */
export const auditChainPending = sqliteTable(
  "audit_chain_pending",
  {
    id: integer("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    /** The entry in canonical JSON, as it will be hashed. */
    entry: text("entry").notNull(),
    entryDigest: text("entry_digest").notNull(),
    auditId: text("audit_id").notNull(),
  },
  (t) => [uniqueIndex("audit_chain_pending_entry").on(t.tenantId, t.entryDigest), index("audit_chain_pending_queue").on(t.tenantId, t.id)],
);

export type DecisionRuleRow = typeof decisionRules.$inferSelect;
export type DecisionAuditRow = typeof decisionAudit.$inferSelect;

/** Where a tenant's waiting permission requests are sent when nobody who could answer is attached. */
export const notificationTargets = sqliteTable(
  "notification_targets",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    /** A label people recognise ("ops pager"); named in decidedBy when its link answers. */
    name: text("name").notNull(),
    /** The webhook: https to a public host (protocol/webhook-url.ts; private hosts only with WEBHOOK_ALLOW_PRIVATE=1). */
    url: text("url").notNull(),
    /** HMAC-SHA256 key of the X-Acp-Gateway-Signature header. Kept to sign; never returned by the API. */
    secret: text("secret").notNull(),
    /** The gateway origin approval links point at (the API's origin when the target was created, unless given). */
    linkBaseUrl: text("link_base_url").notNull(),
    createdAt: integer("created_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
  },
  (t) => [index("notification_targets_tenant").on(t.tenantId, t.id)],
);

export type NotificationTargetRow = typeof notificationTargets.$inferSelect;

/**
 * A tenant's identity providers (decision 0025): OpenID Connect, and Cloudflare Access in front of the
 * gateway. A token is verified against the row of the tenant the request names. Several tenants may
 * name one (issuer, audience) until one proves it (identity_proofs, decision 0041): a claim alone
 * takes nothing from the tenant it really belongs to.
 */
export const tenantIdentity = sqliteTable(
  "tenant_identity",
  {
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    provider: text("provider", { enum: ["oidc", "access"] }).notNull(),
    issuer: text("issuer").notNull(),
    audience: text("audience").notNull(),
    /** The OAuth client id the console signs in with (null: the audience, as for an ID token's aud). */
    clientId: text("client_id"),
    jwksUrl: text("jwks_url").notNull(),
    /** The claim that names the person (default "sub"). */
    userClaim: text("user_claim").notNull().default("sub"),
    /** The claim that lists the person's groups (null: none). */
    groupsClaim: text("groups_claim"),
    /** The claim people read as the name (default "name", then "email", then the user claim). */
    nameClaim: text("name_claim"),
    updatedAt: integer("updated_at")
      .notNull()
      .default(sql`(unixepoch() * 1000)`),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.provider] }), index("tenant_identity_issuer_audience").on(t.issuer, t.audience)],
);

export type TenantIdentityRow = typeof tenantIdentity.$inferSelect;

/**
 * Which tenant proved an (issuer, audience) first (decision 0041): the first whose person signed in
 * with a token the pair's keys verified. From then on the pair is that tenant's: another tenant may
 * not name it, and a token for it is refused at any other.
 */
export const identityProofs = sqliteTable(
  "identity_proofs",
  {
    issuer: text("issuer").notNull(),
    audience: text("audience").notNull(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    provenAt: integer("proven_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.issuer, t.audience] })],
);

/**
 * Single-use tickets for a browser's WebSocket (POST /v1/tickets, decision 0025): stored hashed, each
 * redeemed by one `DELETE … RETURNING`, so exactly one upgrade gets it whichever isolate it reaches.
 */
export const tickets = sqliteTable(
  "tickets",
  {
    /** Hex SHA-256 of the ticket; the ticket itself is never stored. */
    hash: text("hash").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id),
    /** The path the ticket opens ("/acp"). */
    path: text("path").notNull(),
    /** JSON of who it was issued to (worker/tickets.ts TicketHolder). */
    holder: text("holder").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("tickets_expires").on(t.expiresAt)],
);
