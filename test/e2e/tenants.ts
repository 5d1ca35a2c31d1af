// Tenants of their own for end-to-end tests and the real agents' (the gateway as `npm start` runs it,
// its operator token from .dev.vars).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../../scripts/local-gateway.ts";

/** The operator's token of the gateway `npm start` runs (`GATEWAY_ADMIN_TOKEN` in .dev.vars): it makes tenants. */
export function operatorToken(): string {
  const match = /^GATEWAY_ADMIN_TOKEN=(.*)$/m.exec(readFileSync(join(ROOT, ".dev.vars"), "utf8"));
  if (!match?.[1]) throw new Error(".dev.vars has no GATEWAY_ADMIN_TOKEN (copy .dev.vars.example to .dev.vars)");
  return match[1].trim();
}

/**
 * A tenant of its own, made through the operator API as a team's would be, with a client and an agent
 * key: for tests whose outcome what others leave in the dev tenant would decide (an edit nobody has
 * seen, decision 0064, makes the tenant's rules ask a person before any reader runs).
 */
export async function tenantOfItsOwn(url: string, name: string): Promise<{ client: string; agent: string; admin: string }> {
  const post = async (path: string, credential: string, body: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${credential}`, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, any>;
  };
  const slug = `own-${name}-${crypto.randomUUID().slice(0, 8)}`;
  const admin = (await post("/v1/tenants", operatorToken(), { slug, name: `Own tenant: ${name}` })).adminKey.key as string;
  const client = (await post("/v1/keys", admin, { kind: "client", label: "people" })).key as string;
  const agent = (await post("/v1/keys", admin, { kind: "agent" })).key as string;
  return { client, agent, admin };
}
