// Who may answer this session's permission requests (decision 0028), as the SessionObject applies
// protocol/people/answering.ts: the answerer from a client's attachment, the facts from the request
// and the running turn, each copy's `_meta.acpGateway.answerable`, and the four-eyes request that
// nobody attached can approve (told to everyone once, until someone who can attaches).

import { type Answerer, type RequestFacts, answerable, personKey, unsatisfiable } from "../../protocol/people/answering";
import { withGatewayMeta } from "../../protocol/permissions";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { PendingRequest, SessionStore } from "./store";

/** The person behind a client, as answering judges them. A socket from before roles has no role: `approver`, what clients could do then. */
export function answererOf(client: ClientAttachment): Answerer {
  return { role: client.role ?? "approver", who: personKey(client) };
}

/** What answering knows of a pending request now. */
export function factsOf(store: SessionStore, pending: PendingRequest): RequestFacts {
  const turn = store.turn;
  return {
    options: pending.options,
    prompter: turn.state !== "idle" ? (turn.prompter ?? null) : null,
    fourEyes: pending.fourEyes ?? null,
    approvals: (pending.approvals ?? []).map((a) => a.who),
  };
}

/**
 * The params of one client's copy: the agent's, with `_meta.acpGateway.answerable` for this client's
 * person and, under four eyes, `_meta.acpGateway.fourEyes` (what it needs, the approvals so far, and
 * why nobody attached can approve it, when so).
 */
export function copyParamsFor(
  paramsText: string,
  client: ClientAttachment | undefined,
  facts: RequestFacts,
  blocked: string | null,
): string {
  const fields: Record<string, unknown> = {
    answerable: client ? answerable(answererOf(client), facts) : { optionIds: [], reason: "This copy is not addressed to a known client." },
  };
  if (facts.fourEyes) {
    fields.fourEyes = {
      require: facts.fourEyes.require,
      why: facts.fourEyes.why,
      approvals: facts.approvals.length,
      ...(blocked ? { unsatisfiable: blocked } : {}),
    };
  }
  return withGatewayMeta(paramsText, fields);
}

/** Why nobody attached (but `leaving`) can approve the request now, or null. */
export function blockedReason(facts: RequestFacts, clients: readonly ClientAttachment[], leaving?: string): string | null {
  return unsatisfiable(facts, clients.filter((c) => c.connId !== leaving).map(answererOf));
}
