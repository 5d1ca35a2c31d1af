// The tenant's own settings, for its admins (decision 0028): who is which role (settings.roles) and
// which operations need a second person (settings.fourEyes), which modes are forbidden (settings.modes), beside
// the settings the operator may set too (deadlines, relaying "always", whether an agent that runs a tool
// call unasked stops its session). Limits stay the operator's (PATCH /v1/tenants/{id}): they bound
// what the tenant costs everyone else. An admin maps groups at most to their own role.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { tenantById, updateTenant } from "../../db/queries/tenants";
import { ROLES, type Role } from "../../core/principal";
import { mayGrant } from "../../protocol/people/roles";
import { UNASKED_RUNS } from "../../protocol/unasked-runs";
import { ApiError, errorBody } from "../http-error";
import type { TenantSettings } from "../../core/principal";
import { defaultSettings, effectiveSettings, gatewayPermissionDeadlineMs } from "../../protocol/effective-settings";
import type { ApiEffectiveSettings, ApiFieldIssue, ApiSettingValues } from "../../protocol/rest-api";
import type { Context } from "hono";
import { DEFAULT_LIMITS, limitsOf } from "../../protocol/tenant-limits";
import { may } from "../../protocol/people/roles";
import { requireRole } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { errorResponses, validationHook } from "./openapi";
import { json } from "./pagination";

export const RolesSettingsSchema = z
  .object({
    /** Group (as the token's groups claim names it) → role; a person in several groups gets the highest. */
    groups: z.record(z.string().min(1).max(200), z.enum(ROLES)).optional(),
    /** The role of a signed-in person in no mapped group (default observer). */
    defaultPersonRole: z.enum(ROLES).optional(),
  })
  .strict()
  .refine((r) => Object.keys(r.groups ?? {}).length <= 200, "at most 200 groups")
  .openapi("RoleSettings");

const FourEyesOperationSchema = z
  .object({
    kind: z.string().min(1).max(40).optional(),
    program: z.string().min(1).max(200).optional(),
    prefix: z.array(z.string().min(1).max(200)).min(1).max(16).optional(),
    path: z.string().min(2).max(500).startsWith("/").optional(),
    require: z.enum(["not_prompter", "two_approvals"]).optional(),
  })
  .strict()
  .refine((o) => o.kind !== undefined || o.program !== undefined || o.prefix !== undefined || o.path !== undefined, {
    message: "name at least one of kind, program, prefix, path",
  });

export const FourEyesSettingsSchema = z
  .object({
    operations: z.array(FourEyesOperationSchema).max(100),
    /** Let a credential that names no person (the admin key, a key issued to nobody) approve (default false: people count). */
    keysApprove: z.boolean().optional(),
  })
  .strict()
  .openapi("FourEyesSettings");

/** Mode and configuration changes refused to everyone (decision 0041). */
export const ModeSettingsSchema = z
  .object({
    /** Modes or values refused whatever the role (compared case- and separator-folded). */
    forbid: z.array(z.string().min(1).max(200)).max(100).optional(),
    /** Refuse every change that can make the agent ask less, to everyone. */
    forbidLessOversight: z.boolean().optional(),
    /** Hold every governed change until a second person approves it (decision 0061). */
    fourEyes: z.boolean().optional(),
  })
  .strict()
  .openapi("ModeSettings");

/** The settings both an admin (here) and the operator (PATCH /v1/tenants/{id}) may change. */
export const SHARED_SETTINGS = {
  permissionDeadlineMs: z
    .number()
    .int()
    .min(1000)
    .max(7 * 24 * 3600 * 1000)
    .optional(),
  relayAlwaysAsMade: z.boolean().optional(),
  /** A tool call the agent ran that nobody was asked about: stop the session until an approver resumes it (default), or only tell (decision 0056). */
  unaskedRuns: z.enum(UNASKED_RUNS).optional(),
  notifyAfterMs: z
    .number()
    .int()
    .min(0)
    .max(24 * 3600 * 1000)
    .optional(),
};

/** What an admin may change of the tenant's settings. */
const TenantOwnSettingsSchema = z
  .object({
    roles: RolesSettingsSchema.optional(),
    fourEyes: FourEyesSettingsSchema.optional(),
    modes: ModeSettingsSchema.optional(),
    ...SHARED_SETTINGS,
  })
  .strict()
  .openapi("TenantOwnSettings");

const FieldIssuesErrorSchema = z
  .object({
    error: z.object({ code: z.string(), message: z.string(), issues: z.array(z.object({ path: z.string(), message: z.string() })) }),
  })
  .openapi("FieldIssuesError");

