// Closing live connections when their credentials stop being valid.
// Agent connections live in AgentObjects: the API tells every agent object of the tenant at once.
// Client connections live in edge Worker invocations, which nothing can address: each one re-checks
// its own key every KEY_RECHECK_MS (connection/key-recheck.ts) and closes itself with 4401.

import { agentNames } from "../db/queries/agents";
import type { Env } from "../core/env";
import { objects } from "../durable-objects/objects";

/** Closes the agent connections that use this key (keyId null: every agent connection of the tenant). */
export async function closeAgentConnections(env: Env, tenantId: string, keyId: string | null, reason: string): Promise<void> {
  const names = await agentNames(env.DB, tenantId);
  await Promise.all(names.map((name) => objects.agent(env, tenantId, name).closeConnections(keyId, reason)));
}
