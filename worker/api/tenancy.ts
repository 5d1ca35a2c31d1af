// Tenants (operator), keys and agents (tenant admin). Every query is scoped by the caller's tenant;
// another tenant's object is "not found", never "forbidden", so ids cannot be probed.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { constantTimeEqual, type Principal } from "../auth";
import { ApiError } from "../http-error";
import { requireKey } from "../middleware/require-key";
import { closeAgentConnections } from "../revocation";
import { pageOf, pageParams } from "../routes/pagination";
import type { AppEnv } from "../types";
import { randomId, sha256Hex } from "../../protocol/ids";
import { AGENT_NAME } from "../../protocol/names";
import { conflictResponse, errorResponses, validationHook } from "./openapi";

const errors = { ...errorResponses, ...conflictResponse };

const json = <T extends z.ZodType>(schema: T, description: string) => ({ description, content: { "application/json": { schema } } });
const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });

// ── schemas ─────────────────────────────────────────────────────────────────────────────────────
const SettingsSchema = z
  .object({
    permissionDeadlineMs: z
      .number()
      .int()
      .min(1000)
      .max(7 * 24 * 3600 * 1000)
      .optional(),
    relayAlwaysAsMade: z.boolean().optional(),
    notifyAfterMs: z
      .number()
      .int()
      .min(0)
      .max(24 * 3600 * 1000)
      .optional(),
  })
  .strict()
  .openapi("TenantSettings");
const TenantSchema = z
  .object({ id: z.string(), slug: z.string(), name: z.string(), disabled: z.boolean(), settings: SettingsSchema, createdAt: z.number() })
  .openapi("Tenant");
const KeyKind = z.enum(["client", "agent", "admin"]);
const KeySchema = z
  .object({
    id: z.string(),
    prefix: z.string(),
    kind: KeyKind,
    label: z.string().nullable(),
    agent: z.string().nullable(),
    expiresAt: z.number().nullable(),
    createdAt: z.number(),
    lastUsedAt: z.number().nullable(),
    revokedAt: z.number().nullable(),
  })
  .openapi("ApiKey");
const AgentSchema = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    mode: z.enum(["dial_in", "dial_out"]),
    url: z.string().nullable(),
    /** Header names only: values are write-only. */
    headerNames: z.array(z.string()),
    isDefault: z.boolean(),
    createdAt: z.number(),
    updatedAt: z.number(),
  })
  .openapi("Agent");
const AgentName = z.string().regex(AGENT_NAME, "letters, digits, '.', '-', '_'; 1–64 characters");
const AgentUrl = z
  .string()
  .url()
  .refine((u) => /^(https?|wss?):\/\//.test(u), "an http(s) or ws(s) URL");
const Headers = z.record(z.string().regex(/^[A-Za-z0-9-]{1,64}$/), z.string().max(4096));

// ── operator: tenants ───────────────────────────────────────────────────────────────────────────
const requireOperator = createMiddleware<AppEnv>(async function requireOperator(c, next) {
  const expected = c.env.GATEWAY_ADMIN_TOKEN;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header("Authorization") ?? "");
  if (!expected || !match?.[1] || !constantTimeEqual(await sha256Hex(match[1]), await sha256Hex(expected))) {
    throw ApiError.unauthorized("Operator endpoints need Authorization: Bearer $GATEWAY_ADMIN_TOKEN");
  }
  await next();
});

type TenantRow = { id: string; slug: string; name: string; disabled: number; settings: string; created_at: number };
const tenantJson = (r: TenantRow) => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  disabled: r.disabled === 1,
  settings: JSON.parse(r.settings) as z.infer<typeof SettingsSchema>,
  createdAt: r.created_at,
});

export const tenancyApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

tenancyApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/tenants",
    tags: ["operator"],
    summary: "Create a tenant and its first admin key (shown once)",
    middleware: [requireOperator] as const,
    request: {
      body: {
        content: {
          "application/json": {
            schema: z.object({ slug: z.string().regex(/^[a-z0-9][a-z0-9-]{1,62}$/), name: z.string().min(1).max(200) }),
          },
        },
        required: true,
      },
    },
    responses: {
      201: json(
        z.object({
          tenant: TenantSchema,
          adminKey: z.object({ id: z.string(), prefix: z.string(), kind: z.literal("admin"), key: z.string() }),
        }),
        "The tenant",
      ),
      ...errors,
    },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const id = randomId("t");
    const taken = await c.env.DB.prepare("SELECT 1 FROM tenants WHERE slug = ?").bind(body.slug).first();
    if (taken) throw new ApiError(409, "conflict", `A tenant with slug "${body.slug}" exists`);
    await c.env.DB.prepare("INSERT INTO tenants (id, slug, name) VALUES (?, ?, ?)").bind(id, body.slug, body.name).run();
    const key = await createKey(c.env.DB, id, { kind: "admin", label: "admin" });
    const row = await c.env.DB.prepare("SELECT * FROM tenants WHERE id = ?").bind(id).first<TenantRow>();
    if (!row) throw new Error("tenant vanished");
    return c.json({ tenant: tenantJson(row), adminKey: { id: key.id, prefix: key.prefix, kind: "admin" as const, key: key.key } }, 201);
  },
);

tenancyApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/tenants",
    tags: ["operator"],
    summary: "List tenants",
    middleware: [requireOperator] as const,
    request: { query: z.object({ cursor: z.string().optional(), limit: z.string().optional() }) },
    responses: { 200: json(page(TenantSchema), "A page of tenants"), ...errors },
  }),
  async (c) => {
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const { results } = await c.env.DB.prepare("SELECT * FROM tenants WHERE (?1 IS NULL OR id > ?1) ORDER BY id LIMIT ?2")
      .bind(cursor, limit + 1)
      .all<TenantRow>();
    return c.json(
      pageOf(results, limit, (r) => r.id, tenantJson),
      200,
    );
  },
);

tenancyApi.openapi(
  createRoute({
    method: "patch",
    path: "/v1/tenants/{id}",
    tags: ["operator"],
    summary: "Rename, disable (closes its connections) or change a tenant's settings",
    middleware: [requireOperator] as const,
    request: {
      params: z.object({ id: z.string() }),
      body: {
        content: {
          "application/json": {
            schema: z.object({
              name: z.string().min(1).max(200).optional(),
              disabled: z.boolean().optional(),
              settings: SettingsSchema.optional(),
            }),
          },
        },
        required: true,
      },
    },
    responses: { 200: json(z.object({ tenant: TenantSchema }), "The tenant"), ...errors },
  }),
  async (c) => {
    const id = c.req.valid("param").id;
    const body = c.req.valid("json");
    const row = await c.env.DB.prepare("SELECT * FROM tenants WHERE id = ?").bind(id).first<TenantRow>();
    if (!row) throw ApiError.notFound("Tenant");
    const settings = body.settings ? { ...(JSON.parse(row.settings) as object), ...body.settings } : JSON.parse(row.settings);
    await c.env.DB.prepare("UPDATE tenants SET name = ?, disabled = ?, settings = ? WHERE id = ?")
      .bind(body.name ?? row.name, body.disabled === undefined ? row.disabled : body.disabled ? 1 : 0, JSON.stringify(settings), id)
      .run();
    if (body.disabled === true) await closeAgentConnections(c.env, id, null, "the tenant was disabled");
    const updated = await c.env.DB.prepare("SELECT * FROM tenants WHERE id = ?").bind(id).first<TenantRow>();
    if (!updated) throw ApiError.notFound("Tenant");
    return c.json({ tenant: tenantJson(updated) }, 200);
  },
);

// ── tenant admin: keys ─────────────────────────────────────────────────────────────────────────
type KeyRow = {
  id: string;
  prefix: string;
  kind: "client" | "agent" | "admin";
  label: string | null;
  agent: string | null;
  expires_at: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
};
const keyJson = (r: KeyRow) => ({
  id: r.id,
  prefix: r.prefix,
  kind: r.kind,
  label: r.label,
  agent: r.agent,
  expiresAt: r.expires_at,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  revokedAt: r.revoked_at,
});

