// GET /v1/audit — how every permission request of the tenant was resolved, newest first.
// GET /v1/audit/export — the tenant's audit hash chain as NDJSON, oldest first, for a SIEM (decision 0024).

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { auditPage } from "../../db/queries/audit";
import { chainPoint, chainRange, chainTip, drainChain } from "../../db/queries/audit-chain";
import { ApiError } from "../http-error";
import { decisionAudit } from "../../db/schema";
import { objects } from "../../durable-objects/objects";
import { limitsOf } from "../../protocol/tenant-limits";
import { requireRole } from "../middleware/require-key";
import { json, pageOf, pageParams, pageSchema } from "./pagination";
import type { AppEnv } from "../types";
import type { ApiAuditEntry } from "../../protocol/rest-api";
import { errorResponses, validationHook } from "./openapi";

const AuditEntrySchema = z
  .object({
    id: z.string(),
    sessionId: z.string(),
    agent: z.string(),
    toolCallId: z.string().nullable(),
    kind: z.string().nullable(),
    name: z.string().nullable(),
    operation: z.string().nullable(),
    outcome: z.enum(decisionAudit.outcome.enumValues),
    optionId: z.string().nullable(),
    optionKind: z.string().nullable(),
    decidedBy: z.object({
      type: z.enum(decisionAudit.decidedBy.enumValues),
      key: z.string().nullable(),
      user: z.string().nullable(),
      ruleId: z.string().nullable(),
      /** The person who decided, as their identity provider names them (issuer "key": a key issued to a user). */
      person: z.object({ issuer: z.string(), subject: z.string() }).nullable(),
      /** Their role when they answered (decision 0028). */
      role: z.string().nullable(),
      /** The client connection they answered from. */
      connectionId: z.string().nullable(),
    }),
    /** The policy that applied: four_eyes:not_prompter | four_eyes:two_approvals. */
    policy: z.string().nullable(),
    /** Why a refused answer was refused; what a recorded first approval waits for. */
    reason: z.string().nullable(),
    /** Under two approvals: the earlier approval(s). */
    approvedBy: z.array(z.object({ user: z.string().nullable(), role: z.string(), connectionId: z.string(), at: z.number() })).nullable(),
    at: z.number(),
  })
  .openapi("AuditEntry");

const AuditBudgetSchema = z
  .object({
    bytesPerDay: z.number(),
    spentToday: z.number(),
    exhausted: z.boolean().openapi({
      description: "Today's budget is spent: entries since keep who decided and the operation's length and SHA-256, not its text.",
    }),
    resetsAt: z.number(),
  })
  .openapi("AuditBudget");

export const auditApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

auditApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/audit",
    tags: ["audit"],
    summary: "The decision audit: every permission request's resolution",
    middleware: [requireRole("watch")] as const,
    request: {
      query: z.object({
        sessionId: z.string().optional(),
        agent: z.string().optional(),
        decidedBy: AuditEntrySchema.shape.decidedBy.shape.type.optional(),
        ruleId: z.string().optional(),
        user: z.string().optional(),
        person: z
          .string()
          .optional()
          .openapi({ description: "One person's decisions: `<issuer>|<subject>` (issuer `key` for a key issued to a user)" }),
        cursor: z.string().optional(),
        limit: z.string().optional(),
      }),
    },
    responses: {
      200: json(
        pageSchema(AuditEntrySchema).extend({ budget: AuditBudgetSchema }),
        "A page of entries, and the tenant's audit budget today",
      ),
      400: errorResponses[400],
      401: errorResponses[401],
      403: errorResponses[403],
    },
  }),
  async (c) => {
    const { tenantId, settings } = c.get("principal");
    const q = c.req.valid("query");
    const { cursor, limit } = pageParams(q.cursor, q.limit);
    // The cursor is "at:id" of the last entry of the previous page.
    const before = cursor ? { at: Number(cursor.split(":")[0]), id: cursor.split(":").slice(1).join(":") } : undefined;
    const rows = await auditPage(c.env.DB, tenantId, {
      ...(q.sessionId !== undefined ? { sessionId: q.sessionId } : {}),
      ...(q.agent !== undefined ? { agent: q.agent } : {}),
      ...(q.decidedBy !== undefined ? { decidedBy: q.decidedBy } : {}),
      ...(q.ruleId !== undefined ? { ruleId: q.ruleId } : {}),
      ...(q.user !== undefined ? { user: q.user } : {}),
      ...(q.person !== undefined ? { person: personParam(q.person) } : {}),
      ...(before && Number.isFinite(before.at) ? { before } : {}),
      limit,
    });
    const budget = await objects.tenantLimits(c.env, tenantId).auditBudget(limitsOf(settings.limits).auditBytesPerDay);
    const page = pageOf(
      rows,
      limit,
      (r) => `${r.at}:${r.id}`,
      (r): ApiAuditEntry => ({
        id: r.id,
        sessionId: r.sessionId,
        agent: r.agent,
        toolCallId: r.toolCallId,
        kind: r.kind,
        name: r.name,
        operation: r.operation,
        outcome: r.outcome,
        optionId: r.optionId,
        optionKind: r.optionKind,
        decidedBy: {
          type: r.decidedBy,
          key: r.decidedByKey,
          user: r.decidedByUser,
          ruleId: r.ruleId,
          person:
            r.decidedByIssuer !== null && r.decidedBySubject !== null ? { issuer: r.decidedByIssuer, subject: r.decidedBySubject } : null,
          role: r.decidedByRole,
          connectionId: r.decidedByConnection,
        },
        policy: r.policy,
        reason: r.reason,
        approvedBy:
          r.approvedBy === null
            ? null
            : (JSON.parse(r.approvedBy) as { user: string | null; role: string; connectionId: string; at: number }[]),
        at: r.at,
      }),
    );
    return c.json({ ...page, budget }, 200);
  },
);

