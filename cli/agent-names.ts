// "Not connected" means two things to a person: a registered agent that is offline (start it) and a
// name the tenant has no agent under (a typo). The gateway answers both alike on /acp, so the bridge
// asks the tenant's agents (GET /v1/agents, which a client key may read) and names the second.

type Json = Record<string, any>;

/** The REST base for a gateway URL given as http(s) or ws(s). */
function restBase(url: URL): string {
  const base = new URL(url.toString());
  base.protocol = base.protocol === "wss:" || base.protocol === "https:" ? "https:" : "http:";
  base.search = "";
  return base.toString().replace(/\/+$/, "");
}

/**
 * The error to give the editor for an `agent_not_connected` answer: unchanged when the agent exists
 * (or the list cannot be read), else one that says there is no such agent and lists the known names.
 */
export async function explainAgentError(url: URL, key: string, agent: string, error: Json): Promise<Json> {
  let names: string[];
  try {
    const response = await fetch(`${restBase(url)}/v1/agents?limit=100`, { headers: { Authorization: `Bearer ${key}` } });
    if (!response.ok) return error;
    const page = (await response.json()) as { items?: Array<{ name?: unknown }>; nextCursor?: unknown };
    names = (page.items ?? []).map((a) => a.name).filter((n): n is string => typeof n === "string");
    if (names.includes(agent) || page.nextCursor) return error; // registered (or too many to tell): offline
  } catch {
    return error;
  }
  const known = names.length > 0 ? `its agents: ${names.map((n) => `"${n}"`).join(", ")}` : "it has no agents yet";
  return {
    ...error,
    message: `There is no agent named "${agent}" in this tenant (${known}); check --agent`,
    data: { ...(error.data as Json), reason: "agent_unknown", agents: names },
  };
}
