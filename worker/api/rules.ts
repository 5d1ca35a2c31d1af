// Remembered decisions over REST: list, write by hand, change expiry, revoke, dry-run; and the audit.
// Writes go to D1, then to the tenant's RulesObject (`changed`), which reloads before we answer:
// when DELETE returns, the rule no longer matches anywhere.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { type DecisionRuleRow } from "../../db/schema";
import type { ApiRule } from "../../protocol/rest-api";
import { insertRule, listRules, ruleById, updateRule } from "../../db/queries/decision-rules";
import { newRuleId } from "../../durable-objects/rules/engine";
import { matcherText, parseMatcher } from "../../protocol/rules";
import { ApiError } from "../http-error";
import { requireRole } from "../middleware/require-key";
import { may } from "../../protocol/people/roles";
import { json, pageOf, pageParams, pageSchema } from "./pagination";
import type { AppEnv } from "../types";
import { errorResponses, storedLimitResponses, validationHook } from "./openapi";
import { objects } from "../../durable-objects/objects";

const MatcherSchema = z
  .union([
    z.object({ type: z.literal("tool"), kind: z.string().min(1), name: z.string().min(1).optional() }),
    z.object({ type: z.literal("command"), prefix: z.array(z.string().min(1)).min(1).max(32) }),
    z.object({ type: z.literal("argv"), argv: z.array(z.string()).min(1).max(256) }),
    z.object({
      type: z.literal("path"),
      glob: z.string().min(1).max(1024),
      kinds: z
        .array(z.enum(["read", "edit", "delete", "move"]))
        .min(1)
        .optional(),
    }),
    z.object({ type: z.literal("exact"), hash: z.string().regex(/^[0-9a-f]{64}$/) }),
  ])
  .openapi("Matcher");

const ScopeSchema = z
  .object({ project: z.string().startsWith("/").optional(), user: z.string().min(1).optional(), agent: z.string().min(1).optional() })
  .openapi("RuleScope");

const RuleSchema = z
  .object({
    id: z.string(),
    decision: z.enum(["allow", "reject"]),
    scope: ScopeSchema,
    matcher: MatcherSchema,
    description: z.string(),
    expiresAt: z.number().nullable(),
    createdBy: z.object({ key: z.string().nullable(), user: z.string().nullable() }),
    createdFrom: z.object({ sessionId: z.string().nullable(), toolCallId: z.string().nullable() }),
    createdAt: z.number(),
    revokedAt: z.number().nullable(),
    hits: z.number(),
    lastHitAt: z.number().nullable(),
  })
  .openapi("Rule");

const NewRuleSchema = z
  .object({
    decision: z.enum(["allow", "reject"]),
    scope: ScopeSchema.optional(),
    matcher: MatcherSchema,
    description: z.string().max(500).optional(),
    expiresAt: z.number().int().positive().nullable().optional(),
  })
  .openapi("NewRule");

const PermissionOptionSchema = z.object({ optionId: z.string(), name: z.string(), kind: z.string() });

const RuleTestSchema = z
  .object({
    toolCall: z.record(z.string(), z.unknown()),
    options: z.array(PermissionOptionSchema).optional(),
    cwd: z.string(),
    agent: z.string(),
    user: z.string().optional(),
  })
  .openapi("RuleTest");

/** The rule as the API shows it (protocol/rest-api.ts, which the console reads; RuleSchema documents it). */
function ruleJson(row: DecisionRuleRow): z.infer<typeof RuleSchema> {
  const scope: z.infer<typeof ScopeSchema> = {};
  if (row.scopeProject) scope.project = row.scopeProject;
  if (row.scopeUser) scope.user = row.scopeUser;
  if (row.scopeAgent) scope.agent = row.scopeAgent;
  return {
    id: row.id,
    decision: row.decision,
    scope,
    // SAFETY: matchers are validated before they are stored.
    matcher: JSON.parse(row.matcher) as z.infer<typeof MatcherSchema>,
    description: row.description,
    expiresAt: row.expiresAt,
    createdBy: { key: row.createdByKey, user: row.createdByUser },
    createdFrom: { sessionId: row.createdFromSession, toolCallId: row.createdFromToolCall },
    createdAt: row.createdAt,
    revokedAt: row.revokedAt,
    hits: row.hits,
    lastHitAt: row.lastHitAt,
  } satisfies ApiRule;
}

const errors = errorResponses;

export const rulesApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

rulesApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/rules",
    tags: ["rules"],
    summary: "The tenant's remembered decisions",
    middleware: [requireRole("watch")] as const,
    request: {
      query: z.object({
        decision: z.enum(["allow", "reject"]).optional(),
        agent: z.string().optional(),
        project: z.string().optional(),
        q: z.string().max(200).optional(),
        cursor: z.string().optional(),
        limit: z.string().optional(),
      }),
    },
    responses: {
      200: json(pageSchema(RuleSchema), "A page of rules"),
      ...errors,
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const q = c.req.valid("query");
    const { cursor, limit } = pageParams(q.cursor, q.limit);
    const rows = await listRules(c.env.DB, tenantId, { ...q, cursor, limit });
    return c.json(
      pageOf(rows, limit, (r) => r.id, ruleJson),
      200,
    );
  },
);

rulesApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/rules",
    tags: ["rules"],
    summary: "Write a rule by hand",
    middleware: [requireRole("rules")] as const,
    request: { body: { content: { "application/json": { schema: NewRuleSchema } }, required: true } },
    responses: {
      201: { description: "The rule", content: { "application/json": { schema: z.object({ rule: RuleSchema }) } } },
      ...errors,
      ...storedLimitResponses,
    },
  }),
  async (c) => {
    const principal = c.get("principal");
    const body = c.req.valid("json");
    const matcher = parseMatcher(body.matcher);
    if (!matcher) throw ApiError.badRequest("matcher is not a valid matcher");
    const row = await insertRule(c.env.DB, {
      id: newRuleId(),
      tenantId: principal.tenantId,
      decision: body.decision,
      scopeProject: body.scope?.project ?? null,
      scopeUser: body.scope?.user ?? null,
      scopeAgent: body.scope?.agent ?? null,
      matcher: JSON.stringify(matcher),
      matcherText: matcherText(matcher),
      description: body.description ?? `${body.decision === "allow" ? "Always allow" : "Always reject"} ${matcherText(matcher)}`,
      expiresAt: body.expiresAt ?? null,
      createdByKey: principal.keyId,
      createdByUser: principal.label,
      createdAt: Date.now(),
    });
    // A new allow rule only turns questions into answers (a reject beats any allow): no fence (decision 0049).
    await rulesChanged(c.env, principal.tenantId, row.decision === "allow");
    return c.json({ rule: ruleJson(row) }, 201);
  },
);

rulesApi.openapi(
  createRoute({
    method: "patch",
    path: "/v1/rules/{id}",
    tags: ["rules"],
    summary: "Change a rule's expiry",
    middleware: [requireRole("administer")] as const,
    request: {
      params: z.object({ id: z.string() }),
      body: {
        content: { "application/json": { schema: z.object({ expiresAt: z.number().int().positive().nullable() }) } },
        required: true,
      },
    },
    responses: { 200: { description: "The rule", content: { "application/json": { schema: z.object({ rule: RuleSchema }) } } }, ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const row = await updateRule(c.env.DB, tenantId, c.req.valid("param").id, { expiresAt: c.req.valid("json").expiresAt });
    if (!row) throw ApiError.notFound("Rule");
    await rulesChanged(c.env, tenantId);
    return c.json({ rule: ruleJson(row) }, 200);
  },
);

rulesApi.openapi(
  createRoute({
    method: "delete",
    path: "/v1/rules/{id}",
    tags: ["rules"],
    summary: "Revoke a rule (kept, with revokedAt, for audit)",
    description: "An admin (or owner), or the approver who made the rule (the same key, or the same signed-in person).",
    middleware: [requireRole("rules")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: { 204: { description: "Revoked" }, ...errors },
  }),
  async (c) => {
    const principal = c.get("principal");
    const id = c.req.valid("param").id;
    const rule = await ruleById(c.env.DB, principal.tenantId, id);
    if (!rule) throw ApiError.notFound("Rule");
    // Its maker only: the same key, or the same signed-in person (a person's keyId is theirs across
    // sign-ins). A label or display name is not who someone is: anyone may give a key the same one.
    const own = rule.createdByKey === principal.keyId;
    if (!may(principal.role, "administer") && !own)
      throw ApiError.forbidden("Only an admin, or the approver who made the rule (with the same key or sign-in), may revoke it");
    if (rule.revokedAt === null) await updateRule(c.env.DB, principal.tenantId, id, { revokedAt: Date.now() });
    await rulesChanged(c.env, principal.tenantId);
    return c.body(null, 204);
  },
);

rulesApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/rules/test",
    tags: ["rules"],
    summary: "Dry run: would this request be answered by a rule, which, with which option?",
    middleware: [requireRole("watch")] as const,
    request: { body: { content: { "application/json": { schema: RuleTestSchema } }, required: true } },
    responses: {
      200: {
        description: "The decision",
        content: {
          "application/json": {
            schema: z.object({
              decision: z.enum(["allow", "reject"]).nullable(),
              rule: RuleSchema.nullable(),
              option: PermissionOptionSchema.nullable(),
            }),
          },
        },
      },
      ...errors,
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const body = c.req.valid("json");
    const options = body.options ?? [
      { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
      { optionId: "reject_once", name: "Reject once", kind: "reject_once" },
    ];
    const stub = objects.rules(c.env, tenantId);
    // SAFETY: the tool call is JSON from the validated body.
    const toolCall = body.toolCall as Record<string, string | number | boolean | null | object>;
    const result = await stub.dryRun({
      sessionId: "",
      agent: body.agent,
      cwd: body.cwd,
      user: body.user ?? null,
      toolCall,
      options,
    });
    const rule = result.ruleId ? await ruleById(c.env.DB, tenantId, result.ruleId) : undefined;
    return c.json(
      {
        decision: result.decision,
        rule: rule ? ruleJson(rule) : null,
        option: options.find((o) => o.optionId === result.optionId) ?? null,
      },
      200,
    );
  },
);

/** The tenant's rules changed in D1; `widens` for a new allow rule (answers without the fence, decision 0049). */
async function rulesChanged(env: AppEnv["Bindings"], tenantId: string, widens = false): Promise<void> {
  await objects.rules(env, tenantId).changed(widens);
}