/**
 * A refused change says what was wrong field by field (`error.issues`, every one, with its path), so
 * the console shows each beside its field; `error.message` is the summary every route gives.
 */
function fieldIssuesHook(result: Parameters<typeof validationHook>[0], c: Context) {
  if (result.success) return;
  const issues: ApiFieldIssue[] = result.error.issues.map((i) => ({ path: i.path.map(String).join("."), message: i.message }));
  const body = errorBody("invalid_request", messageOf(issues));
  return c.json({ error: { ...body.error, issues } }, 400);
}

function messageOf(issues: ApiFieldIssue[]): string {
  return `Invalid request: ${issues
    .slice(0, 5)
    .map((i) => `${i.path || "body"}: ${i.message}`)
    .join("; ")}`;
}

export const settingsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

settingsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/tenant/settings",
    tags: ["settings"],
    summary: "The tenant's settings (roles, four eyes, deadlines; limits are the operator's)",
    middleware: [requireRole("administer")] as const,
    responses: { 200: json(z.object({ settings: z.record(z.string(), z.unknown()) }), "The settings"), ...errorResponses },
  }),
  async (c) => {
    const tenant = await tenantById(c.env.DB, c.get("principal").tenantId);
    if (!tenant) throw ApiError.notFound("Tenant");
    return c.json({ settings: JSON.parse(tenant.settings) as Record<string, unknown> }, 200);
  },
);

/** The keys of the settings GET /v1/tenant/settings/effective explains, in the order the console shows them. */
const EXPLAINED: (keyof ApiSettingValues)[] = [
  "roles",
  "fourEyes",
  "modes",
  "permissionDeadlineMs",
  "relayAlwaysAsMade",
  "unaskedRuns",
  "notifyAfterMs",
];

// Readable by every role (decision 0062): these settings decide what each person meets (who may
// answer, how long a request waits, whether a session stops), and none of them is a secret.
settingsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/tenant/settings/effective",
    tags: ["settings"],
    summary: "The settings as they apply (each set one, else its default), the defaults, and the operator's limits",
    middleware: [requireRole("watch")] as const,
    responses: { 200: json(z.object({}).passthrough().openapi("EffectiveSettings"), "The settings as they apply"), ...errorResponses },
  }),
  async (c) => {
    const principal = c.get("principal");
    const tenant = await tenantById(c.env.DB, principal.tenantId);
    if (!tenant) throw ApiError.notFound("Tenant");
    // SAFETY: written only through the settings schemas (here and PATCH /v1/tenants/{id}); effectiveSettings re-checks each value's type.
    const stored = JSON.parse(tenant.settings) as TenantSettings;
    const defaults = defaultSettings(gatewayPermissionDeadlineMs(c.env.PERMISSION_DEADLINE_MS));
    const body: ApiEffectiveSettings = {
      settings: effectiveSettings(stored, defaults),
      defaults,
      set: EXPLAINED.filter((k) => Object.hasOwn(stored, k)),
      limits: limitsOf(stored.limits),
      defaultLimits: { ...DEFAULT_LIMITS },
      mayChange: may(principal.role, "administer"),
    };
    return c.json(body, 200);
  },
);

settingsApi.openapi(
  createRoute({
    method: "patch",
    path: "/v1/tenant/settings",
    tags: ["settings"],
    summary: "Change the tenant's roles, four-eyes operations or deadlines (each given field replaces the stored one)",
    middleware: [requireRole("administer")] as const,
    request: { body: { content: { "application/json": { schema: TenantOwnSettingsSchema } }, required: true } },
    responses: {
      200: json(z.object({ settings: z.record(z.string(), z.unknown()) }), "The settings"),
      ...errorResponses,
      400: json(FieldIssuesErrorSchema, "Invalid settings: each issue with the path of its field"),
    },
  }),
  async (c) => {
    const principal = c.get("principal");
    const body = c.req.valid("json");
    const granted: Role[] = [
      ...Object.values(body.roles?.groups ?? {}),
      ...(body.roles?.defaultPersonRole ? [body.roles.defaultPersonRole] : []),
    ];
    const above = granted.find((r) => !mayGrant(principal.role, r));
    if (above) throw ApiError.forbidden(`You may not map people to the role ${above}: it is above your own (${principal.role ?? "none"})`);
    const tenant = await tenantById(c.env.DB, principal.tenantId);
    if (!tenant) throw ApiError.notFound("Tenant");
    const settings = { ...(JSON.parse(tenant.settings) as Record<string, unknown>), ...body };
    await updateTenant(c.env.DB, tenant.id, { name: tenant.name, disabled: tenant.disabled, settings: JSON.stringify(settings) });
    return c.json({ settings }, 200);
  },
  fieldIssuesHook,
);
