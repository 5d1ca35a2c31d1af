// Notification targets (tenant admin): webhooks told about permission requests that wait with
// nobody attached who could answer. The signing secret is generated (or given) at creation, shown
// once, and never returned again. See worker/notifications/ for what is sent and how it is signed.

import { type TargetListing, deleteTarget, insertTarget, targetsPage } from "../../db/queries/notification-targets";
import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { ApiError } from "../http-error";
import { requireRole } from "../middleware/require-key";
import { PageQuery, json, pageOf, pageParams, pageSchema } from "./pagination";
import type { AppEnv } from "../types";
import { randomId } from "../../protocol/ids";
import { errorResponses, storedLimitResponses, validationHook } from "./openapi";
import { allowPrivateWebhooks, checkWebhookUrl } from "../../protocol/webhook-url";

/** The URL's form here; where it may point (public https hosts, unless the deployment allows private ones) is checked in the handler. */
const WebhookUrl = z.string().max(2048);
const BaseUrl = z
  .string()
  .max(2048)
  .refine((u) => /^https?:\/\/[^/]+\/?$/.test(u), "an origin such as https://gateway.example.com");

const TargetSchema = z
  .object({ id: z.string(), name: z.string(), url: z.string(), linkBaseUrl: z.string(), createdAt: z.number() })
  .openapi("NotificationTarget");

const targetJson = (r: TargetListing) => ({ id: r.id, name: r.name, url: r.url, linkBaseUrl: r.linkBaseUrl, createdAt: r.createdAt });

export const notificationsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

notificationsApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/notification-targets",
    tags: ["notifications"],
    summary: "Register a webhook told about permission requests nobody is there to answer (its signing secret is shown once)",
    middleware: [requireRole("administer")] as const,
    request: {
      body: {
        content: {
          "application/json": {
            schema: z.object({
              name: z.string().min(1).max(200).optional(),
              url: WebhookUrl,
              secret: z.string().min(24).max(256).optional(),
              linkBaseUrl: BaseUrl.optional(),
            }),
          },
        },
        required: true,
      },
    },
    responses: {
      201: json(TargetSchema.extend({ secret: z.string() }), "The target, with its signing secret"),
      ...errorResponses,
      409: storedLimitResponses[409],
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const body = c.req.valid("json");
    // Checked again at every delivery (webhook-delivery.ts): a target written before this rule, or by hand, is held to it too.
    const check = checkWebhookUrl(body.url, { allowPrivate: allowPrivateWebhooks(c.env.WEBHOOK_ALLOW_PRIVATE) });
    if (!check.ok) throw ApiError.badRequest(`The webhook URL is refused: ${check.reason}`);
    const id = randomId("ntf");
    const secret = body.secret ?? randomId("whsec", 40);
    const linkBase = (body.linkBaseUrl ?? new URL(c.req.url).origin).replace(/\/$/, "");
    const name = body.name ?? new URL(body.url).host;
    const row = await insertTarget(c.env.DB, { id, tenantId, name, url: body.url, secret, linkBaseUrl: linkBase });
    if (!row) throw new Error("notification target vanished");
    return c.json({ ...targetJson(row), secret }, 201);
  },
);

notificationsApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/notification-targets",
    tags: ["notifications"],
    summary: "The tenant's notification targets (never their secrets)",
    middleware: [requireRole("administer")] as const,
    request: { query: PageQuery },
    responses: {
      200: json(pageSchema(TargetSchema), "A page of targets"),
      ...errorResponses,
    },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    const { cursor, limit } = pageParams(c.req.valid("query").cursor, c.req.valid("query").limit);
    const results = await targetsPage(c.env.DB, tenantId, cursor, limit);
    return c.json(
      pageOf(results, limit, (r) => r.id, targetJson),
      200,
    );
  },
);

notificationsApi.openapi(
  createRoute({
    method: "delete",
    path: "/v1/notification-targets/{id}",
    tags: ["notifications"],
    summary: "Remove a notification target; links already sent through it stop working",
    middleware: [requireRole("administer")] as const,
    request: { params: z.object({ id: z.string() }) },
    responses: { 204: { description: "Removed" }, ...errorResponses },
  }),
  async (c) => {
    const { tenantId } = c.get("principal");
    if (!(await deleteTarget(c.env.DB, tenantId, c.req.valid("param").id))) throw ApiError.notFound("Notification target");
    return c.body(null, 204);
  },
);
