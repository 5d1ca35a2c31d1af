// A session belongs to the agent that created it. An agent that answers session/new with the id of a
// session the tenant already holds (another agent's, or its own from an earlier creation) would take
// it over: the next prompt, and whatever secrets it carries, would go to that agent, and the cwd would
// change. So such an answer is refused and the existing session is left exactly as it was.

import type { SessionRef } from "./contract";
import type { SessionMeta } from "./store";

/** Why an agent may not (re)initialise this session, or undefined when it may. */
export function claimRefusal(
  existing: SessionMeta | undefined,
  ref: SessionRef,
  agent: string,
  opening: "new" | "load",
): string | undefined {
  if (!existing) return undefined;
  if (existing.tenantId !== ref.tenantId) return `session ${ref.sessionId} belongs to another tenant`;
  if (existing.agent !== agent) return `session ${ref.sessionId} already exists and belongs to agent "${existing.agent}"`;
  if (opening === "new") return `session ${ref.sessionId} already exists; session/new must create a new session id`;
  return undefined;
}