async function createKey(
  db: D1Database,
  tenantId: string,
  k: { kind: "client" | "agent" | "admin"; label?: string | null; agent?: string | null; expiresAt?: number | null },
) {
  const key = randomId(`acp_${k.kind}`, 40);
  const id = randomId("key");
  const prefix = key.slice(0, 16);
  await db
    .prepare("INSERT INTO api_keys (id, tenant_id, kind, label, agent, prefix, hash, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    .bind(id, tenantId, k.kind, k.label ?? null, k.agent ?? null, prefix, await sha256Hex(key), k.expiresAt ?? null)
    .run();
  return { id, prefix, key };
}

tenancyApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/keys",
    tags: ["keys"],
    summary: "Create a key (the secret is shown once)",
    middleware: [requireKey("admin")] as const,
    request: {
      body: {
        content: {
          "application/json": {
            schema: z.object({
              kind: KeyKind,
              label: z.string().min(1).max(200).optional(),
              agent: AgentName.optional(),
              expiresAt: z.number().int().positive().optional(),
            }),
          },
        },
        required: true,
      },
    },
    responses: {
      201: json(
        KeySchema.omit({ createdAt: true, lastUsedAt: true, revokedAt: true }).extend({ key: z.string() }),
        "The key, with its secret",
      ),
      ...errors,
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const body = c.req.valid("json");
    if (body.agent !== undefined && body.kind !== "agent") throw ApiError.badRequest("agent is only for agent keys");
    const created = await createKey(c.env.DB, tenantId, body);
    return c.json(
      {
        id: created.id,
        prefix: created.prefix,
        kind: body.kind,
        label: body.label ?? null,
        agent: body.agent ?? null,
        expiresAt: body.expiresAt ?? null,
        key: created.key,
      },
      201,
    );
  },
);

tenancyApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/keys",
    tags: ["keys"],
    summary: "The tenant's keys (never their secrets)",
    middleware: [requireKey("admin")] as const,
    request: { query: z.object({ cursor: z.string().optional(), limit: z.string().optional() }) },
    responses: { 200: json(page(KeySchema), "A page of keys"), ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const { results } = await c.env.DB.prepare(
      "SELECT id, prefix, kind, label, agent, expires_at, created_at, last_used_at, revoked_at FROM api_keys WHERE tenant_id = ?1 AND (?2 IS NULL OR id > ?2) ORDER BY id LIMIT ?3",
    )
      .bind(tenantId, cursor, limit + 1)
      .all<KeyRow>();
    return c.json(
      pageOf(results, limit, (r) => r.id, keyJson),
      200,
    );
  },
);

tenancyApi.openapi(
  createRoute({
    method: "delete",
    path: "/v1/keys/{id}",
    tags: ["keys"],
    summary: "Revoke a key; its live connections close within seconds",
    middleware: [requireKey("admin")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: { 204: { description: "Revoked" }, ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const id = c.req.valid("param").id;
    const result = await c.env.DB.prepare("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE tenant_id = ? AND id = ?")
      .bind(Date.now(), tenantId, id)
      .run();
    if (result.meta.changes === 0) throw ApiError.notFound("Key");
    await closeAgentConnections(c.env, tenantId, id, "the agent key was revoked");
    return c.body(null, 204);
  },
);

// ── tenant admin: agents ───────────────────────────────────────────────────────────────────────
type AgentRow = {
  name: string;
  description: string | null;
  mode: "dial_in" | "dial_out";
  url: string | null;
  headers: string | null;
  is_default: number;
  created_at: number;
  updated_at: number;
};
const agentJson = (r: AgentRow) => ({
  name: r.name,
  description: r.description,
  mode: r.mode,
  url: r.url,
  headerNames: r.headers ? Object.keys(JSON.parse(r.headers) as object) : [],
  isDefault: r.is_default === 1,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
const agentFields = {
  description: z.string().max(1000).optional(),
  mode: z.enum(["dial_in", "dial_out"]).optional(),
  url: AgentUrl.optional(),
  headers: Headers.optional(),
  isDefault: z.boolean().optional(),
};

async function findAgent(db: D1Database, tenantId: string, name: string): Promise<AgentRow> {
  const row = await db.prepare("SELECT * FROM agents WHERE tenant_id = ? AND name = ?").bind(tenantId, name).first<AgentRow>();
  if (!row) throw ApiError.notFound("Agent");
  return row;
}

async function saveAgent(
  db: D1Database,
  principal: Principal,
  name: string,
  next: Omit<AgentRow, "created_at" | "updated_at" | "name">,
  insert: boolean,
) {
  if (next.mode === "dial_out" && !next.url) throw ApiError.badRequest("a dial_out agent needs the url of its ACP WebSocket endpoint");
  const statements = [];
  if (next.is_default)
    statements.push(db.prepare("UPDATE agents SET is_default = 0 WHERE tenant_id = ? AND name != ?").bind(principal.tenantId, name));
  statements.push(
    insert
      ? db
          .prepare("INSERT INTO agents (tenant_id, name, description, mode, url, headers, is_default) VALUES (?, ?, ?, ?, ?, ?, ?)")
          .bind(principal.tenantId, name, next.description, next.mode, next.url, next.headers, next.is_default)
      : db
          .prepare(
            "UPDATE agents SET description = ?, mode = ?, url = ?, headers = ?, is_default = ?, updated_at = ? WHERE tenant_id = ? AND name = ?",
          )
          .bind(next.description, next.mode, next.url, next.headers, next.is_default, Date.now(), principal.tenantId, name),
  );
  await db.batch(statements);
  return findAgent(db, principal.tenantId, name);
}

tenancyApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/agents",
    tags: ["agents"],
    summary: "Register an agent: dial_in (it connects to the gateway) or dial_out (the gateway connects to its url)",
    middleware: [requireKey("admin")] as const,
    request: { body: { content: { "application/json": { schema: z.object({ name: AgentName, ...agentFields }) } }, required: true } },
    responses: { 201: json(z.object({ agent: AgentSchema }), "The agent"), ...errors },
  }),
  async (c) => {
    const principal = c.get("principal");
    const body = c.req.valid("json");
    const exists = await c.env.DB.prepare("SELECT 1 FROM agents WHERE tenant_id = ? AND name = ?")
      .bind(principal.tenantId, body.name)
      .first();
    if (exists) throw new ApiError(409, "conflict", `An agent named "${body.name}" exists`);
    const row = await saveAgent(
      c.env.DB,
      principal,
      body.name,
      {
        description: body.description ?? null,
        mode: body.mode ?? "dial_in",
        url: body.url ?? null,
        headers: body.headers ? JSON.stringify(body.headers) : null,
        is_default: body.isDefault ? 1 : 0,
      },
      true,
    );
    return c.json({ agent: agentJson(row) }, 201);
  },
);

tenancyApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/agents",
    tags: ["agents"],
    summary: "The tenant's agents (header values are never returned)",
    middleware: [requireKey("admin")] as const,
    request: { query: z.object({ cursor: z.string().optional(), limit: z.string().optional() }) },
    responses: { 200: json(page(AgentSchema), "A page of agents"), ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const { results } = await c.env.DB.prepare(
      "SELECT * FROM agents WHERE tenant_id = ?1 AND (?2 IS NULL OR name > ?2) ORDER BY name LIMIT ?3",
    )
      .bind(tenantId, cursor, limit + 1)
      .all<AgentRow>();
    return c.json(
      pageOf(results, limit, (r) => r.name, agentJson),
      200,
    );
  },
);

tenancyApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/agents/{name}",
    tags: ["agents"],
    summary: "One agent",
    middleware: [requireKey("admin")] as const,
    request: { params: z.object({ name: z.string() }) },
    responses: { 200: json(z.object({ agent: AgentSchema }), "The agent"), ...errors },
  }),
  async (c) => c.json({ agent: agentJson(await findAgent(c.env.DB, c.get("principal").tenantId, c.req.valid("param").name)) }, 200),
);

