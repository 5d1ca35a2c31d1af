// POST /v1/sessions/{id}/mode-changes/{proposalId} — an approver decides a mode change held for a
// second person (settings.modes.fourEyes, decision 0061), as a client does by
// `_acp_gateway/decide_mode_change`. GET lists the session's held changes. Who may decide is the
// session's judgement (protocol/people/mode-approval.ts): the proposer never approves their own.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../http-error";
import { sessionIndexed } from "../../db/queries/sessions";
import { ErrorCode } from "../../core/rpc-errors";
import { requireRole } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { errorResponses, validationHook } from "./openapi";
import { objects } from "../../durable-objects/objects";

const ProposalSchema = z
  .object({
    id: z.string(),
    operation: z.string(),
    change: z.object({ method: z.string(), setting: z.string(), value: z.string() }),
    proposer: z.object({ who: z.string(), label: z.string().nullable() }),
    proposedAt: z.number(),
    expiresAt: z.number(),
  })
  .openapi("ModeChangeProposal");

export const modeChangesApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

modeChangesApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/sessions/{id}/mode-changes",
    tags: ["sessions"],
    summary: "The mode changes held in a session for a second person's approval",
    middleware: [requireRole("watch")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: {
      200: { description: "Oldest first", content: { "application/json": { schema: z.object({ items: z.array(ProposalSchema) }) } } },
      ...errorResponses,
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const sessionId = c.req.valid("param").id;
    if (!(await sessionIndexed(c.env.DB, tenantId, sessionId))) throw ApiError.notFound("Session");
    const items = await objects.session(c.env, tenantId, sessionId).modeChangesWaiting();
    if (!items) throw ApiError.notFound("Session");
    return c.json({ items }, 200);
  },
);

modeChangesApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/sessions/{id}/mode-changes/{proposalId}",
    tags: ["sessions"],
    summary: "Approve or refuse a mode change held for a second person; approvers, never the proposer's approval",
    middleware: [requireRole("oversight")] as const,
    request: {
      params: z.object({ id: z.string(), proposalId: z.string() }),
      body: { content: { "application/json": { schema: z.object({ decision: z.enum(["approve", "refuse"]) }).strict() } } },
    },
    responses: {
      200: {
        description: "Decided: approved (relayed to the agent), refused, or expired before the decision",
        content: { "application/json": { schema: z.object({ outcome: z.enum(["approved", "refused", "expired"]) }) } },
      },
      ...errorResponses,
    },
  }),
  async (c) => {
    const principal = c.get("principal");
    const { id: sessionId, proposalId } = c.req.valid("param");
    if (!(await sessionIndexed(c.env.DB, principal.tenantId, sessionId))) throw ApiError.notFound("Session");
    const result = await objects.session(c.env, principal.tenantId, sessionId).decideModeChange(
      {
        role: principal.role,
        keyId: principal.keyId,
        person: principal.person ? { issuer: principal.person.issuer, subject: principal.person.subject } : undefined,
        label: principal.person?.name ?? principal.label,
        connId: null,
      },
      proposalId,
      c.req.valid("json").decision,
    );
    if (!result) throw ApiError.notFound("Session");
    if (result.ok) return c.json({ outcome: result.outcome }, 200);
    if (result.gone) throw new ApiError(404, "not_found", result.message);
    if (result.code === ErrorCode.notPermitted) throw ApiError.forbidden(result.message);
    throw new ApiError(503, "unavailable", result.message);
  },
);
