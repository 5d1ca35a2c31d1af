// A tenant's API keys, for its admin: create (the secret is shown once), list, revoke.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { type KeyListing, insertKey, keysPage, revokeKey } from "../../db/queries/keys";
import { mintKey } from "../../protocol/api-keys";
import { ROLES } from "../../core/principal";
import { atLeast, mayGrant, roleOf } from "../../protocol/people/roles";
import { AGENT_NAME } from "../../protocol/names";
import { ApiError } from "../http-error";
import { requireRole } from "../middleware/require-key";
import { closeAgentConnections } from "../revocation";
import type { AppEnv } from "../types";
import { conflictResponse, errorResponses, validationHook } from "./openapi";
import { PageQuery, json, pageOf, pageParams, pageSchema } from "./pagination";

const errors = { ...errorResponses, ...conflictResponse };

const KeyKind = z.enum(["client", "agent", "admin"]);
const KeySchema = z
  .object({
    id: z.string(),
    prefix: z.string(),
    kind: KeyKind,
    label: z.string().nullable(),
    agent: z.string().nullable(),
    user: z.string().nullable(),
    role: z.string().nullable(),
    expiresAt: z.number().nullable(),
    createdAt: z.number(),
    lastUsedAt: z.number().nullable(),
    revokedAt: z.number().nullable(),
  })
  .openapi("ApiKey");

const keyJson = (k: KeyListing) => ({
  id: k.id,
  prefix: k.prefix,
  kind: k.kind,
  label: k.label,
  agent: k.agent,
  user: k.user,
  role: k.role,
  expiresAt: k.expiresAt,
  createdAt: k.createdAt,
  lastUsedAt: k.lastUsedAt,
  revokedAt: k.revokedAt,
});

export const keysApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

keysApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/keys",
    tags: ["keys"],
    summary: "Create a key (the secret is shown once)",
    middleware: [requireRole("administer")] as const,
    request: {
      body: {
        content: {
          "application/json": {
            schema: z.object({
              kind: KeyKind,
              label: z.string().min(1).max(200).optional(),
              agent: z.string().regex(AGENT_NAME, "letters, digits, '.', '-', '_'; 1–64 characters").optional(),
              /** A client key issued to one person: who (their subject at the tenant's provider, or a name). */
              user: z.string().min(1).max(255).optional(),
              /** What the key may do (decision 0028); omitted: an admin key is owner, a client key approver. */
              role: z.enum(ROLES).optional(),
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
    const { tenantId, role } = c.get("principal");
    const body = c.req.valid("json");
    if (body.role !== undefined && body.kind === "agent")
      throw ApiError.badRequest("role is for client and admin keys; an agent key has none");
    const granted = body.kind === "agent" ? null : roleOf({ credential: "key", kind: body.kind, stored: body.role ?? null }, undefined);
    if (body.kind === "admin" && granted !== null && !atLeast(granted, "admin"))
      throw ApiError.badRequest("An admin key's role is admin or owner; give a client key the lower roles");
    if (granted !== null && !mayGrant(role, granted))
      throw ApiError.forbidden(`You may not issue a key of role ${granted}: it is above your own role (${role ?? "none"})`);
    if (body.agent !== undefined && body.kind !== "agent") throw ApiError.badRequest("agent is only for agent keys");
    if (body.user !== undefined && body.kind !== "client")
      throw ApiError.badRequest("user is only for client keys (a key issued to one person)");
    const minted = await mintKey(body.kind);
    await insertKey(c.env.DB, tenantId, minted, body);
    return c.json(
      {
        id: minted.id,
        prefix: minted.prefix,
        kind: body.kind,
        label: body.label ?? null,
        agent: body.agent ?? null,
        user: body.user ?? null,
        role: body.role ?? null,
        expiresAt: body.expiresAt ?? null,
        key: minted.key,
      },
      201,
    );
  },
);

keysApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/keys",
    tags: ["keys"],
    summary: "The tenant's keys (never their secrets)",
    middleware: [requireRole("administer")] as const,
    request: { query: PageQuery },
    responses: { 200: json(pageSchema(KeySchema), "A page of keys"), ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const rows = await keysPage(c.env.DB, tenantId, cursor, limit);
    return c.json(
      pageOf(rows, limit, (k) => k.id, keyJson),
      200,
    );
  },
);

keysApi.openapi(
  createRoute({
    method: "delete",
    path: "/v1/keys/{id}",
    tags: ["keys"],
    summary: "Revoke a key; its live connections close within seconds",
    middleware: [requireRole("administer")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: { 204: { description: "Revoked" }, ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const id = c.req.valid("param").id;
    if (!(await revokeKey(c.env.DB, tenantId, id, Date.now()))) throw ApiError.notFound("Key");
    await closeAgentConnections(c.env, tenantId, id, "the agent key was revoked");
    return c.body(null, 204);
  },
);
