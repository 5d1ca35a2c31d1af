// Single-use tickets for a browser's WebSocket (decision 0025). A browser cannot set a header on a
// WebSocket, and a key in a subprotocol or URL is kept by proxies and logs; instead it gets a ticket
// over fetch (POST /v1/tickets, with its key or token in the Authorization header) and offers
// `acp.ticket.<TICKET>` beside `acp.v1`. A ticket is bound to its tenant, to who it was issued to and
// to `/acp`, lives at most 60 s, and is redeemed by one D1 `DELETE … RETURNING`: exactly one upgrade
// gets it, whichever isolate it reaches. Only its SHA-256 is stored.

import { insertTicket, redeemTicket } from "../db/queries/tickets";
import type { Principal } from "../core/principal";
import { randomId, sha256Hex } from "../protocol/ids";
import type { Env } from "../core/env";

export const TICKET_PATH = "/acp";
export const MAX_TICKET_TTL_MS = 60_000;
export const DEFAULT_TICKET_TTL_MS = 30_000;

/** Who a ticket was issued to: the principal, less what is read afresh when it is redeemed. */
export type TicketHolder = Omit<Principal, "settings" | "lastUsedAt">;

export async function issueTicket(
  env: Env,
  principal: Principal,
  ttlMs: number,
  now = Date.now(),
): Promise<{ ticket: string; expiresAt: number }> {
  const ticket = randomId("acpt", 40);
  const expiresAt = now + Math.min(Math.max(ttlMs, 1), MAX_TICKET_TTL_MS);
  const { settings: _settings, lastUsedAt: _lastUsedAt, ...holder } = principal;
  await insertTicket(
    env.DB,
    { hash: await sha256Hex(ticket), tenantId: principal.tenantId, path: TICKET_PATH, holder: JSON.stringify(holder), expiresAt },
    now,
  );
  return { ticket, expiresAt };
}

export type Redemption = { ok: true; tenantId: string; holder: TicketHolder } | { ok: false; reason: string };

/** Takes the ticket (it is gone whatever the outcome) and says whether it opens `path` now. */
export async function redeem(env: Env, ticket: string, path: string, now: number): Promise<Redemption> {
  if (ticket.length > 128) return { ok: false, reason: "Invalid ticket" };
  const row = await redeemTicket(env.DB, await sha256Hex(ticket));
  if (!row) return { ok: false, reason: "This ticket is unknown or was already used: get a new one with POST /v1/tickets" };
  if (row.expiresAt <= now)
    return { ok: false, reason: "This ticket has expired (tickets last at most 60 s): get a new one with POST /v1/tickets" };
  if (row.path !== path) return { ok: false, reason: `This ticket opens ${row.path}, not ${path}` };
  return { ok: true, tenantId: row.tenantId, holder: JSON.parse(row.holder) as TicketHolder };
}
