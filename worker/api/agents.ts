// A tenant's agent registrations, for its admin: dial_in (the agent connects to the gateway) or
// dial_out (the gateway connects to its url, with headers whose values are never returned).

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import {
  type DecidesItself,
  type AgentFields,
  agentByName,
  agentsPage,
  deleteAgent,
  otherKeysBoundTo,
  saveAgent,
  setAgentOwner,
} from "../../db/queries/agents";
import { keyOfTenant } from "../../db/queries/keys";
import type { AgentRow } from "../../db/schema";
import { AGENT_NAME } from "../../protocol/names";
import { ApiError } from "../http-error";
import { requireRole } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { conflictResponse, errorResponses, validationHook } from "./openapi";
import { PageQuery, json, pageOf, pageParams, pageSchema } from "./pagination";
import { gatewayObjects, objects } from "../../durable-objects/objects";

const errors = { ...errorResponses, ...conflictResponse };

const AgentSchema = z
  .object({
    name: z.string(),
    description: z.string().nullable(),
    mode: z.enum(["dial_in", "dial_out"]),
    url: z.string().nullable(),
    /** Header names only: values are write-only. */
    headerNames: z.array(z.string()),
    isDefault: z.boolean(),
    /** dial_in: the agent key the name belongs to (the first to dial in under it, or the one an admin bound it to). */
    keyId: z.string().nullable(),
    /** The agent ran a tool call without asking anyone (decision 0056): the latest such run a session saw. Null: never seen. */
    decidesItself: z.object({ at: z.number(), sessionId: z.string(), toolCallId: z.string(), kind: z.string() }).nullable(),
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
const agentFields = {
  description: z.string().max(1000).optional(),
  mode: z.enum(["dial_in", "dial_out"]).optional(),
  url: AgentUrl.optional(),
  headers: Headers.optional(),
  isDefault: z.boolean().optional(),
};

const agentJson = (a: AgentRow) => ({
  name: a.name,
  description: a.description,
  mode: a.mode,
  url: a.url,
  headerNames: a.headers ? Object.keys(JSON.parse(a.headers) as object) : [],
  isDefault: a.isDefault,
  keyId: a.ownerKeyId,
  // SAFETY: written only by noteDecidesItself, as a DecidesItself.
  decidesItself: a.decidesItself ? (JSON.parse(a.decidesItself) as DecidesItself) : null,
  createdAt: a.createdAt,
  updatedAt: a.updatedAt,
});

async function findAgent(d1: D1Database, tenantId: string, name: string): Promise<AgentRow> {
  const row = await agentByName(d1, tenantId, name);
  if (!row) throw ApiError.notFound("Agent");
  return row;
}

async function save(d1: D1Database, tenantId: string, name: string, fields: AgentFields, insert: boolean): Promise<AgentRow> {
  if (fields.mode === "dial_out" && !fields.url) throw ApiError.badRequest("a dial_out agent needs the url of its ACP WebSocket endpoint");
  await saveAgent(d1, tenantId, name, fields, insert);
  return findAgent(d1, tenantId, name);
}

export const agentsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

agentsApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/agents",
    tags: ["agents"],
    summary: "Register an agent: dial_in (it connects to the gateway) or dial_out (the gateway connects to its url)",
    middleware: [requireRole("administer")] as const,
    request: { body: { content: { "application/json": { schema: z.object({ name: AgentName, ...agentFields }) } }, required: true } },
    responses: { 201: json(z.object({ agent: AgentSchema }), "The agent"), ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const body = c.req.valid("json");
    if (await agentByName(c.env.DB, tenantId, body.name)) throw new ApiError(409, "conflict", `An agent named "${body.name}" exists`);
    const row = await save(
      c.env.DB,
      tenantId,
      body.name,
      {
        description: body.description ?? null,
        mode: body.mode ?? "dial_in",
        url: body.url ?? null,
        headers: body.headers ? JSON.stringify(body.headers) : null,
        isDefault: body.isDefault ?? false,
      },
      true,
    );
    return c.json({ agent: agentJson(row) }, 201);
  },
);

agentsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/agents",
    tags: ["agents"],
    summary:
      "The tenant's agents (header values are never returned; to a client key, no url, header names or key either). ?status=1 adds whether each dial-in agent is connected now",
    middleware: [requireRole("watch")] as const,
    request: { query: PageQuery.extend({ status: z.enum(["0", "1"]).optional() }) },
    responses: {
      200: json(
        pageSchema(
          AgentSchema.extend({
            connected: z.boolean().nullable().optional(),
            failing: z.string().nullable().optional(),
            notices: z.array(z.object({ method: z.string(), params: z.unknown(), at: z.number() })).optional(),
          }),
        ),
        "A page of agents (`failing`: the agent refused the gateway's initialize, with its message; `notices`: its newest notification of each method that named no session)",
      ),
      ...errors,
    },
  }),
  async (c) => {
    const { tenantId, kind } = c.get("principal");
    const query = c.req.valid("query");
    const { cursor, limit } = pageParams(query.cursor, query.limit);
    const rows = await agentsPage(c.env.DB, tenantId, cursor, limit);
    // What a client may know of an agent: that it exists and how to reach it through the gateway, not where it lives.
    const shown = (a: AgentRow) => (kind === "admin" ? agentJson(a) : { ...agentJson(a), url: null, headerNames: [], keyId: null });
    const page = pageOf(rows, limit, (a) => a.name, shown);
    if (query.status !== "1") return c.json(page, 200);
    // Dial-out agents are not asked: asking would dial them. Their status is known when a session opens.
    const statuses = await Promise.all(
      page.items.map((a) =>
        a.mode === "dial_in"
          ? gatewayObjects(c.env)
              .agent(tenantId, a.name)
              .status(tenantId, a.name)
              .then((s) => ({ connected: s.connected, failing: s.failing ?? null, notices: s.notices ?? [] }))
              .catch(() => null)
          : Promise.resolve(null),
      ),
    );
    return c.json(
      {
        ...page,
        items: page.items.map((a, i) => ({
          ...a,
          connected: statuses[i]?.connected ?? null,
          failing: statuses[i]?.failing ?? null,
          notices: statuses[i]?.notices ?? [],
        })),
      },
      200,
    );
  },
);

agentsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/agents/{name}",
    tags: ["agents"],
    summary: "One agent",
    middleware: [requireRole("administer")] as const,
    request: { params: z.object({ name: z.string() }) },
    responses: { 200: json(z.object({ agent: AgentSchema }), "The agent"), ...errors },
  }),
  async (c) => c.json({ agent: agentJson(await findAgent(c.env.DB, c.get("principal").tenantId, c.req.valid("param").name)) }, 200),
);

agentsApi.openapi(
  createRoute({
    method: "patch",
    path: "/v1/agents/{name}",
    tags: ["agents"],
    summary: "Change an agent",
    middleware: [requireRole("administer")] as const,
    request: {
      params: z.object({ name: z.string() }),
      body: { content: { "application/json": { schema: z.object(agentFields) } }, required: true },
    },
    responses: { 200: json(z.object({ agent: AgentSchema }), "The agent"), ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const name = c.req.valid("param").name;
    const body = c.req.valid("json");
    const row = await findAgent(c.env.DB, tenantId, name);
    const updated = await save(
      c.env.DB,
      tenantId,
      name,
      {
        description: body.description ?? row.description,
        mode: body.mode ?? row.mode,
        url: body.url ?? row.url,
        headers: body.headers ? JSON.stringify(body.headers) : row.headers,
        isDefault: body.isDefault ?? row.isDefault,
      },
      false,
    );
    // A live connection made under the old URL, headers or mode must not outlive them.
    if (updated.url !== row.url || updated.headers !== row.headers || updated.mode !== row.mode) {
      await objects.agent(c.env, tenantId, name).closeConnections(null, "the agent's registration changed");
    }
    return c.json({ agent: agentJson(updated) }, 200);
  },
);

agentsApi.openapi(
  createRoute({
    method: "delete",
    path: "/v1/agents/{name}",
    tags: ["agents"],
    summary: "Remove an agent registration (its sessions stay readable)",
    middleware: [requireRole("administer")] as const,
    request: { params: z.object({ name: z.string() }) },
    responses: { 204: { description: "Removed" }, ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const name = c.req.valid("param").name;
    await findAgent(c.env.DB, tenantId, name);
    await objects.agent(c.env, tenantId, name).closeConnections(null, "the agent was removed");
    await deleteAgent(c.env.DB, tenantId, name);
    return c.body(null, 204);
  },
);

agentsApi.openapi(
  createRoute({
    method: "put",
    path: "/v1/agents/{name}/owner",
    tags: ["agents"],
    summary:
      "Bind a dial_in agent name to an agent key: only that key may dial in under it from now on (its live connection of another key closes)",
    middleware: [requireRole("administer")] as const,
    request: {
      params: z.object({ name: z.string() }),
      body: { content: { "application/json": { schema: z.object({ keyId: z.string().min(1).max(200) }) } }, required: true },
    },
    responses: { 200: json(z.object({ agent: AgentSchema }), "The agent"), ...errors },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const name = c.req.valid("param").name;
    const { keyId } = c.req.valid("json");
    const row = await findAgent(c.env.DB, tenantId, name);
    if (row.mode !== "dial_in")
      throw ApiError.badRequest(`The agent "${name}" is dial_out: the gateway dials it, and no key dials in as it`);
    const now = Date.now();
    const key = await keyOfTenant(c.env.DB, tenantId, keyId);
    if (!key) throw ApiError.notFound("Key");
    if (key.kind !== "agent") throw ApiError.badRequest(`The key ${keyId} is a ${key.kind} key; only an agent key can own an agent name`);
    if (key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= now)) {
      throw ApiError.badRequest(`The key ${keyId} is revoked or expired; create a new agent key (POST /v1/keys) and bind that`);
    }
    if (key.agent !== null && key.agent !== name) {
      throw ApiError.badRequest(`The key ${keyId} may dial in only as "${key.agent}"; bind a key created for "${name}" or for any name`);
    }
    const bound = await otherKeysBoundTo(c.env.DB, tenantId, name, keyId, now);
    if (bound.length > 0) {
      throw new ApiError(
        409,
        "conflict",
        `The name "${name}" is bound to ${bound.join(", ")} by ${bound.length === 1 ? "its" : "their"} creation; revoke ${bound.length === 1 ? "it" : "them"} first (DELETE /v1/keys/{id})`,
      );
    }
    if (row.ownerKeyId !== keyId) {
      await setAgentOwner(c.env.DB, tenantId, name, keyId);
      // The old owner's connection must not keep the name's sessions, and their prompts.
      await objects.agent(c.env, tenantId, name).closeConnections(null, "the agent name was bound to another key");
    }
    return c.json({ agent: agentJson(await findAgent(c.env.DB, tenantId, name)) }, 200);
  },
);
