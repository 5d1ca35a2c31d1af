// An object's `meta` table (key → one JSON value), with each value kept as parsed after its first
// read: the AgentObject and the SessionObject read theirs on every frame. Only the object writes its
// storage, and every write goes through `set` (or `forgetAll` after the table was emptied), so the
// copy never goes stale. Values are frozen: a caller that changes one without writing it back fails
// loudly instead of drifting from what is stored.

export class MetaTable {
  private readonly cache = new Map<string, unknown>();

  constructor(private readonly sql: SqlStorage) {}

  /** The value under `key` as stored (undefined: no row). */
  get<T>(key: string): T | undefined {
    if (this.cache.has(key)) return this.cache.get(key) as T | undefined;
    const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
    const value = row ? deepFreeze(JSON.parse(row.value) as unknown) : undefined;
    this.cache.set(key, value);
    return value as T | undefined;
  }

  /** Writes `value` under `key`; undefined deletes the row. */
  set(key: string, value: unknown): void {
    if (value === undefined) this.sql.exec("DELETE FROM meta WHERE key = ?", key);
    else this.sql.exec("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, JSON.stringify(value));
    // As a read would give it back: parsed from the text written (no undefined fields, no shared objects).
    this.cache.set(key, value === undefined ? undefined : deepFreeze(JSON.parse(JSON.stringify(value)) as unknown));
  }

  /** The table was emptied (a deleted session): nothing kept is true any more. */
  forgetAll(): void {
    this.cache.clear();
  }
}

/** A value and everything in it made read-only (a kept value is shared by every reader). */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
