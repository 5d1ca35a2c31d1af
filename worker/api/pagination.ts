// What every list route shares: `?cursor=&limit=` in, `{ items, nextCursor }` out, and the
// schemas that document both.

import { z } from "@hono/zod-openapi";
import { ApiError } from "../http-error";

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

/** The query of every list route. */
export const PageQuery = z.object({ cursor: z.string().optional(), limit: z.string().optional() });

/** `{ items, nextCursor }` of a list route, documented. */
export const pageSchema = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });

/** A JSON response body, documented. */
export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

export function pageParams(cursor: string | undefined, limit: string | undefined): { cursor: string | null; limit: number } {
  let n = DEFAULT_LIMIT;
  if (limit !== undefined) {
    n = Number(limit);
    if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) throw ApiError.badRequest(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  }
  return { cursor: cursor && cursor.length > 0 ? cursor : null, limit: n };
}

/** A page of `limit` items from `limit + 1` rows, and the cursor of the next page if there is one. */
export function pageOf<R, T>(
  rows: R[],
  limit: number,
  cursorOf: (row: R) => string,
  toItem: (row: R) => T,
): { items: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map(toItem), nextCursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
