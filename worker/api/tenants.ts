// Tenants, for the operator (GATEWAY_ADMIN_TOKEN): create (with a first admin key), list, change.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { insertKey } from "../../db/queries/keys";
import { insertTenant, tenantById, tenantBySlug, tenantsPage, updateTenant } from "../../db/queries/tenants";
import type { Tenant } from "../../db/schema";
import { mintKey } from "../../protocol/api-keys";
import { randomId } from "../../protocol/ids";
import { HARD_LIMITS } from "../../protocol/tenant-limits";
import { ApiError } from "../http-error";
import { requireOperator } from "../middleware/require-operator";
import { closeAgentConnections } from "../revocation";
import type { AppEnv } from "../types";
import { conflictResponse, errorResponses, validationHook } from "./openapi";
import { FourEyesSettingsSchema, ModeSettingsSchema, RolesSettingsSchema, SHARED_SETTINGS } from "./settings";
import { PageQuery, json, pageOf, pageParams, pageSchema } from "./pagination";

const errors = { ...errorResponses, ...conflictResponse };

/** Overrides of the per-tenant limits (protocol/tenant-limits.ts): each a positive whole number. */
const LimitsSchema = z
  .object({
    messagesPerSecondPerConnection: z.number().int().min(1).max(100_000).optional(),
    messagesPerSecondPerAgentConnection: z.number().int().min(1).max(100_000).optional(),
    heldBytesPerAgentConnection: z
      .number()
      .int()
      .min(64 * 1024)
      .max(64 * 1024 * 1024)
      .optional(),
    messagesPerSecondPerTenant: z.number().int().min(1).max(1_000_000).optional(),
    connectionsPerKey: z.number().int().min(1).max(100_000).optional(),
    liveSessionsPerTenant: z.number().int().min(1).max(1_000_000).optional(),
    pendingPermissionsPerSession: z.number().int().min(1).max(10_000).optional(),
    outsideTurnAuditsPerMinute: z.number().int().min(1).max(10_000).optional(),
    auditBytesPerDay: z
      .number()
      .int()
      .min(1024)
      .max(1024 * 1024 * 1024)
      .optional(),
    rulesPerTenant: z.number().int().min(1).max(HARD_LIMITS.rulesPerTenant).optional(),
    ruleBytesPerTenant: z.number().int().min(1024).max(HARD_LIMITS.ruleBytesPerTenant).optional(),
    notificationTargetsPerTenant: z.number().int().min(1).max(HARD_LIMITS.notificationTargetsPerTenant).optional(),
    attachedClientsPerSession: z.number().int().min(1).max(HARD_LIMITS.attachedClientsPerSession).optional(),
    turnIdleMs: z
      .number()
      .int()
      .min(1000)
      .max(7 * 24 * 3600 * 1000)
      .optional(),
  })
  .strict()
  .openapi("TenantLimits");

const SettingsSchema = z
  .object({
    ...SHARED_SETTINGS,
    /** Legacy, off by default: accept a key as the WebSocket subprotocol acp.bearer.<KEY> (browsers use tickets). */
    legacyBearerSubprotocol: z.boolean().optional(),
    limits: LimitsSchema.optional(),
    roles: RolesSettingsSchema.optional(),
    fourEyes: FourEyesSettingsSchema.optional(),
    modes: ModeSettingsSchema.optional(),
  })
  .strict()
  .openapi("TenantSettings");
type Settings = z.infer<typeof SettingsSchema>;

const TenantSchema = z
  .object({ id: z.string(), slug: z.string(), name: z.string(), disabled: z.boolean(), settings: SettingsSchema, createdAt: z.number() })
  .openapi("Tenant");

const tenantJson = (t: Tenant) => ({
  id: t.id,
  slug: t.slug,
  name: t.name,
  disabled: t.disabled,
  settings: JSON.parse(t.settings) as Settings,
  createdAt: t.createdAt,
});

export const tenantsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

tenantsApi.openapi(
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
    if (await tenantBySlug(c.env.DB, body.slug)) throw new ApiError(409, "conflict", `A tenant with slug "${body.slug}" exists`);
    const id = randomId("t");
    await insertTenant(c.env.DB, { id, slug: body.slug, name: body.name });
    const key = await mintKey("admin");
    await insertKey(c.env.DB, id, key, { kind: "admin", label: "admin", role: "owner" });
    const tenant = await tenantById(c.env.DB, id);
    if (!tenant) throw new Error("the tenant just created is missing");
    return c.json({ tenant: tenantJson(tenant), adminKey: { id: key.id, prefix: key.prefix, kind: "admin" as const, key: key.key } }, 201);
  },
);

tenantsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/tenants",
    tags: ["operator"],
    summary: "List tenants",
    middleware: [requireOperator] as const,
    request: { query: PageQuery },
    responses: { 200: json(pageSchema(TenantSchema), "A page of tenants"), ...errors },
  }),
  async (c) => {
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const rows = await tenantsPage(c.env.DB, cursor, limit);
    return c.json(
      pageOf(rows, limit, (t) => t.id, tenantJson),
      200,
    );
  },
);

tenantsApi.openapi(
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
    const tenant = await tenantById(c.env.DB, id);
    if (!tenant) throw ApiError.notFound("Tenant");
    const settings = body.settings ? { ...(JSON.parse(tenant.settings) as Settings), ...body.settings } : JSON.parse(tenant.settings);
    await updateTenant(c.env.DB, id, {
      name: body.name ?? tenant.name,
      disabled: body.disabled ?? tenant.disabled,
      settings: JSON.stringify(settings),
    });
    if (body.disabled === true) await closeAgentConnections(c.env, id, null, "the tenant was disabled");
    const updated = await tenantById(c.env.DB, id);
    if (!updated) throw ApiError.notFound("Tenant");
    return c.json({ tenant: tenantJson(updated) }, 200);
  },
);
