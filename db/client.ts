// The one way to D1: drizzle over the binding, typed by the schema. Queries live in db/queries/,
// one file per resource, and every tenant-owned query filters on the tenant id.

import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

export function dbOf(d1: D1Database) {
  return drizzle(d1, { schema });
}
