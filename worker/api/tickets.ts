// POST /v1/tickets: a single-use ticket for a browser's WebSocket to /acp (worker/tickets.ts).

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { requireRole } from "../middleware/require-key";
import { DEFAULT_TICKET_TTL_MS, MAX_TICKET_TTL_MS, TICKET_PATH, issueTicket } from "../tickets";
import type { AppEnv } from "../types";
import { errorResponses, validationHook } from "./openapi";
import { json } from "./pagination";

export const ticketsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

ticketsApi.openapi(
  createRoute({
    method: "post",
    path: "/v1/tickets",
    tags: ["tickets"],
    summary: "A single-use ticket (≤ 60 s) for new WebSocket(url, ['acp.v1', 'acp.ticket.<ticket>'])",
    middleware: [requireRole("watch")] as const,
    request: {
      body: {
        content: {
          "application/json": {
            schema: z.object({ ttlMs: z.number().int().min(1).max(MAX_TICKET_TTL_MS).optional() }).strict(),
          },
        },
        required: false,
      },
    },
    responses: {
      201: json(
        z.object({ ticket: z.string(), subprotocol: z.string(), path: z.string(), expiresAt: z.number() }).openapi("Ticket"),
        "The ticket",
      ),
      ...errorResponses,
    },
  }),
  async (c) => {
    const ttlMs = c.req.valid("json")?.ttlMs ?? DEFAULT_TICKET_TTL_MS;
    const { ticket, expiresAt } = await issueTicket(c.env, c.get("principal"), ttlMs);
    return c.json({ ticket, subprotocol: `acp.ticket.${ticket}`, path: TICKET_PATH, expiresAt }, 201);
  },
);
