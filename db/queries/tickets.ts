// Single-use tickets (decision 0025). Redeeming is one DELETE … RETURNING: D1 runs it once on its one
// primary, so of two upgrades presenting the same ticket, from any isolates, exactly one gets the row.

import { eq, lt } from "drizzle-orm";
import { dbOf } from "../client";
import { tickets } from "../schema";

export async function insertTicket(
  d1: D1Database,
  row: { hash: string; tenantId: string; path: string; holder: string; expiresAt: number },
  now: number,
): Promise<void> {
  const db = dbOf(d1);
  // Expired tickets nobody redeemed are cleared as new ones are issued (the table holds about a minute's worth).
  await db.batch([db.delete(tickets).where(lt(tickets.expiresAt, now)), db.insert(tickets).values(row)]);
}

/** Takes the ticket with this hash out of the table, whatever it holds: the caller checks tenant, path and expiry. */
export async function redeemTicket(d1: D1Database, hash: string) {
  const [row] = await dbOf(d1).delete(tickets).where(eq(tickets.hash, hash)).returning();
  return row;
}
