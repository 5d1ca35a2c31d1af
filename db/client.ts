// The one way to D1: drizzle over the binding, typed by the schema. Queries live in db/queries/,
// one file per resource, and every tenant-owned query filters on the tenant id.

import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

type Db = ReturnType<typeof drizzle<typeof schema>>;

/** One drizzle instance per binding: building one walks the whole schema (a CPU profile of a session's requests showed it at 4 %). */
const instances = new WeakMap<D1Database, Db>();

export function dbOf(d1: D1Database): Db {
  let db = instances.get(d1);
  if (!db) {
    db = drizzle(d1, { schema });
    instances.set(d1, db);
  }
  return db;
}
