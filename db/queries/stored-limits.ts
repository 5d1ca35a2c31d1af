// A tenant's limit on what it stores in the shared D1 (decision 0041), read inside the statement that
// would exceed it: the insert and its check are one statement, so two requests at once cannot both
// take the last place. The value is the tenant's `settings.limits.<name>` when it is a positive whole
// number, else the default, and never above the hard maximum (protocol/tenant-limits.ts).

import { DEFAULT_LIMITS, HARD_LIMITS } from "../../protocol/tenant-limits";

export type StoredLimit = keyof typeof HARD_LIMITS;

/** The SQL expression of the tenant's limit `name` and its bindings (the tenant id last). */
export function storedLimitSql(name: StoredLimit, tenantId: string): { sql: string; binds: (string | number)[] } {
  const path = `$.limits.${name}`;
  return {
    sql: `(SELECT min(?, CASE WHEN json_valid(settings) AND json_type(settings, ?) = 'integer' AND json_extract(settings, ?) > 0 THEN json_extract(settings, ?) ELSE ? END) FROM tenants WHERE id = ?)`,
    binds: [HARD_LIMITS[name], path, path, path, DEFAULT_LIMITS[name], tenantId],
  };
}

/** The tenant's limit `name` as the statement reads it (for error messages). */
export async function storedLimit(d1: D1Database, name: StoredLimit, tenantId: string): Promise<number> {
  const { sql, binds } = storedLimitSql(name, tenantId);
  const row = await d1
    .prepare(`SELECT ${sql} AS value`)
    .bind(...binds)
    .first<{ value: number | null }>();
  return row?.value ?? DEFAULT_LIMITS[name];
}

/** A write refused by a stored-data limit: the REST API answers it with `status`, a session tells its clients. */
export class StoredLimitExceeded extends Error {
  constructor(
    readonly limit: StoredLimit | "ruleBytes",
    readonly value: number,
    message: string,
    /** 409 for a count the tenant has reached, 413 for bytes. */
    readonly status: 409 | 413,
  ) {
    super(message);
    this.name = "StoredLimitExceeded";
  }
}
