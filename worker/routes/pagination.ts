// `?cursor=&limit=` for every list: `{ items, nextCursor }`.

import { ApiError } from "../http-error";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

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