/** `<issuer>|<subject>`: the issuer is a URL or `key` and holds no `|`; the subject is the rest. */
function personParam(value: string): { issuer: string; subject: string } {
  const bar = value.indexOf("|");
  if (bar <= 0 || bar === value.length - 1)
    throw ApiError.badRequest('person must be "<issuer>|<subject>", e.g. "https://idp.example|alice"');
  return { issuer: value.slice(0, bar), subject: value.slice(bar + 1) };
}

/** Links per D1 read while the export streams. */
const EXPORT_READ = 500;
const EXPORT_DEFAULT_LIMIT = 10_000;
const EXPORT_MAX_LIMIT = 100_000;
/** The header that names the last link of an export, `SEQ:HASH`: a verifier checks the file ends there. */
const CHAIN_END_HEADER = "Acp-Audit-Chain-End";

function wholeNumber(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max)
    throw ApiError.badRequest(`${name} must be a whole number from ${min} to ${max}, not "${raw}"`);
  return n;
}

auditApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/audit/export",
    tags: ["audit"],
    summary: "The tenant's audit hash chain as NDJSON, oldest first, resumable after a seq",
    description:
      "One link per line: `seq` (1, 2, … per tenant, no gap), `prev` (the hash of seq − 1; 64 zeros before seq 1), `hash`, `tenantId`, `entry` (the row as GET /v1/audit shows it, as it was written; a row written again, such as a summary whose count rose, is a new link). `hash` is the lower-case hex SHA-256 of the line without its `hash` key in RFC 8785 canonical JSON. The `Acp-Audit-Chain-End` header names the last link sent (`SEQ:HASH`); resume with `after` set to it. `acp-gateway audit verify` checks a file.",
    middleware: [requireRole("watch")] as const,
    request: {
      query: z.object({
        after: z.string().optional().openapi({ description: "Start after this seq (default 0: the whole chain)" }),
        limit: z
          .string()
          .optional()
          .openapi({ description: `At most this many links (default ${EXPORT_DEFAULT_LIMIT}, at most ${EXPORT_MAX_LIMIT})` }),
      }),
    },
    responses: {
      200: {
        description: "NDJSON, one link per line",
        headers: z.object({ [CHAIN_END_HEADER]: z.string().openapi({ description: "SEQ:HASH of the last link sent" }) }),
        content: { "application/x-ndjson": { schema: z.string() } },
      },
      400: errorResponses[400],
      401: errorResponses[401],
      403: errorResponses[403],
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const q = c.req.valid("query");
    const after = wholeNumber("after", q.after, 0, 0, Number.MAX_SAFE_INTEGER);
    const limit = wholeNumber("limit", q.limit, EXPORT_DEFAULT_LIMIT, 1, EXPORT_MAX_LIMIT);
    const db = c.env.DB;
    // Every row written so far is in the export: what sessions staged and nobody chained yet (a
    // writer that stopped mid-drain, decision 0035) is chained first; usually there is none.
    await drainChain(db, tenantId);
    // Links are numbered without a gap, so where this export ends is known before it starts: the
    // tip as it is now, or `limit` links on. Links appended meanwhile wait for the next export.
    const tip = await chainTip(db, tenantId);
    if (after > tip.seq) throw ApiError.badRequest(`after=${after} is past the tenant's last audit link (seq ${tip.seq})`);
    const through = Math.min(tip.seq, after + limit);
    const end = through === tip.seq ? tip : await chainPoint(db, tenantId, through);
    if (!end) throw new Error(`the audit chain of tenant ${tenantId} has no link ${through} below its tip ${tip.seq}`);
    const utf8 = new TextEncoder();
    let next = after;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (next >= through) return controller.close();
        const rows = await chainRange(db, tenantId, next, through, EXPORT_READ);
        if (rows.length === 0)
          return controller.error(new Error(`the audit chain of tenant ${tenantId} ends at ${next}, before ${through}`));
        // The entry goes out as stored, byte for byte: an edit of it in D1 shows as a hash mismatch.
        const text = rows
          .map(
            (r) =>
              `{"seq":${r.seq},"prev":${JSON.stringify(r.prevHash)},"hash":${JSON.stringify(r.hash)},"tenantId":${JSON.stringify(tenantId)},"entry":${r.entry}}\n`,
          )
          .join("");
        next = rows.at(-1)?.seq ?? through;
        controller.enqueue(utf8.encode(text));
      },
    });
    const response = new Response(body, {
      headers: { "Content-Type": "application/x-ndjson; charset=utf-8", [CHAIN_END_HEADER]: `${end.seq}:${end.hash}` },
    });
    // SAFETY: zod-openapi types a route's response by its media type and reads "application/x-ndjson"
    // as a JSON one (it matches application/…json), leaving no type for a plain Response; this is the
    // 200 the route documents.
    return response as never;
  },
);
