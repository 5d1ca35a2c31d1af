// Exactly-once delivery from the AgentObject. It re-sends what a failed call may not have handed on
// (also after its restart), so the session skips items it has already applied. Items are numbered by
// the AgentObject in the order it accepted them and arrive in that order; the highest applied number
// is kept in the log row each item writes (store.ts `appliedAgentSeq`), not in a row of its own.
// Items that write no log row (answers, the agent's departure, its $/cancel_request, a routed
// request) are applied idempotently by the session instead, so one seen again after a restart of
// the session is harmless.

import type { FromAgent } from "./contract";
import type { SessionStore } from "./store";

// Sessions from before the mark moved into the log kept it in a table of its own: store-migrations.ts
// (version 7) moved it into the newest entry.
export class AgentDelivery {
  constructor(private readonly store: SessionStore) {}

  /**
   * True the first time an item is seen; it then counts as applied (also if applying it throws).
   * The agent's departure and answers are applied idempotently and neither checked nor counted: the
   * AgentObject numbers the items it makes itself (a departure, an error in place of an answer) from
   * its own counter, above any range it granted the edge, and counting them would make the session
   * skip the edge's items still on their way from that range (protocol/edge-routing.ts).
   */
  take(item: FromAgent): boolean {
    if (item.seq === undefined || item.kind === "gone" || item.kind === "response") return true;
    if (item.seq <= this.store.appliedAgentSeq) return false;
    this.store.appliedAgentSeq = item.seq;
    return true;
  }
}