tenancyApi.openapi(
  createRoute({
    method: "patch",
    path: "/v1/agents/{name}",
    tags: ["agents"],
    summary: "Change an agent",
    middleware: [requireKey("admin")] as const,
    request: {
      params: z.object({ name: z.string() }),
      body: { content: { "application/json": { schema: z.object(agentFields) } }, required: true },
    },
    responses: { 200: json(z.object({ agent: AgentSchema }), "The agent"), ...errors },
  }),
  async (c) => {
    const principal = c.get("principal");
    const name = c.req.valid("param").name;
    const body = c.req.valid("json");
    const row = await findAgent(c.env.DB, principal.tenantId, name);
    const updated = await saveAgent(
      c.env.DB,
      principal,
      name,
      {
        description: body.description ?? row.description,
        mode: body.mode ?? row.mode,
        url: body.url ?? row.url,
        headers: body.headers ? JSON.stringify(body.headers) : row.headers,
        is_default: body.isDefault === undefined ? row.is_default : body.isDefault ? 1 : 0,
      },
      false,
    );
    return c.json({ agent: agentJson(updated) }, 200);
  },
);

tenancyApi.openapi(
  createRoute({
    method: "delete",
    path: "/v1/agents/{name}",
    tags: ["agents"],
    summary: "Remove an agent registration (its sessions stay readable)",
    middleware: [requireKey("admin")] as const,
    request: { params: z.object({ name: z.string() }) },
    responses: { 204: { description: "Removed" }, ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const name = c.req.valid("param").name;
    await findAgent(c.env.DB, tenantId, name);
    await c.env.AGENTS.get(c.env.AGENTS.idFromName(`${tenantId}/${name}`)).closeConnections(null, "the agent was removed");
    await c.env.DB.prepare("DELETE FROM agents WHERE tenant_id = ? AND name = ?").bind(tenantId, name).run();
    return c.body(null, 204);
  },
);
