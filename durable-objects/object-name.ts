// Who an object is, from the name its stub was made with (`idFromName` / `getByName`), which
// `ctx.id.name` reports inside the object, also after an eviction (test/workerd/object-name.test.ts):
// SESSIONS `${tenantId}/${sessionId}`, AGENTS `${tenantId}/${agent}`, CONNECTIONS
// `${tenantId}/${connectionId}`, RULES `${tenantId}`. The name is split at the FIRST "/": tenant ids
// never contain one, session ids may. Undefined when workerd lost the name (an alarm after a runtime
// restart has been seen without one); each object then falls back to what it stored.

/** The tenant and the rest of a `${tenantId}/${rest}` name, or undefined without a name (or without a "/"). */
export function splitName(name: string | undefined): { tenantId: string; rest: string } | undefined {
  if (name === undefined) return undefined;
  const slash = name.indexOf("/");
  return slash < 0 ? undefined : { tenantId: name.slice(0, slash), rest: name.slice(slash + 1) };
}
