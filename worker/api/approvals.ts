// GET /v1/approvals?waiting=me — "waiting on you": across the tenant's sessions, every permission
// request the caller may answer now (protocol/people/answering.ts `waitsOn`: their role, four eyes,
// the turn's prompter), each with its session, the operation as a person reads it, when it was asked
// and a link to its session in the console; and every mode change held for a second person that they
// may approve (`modeChanges`, decision 0061: approvers, never the proposer).
//
// Built on the converged sessions index (decision 0049): the index names the sessions with requests
// waiting, and each of those sessions is asked itself, so an entry is listed only while its session
// holds it. A request the index does not show yet (published up to LIVE_INDEX_MS late, or owed after
// a failure) appears at the next call once the index has it.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { sessionsWaiting } from "../../db/queries/sessions";
import { objects } from "../../durable-objects/objects";
import { personKey } from "../../protocol/people/answering";
import { may } from "../../protocol/people/roles";
import { log } from "../../core/log";
import { ApiError } from "../http-error";
import { requireRole } from "../middleware/require-key";
import type { AppEnv } from "../types";
import type { WaitingRequest } from "../../durable-objects/session/contract";

type WaitingHere = { title: string | null; requests: WaitingRequest[] };
import { errorResponses, validationHook } from "./openapi";

/** Sessions asked per call: the oldest-active ones with requests waiting, in parallel. */
const MAX_SESSIONS = 100;

const WaitingSchema = z
  .object({
    sessionId: z.string(),
    title: z.string().nullable(),
    agent: z.string(),
    cwd: z.string(),
    requestId: z.number().int(),
    toolCallId: z.string().nullable(),
    operation: z
      .record(z.string(), z.unknown())
      .describe("The frozen operation as a person reads it: kind, command, paths, diffs, the agent's title"),
    askedAt: z.number(),
    deadlineAt: z.number(),
    link: z.string().describe("The session in the console, where the request's card is"),
  })
  .openapi("WaitingRequest");

const ModeChangeWaitingSchema = z
  .object({
    sessionId: z.string(),
    proposalId: z.string(),
    operation: z.string().describe("session/set_mode mode=bypassPermissions"),
    proposedBy: z.string(),
    proposedAt: z.number(),
    expiresAt: z.number(),
    decide: z.string().describe("POST here with {decision: approve | refuse}"),
  })
  .openapi("ModeChangeWaiting");

export const approvalsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

approvalsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/approvals",
    tags: ["sessions"],
    summary: "Waiting on you: every permission request the caller may answer now, across the tenant's sessions",
    middleware: [requireRole("watch")] as const,
    request: { query: z.object({ waiting: z.string().openapi({ example: "me" }) }) },
    responses: {
      200: {
        description: "The requests, oldest first; `incomplete` when some sessions could not be asked",
        content: {
          "application/json": {
            schema: z.object({
              items: z.array(WaitingSchema),
              modeChanges: z
                .array(ModeChangeWaitingSchema)
                .describe("Mode changes held for a second person that the caller may approve (decision 0061)"),
              incomplete: z.boolean(),
            }),
          },
        },
      },
      ...errorResponses,
    },
  }),
  async (c) => {
    if (c.req.valid("query").waiting !== "me") throw ApiError.badRequest("waiting must be 'me' (the requests you may answer now)");
    const principal = c.get("principal");
    const { tenantId, role } = principal;
    if (role === null) throw ApiError.forbidden("An agent key answers no permission requests");
    const answerer = { role, who: personKey({ keyId: principal.keyId, person: principal.person ?? undefined }) };
    const origin = new URL(c.req.url).origin;
    const rows = await sessionsWaiting(c.env.DB, tenantId, MAX_SESSIONS);
    let incomplete = false;
    const modeChanges: z.infer<typeof ModeChangeWaitingSchema>[] = [];
    const perSession = await Promise.all(
      rows.map(async (row) => {
        try {
          // SAFETY: plain JSON data (an OperationView's rawInput is JSON the session parsed), which RPC
          // structured-clones as is; its generated stub type drops members holding `unknown`.
          const stub = objects.session(c.env, tenantId, row.sessionId);
          const here = (await stub.waitingOn(answerer)) as WaitingHere | null;
          if (!here) return [];
          // The proposer's own change waits on someone else (four eyes on a mode change).
          if (may(role, "oversight")) {
            for (const p of (await stub.modeChangesWaiting()) ?? []) {
              if (p.proposer.who === answerer.who) continue;
              modeChanges.push({
                sessionId: row.sessionId,
                proposalId: p.id,
                operation: p.operation,
                proposedBy: p.proposer.label ?? p.proposer.who,
                proposedAt: p.proposedAt,
                expiresAt: p.expiresAt,
                decide: `${origin}/v1/sessions/${encodeURIComponent(row.sessionId)}/mode-changes/${encodeURIComponent(p.id)}`,
              });
            }
          }
          return here.requests.map((r) => ({
            sessionId: row.sessionId,
            title: here.title,
            agent: row.agent,
            cwd: row.cwd,
            requestId: r.requestId,
            toolCallId: r.toolCallId,
            // SAFETY: an OperationView: an object of JSON fields (protocol/operation-view.ts).
            operation: r.operation as unknown as Record<string, unknown>,
            askedAt: r.askedAt,
            deadlineAt: r.deadlineAt,
            link: `${origin}/#/session/${encodeURIComponent(row.sessionId)}`,
          }));
        } catch (e) {
          incomplete = true;
          log(
            "warn",
            "approvals.session_unreachable",
            "a session with requests waiting could not be asked",
            { tenantId, sessionId: row.sessionId },
            e,
          );
          return [];
        }
      }),
    );
    const items = perSession.flat().sort((a, b) => a.askedAt - b.askedAt);
    modeChanges.sort((a, b) => a.proposedAt - b.proposedAt);
    return c.json({ items, modeChanges, incomplete: incomplete || rows.length === MAX_SESSIONS }, 200);
  },
);
