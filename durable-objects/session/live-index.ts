// The session's live state in the tenant's D1 index (protocol/live-state.ts decides when to write):
// the store calls `changed` when the turn or the requests waiting on people change.
//
// Written LIVE_INDEX_MS after a change, not in the same step: a request answered within that time
// (a client that answers at once, a prompt whose turn ends at once) leaves the state as it was and
// costs no write, and a busy session writes its index at most once a window. Without it every
// request asked of people cost two writes to the one D1 every tenant shares (waiting 0 → 1 → 0);
// locally, where D1 runs on the gateway's own cores, that was half the time of a client's answer
// (decision 0036). The list shows a change at most that much later.

import { touchSession } from "../../db/queries/sessions";
import { LiveStatePublisher } from "../../protocol/live-state";
import type { Env } from "../../core/env";
import type { SessionStore } from "./store";
import { sessionLog } from "./session-log";

/** How long after a change the index is written: changes within it are written once, and not at all if they cancel out. */
const LIVE_INDEX_MS = 250;

export function liveIndex(ctx: DurableObjectState, env: Env, store: SessionStore): LiveStatePublisher {
  return new LiveStatePublisher({
    read: () => (store.meta ? { turn: store.turn.state, waiting: store.waitingOnPeople() } : undefined),
    write: (state) => {
      const meta = store.meta;
      if (!meta) return Promise.resolve();
      const written = touchSession(env.DB, meta.tenantId, meta.sessionId, {
        updatedAt: Date.now(),
        turnState: state.turn,
        waiting: state.waiting,
      }).catch((e: unknown) => {
        sessionLog(store).warn("session.index_state_failed", "publishing the session's state to the index failed", { ...state }, e);
        throw e;
      });
      ctx.waitUntil(written.catch(() => undefined));
      return written;
    },
    later: (fn) => setTimeout(fn, LIVE_INDEX_MS),
  });
}
