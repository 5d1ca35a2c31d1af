// A session belongs to the agent that created it. An agent that answers session/new with the id of a
// session the tenant already holds (another agent's, or its own from an earlier creation) would take
// it over: the next prompt, and whatever secrets it carries, would go to that agent, and the cwd would
// change. So such an answer is refused and the existing session is left exactly as it was.

import type { InitResult, SessionInit, SessionRef } from "./contract";
import type { SessionMeta, SessionStore } from "./store";

/**
 * The AgentObject's `init`, after the agent created (session/new) or loaded (session/load) the
 * session: the meta is stored, unless `claimRefusal` says why not, and then nothing changes.
 */
export function claim(store: SessionStore, ref: SessionRef, meta: SessionInit, opening: "new" | "load"): InitResult {
  const existing = store.meta;
  const refusal = claimRefusal(existing, ref, meta.agent, opening);
  if (refusal) return { ok: false, message: refusal };
  store.meta = {
    ...existing,
    ...meta,
    tenantId: ref.tenantId,
    sessionId: ref.sessionId,
    createdAt: existing?.createdAt ?? Date.now(),
  };
  return { ok: true };
}

/** Why an agent may not (re)initialise this session, or undefined when it may. */
function claimRefusal(existing: SessionMeta | undefined, ref: SessionRef, agent: string, opening: "new" | "load"): string | undefined {
  if (!existing) return undefined;
  if (existing.tenantId !== ref.tenantId) return `session ${ref.sessionId} belongs to another tenant`;
  if (existing.agent !== agent) return `session ${ref.sessionId} already exists and belongs to agent "${existing.agent}"`;
  if (opening === "new") return `session ${ref.sessionId} already exists; session/new must create a new session id`;
  return undefined;
}
