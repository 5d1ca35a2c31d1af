// The session's live state in the tenant's D1 index (protocol/live-state.ts decides when to write):
// the store calls `changed` when the turn or the requests waiting on people change.

import { touchSession } from "../../db/queries/sessions";
import { LiveStatePublisher } from "../../protocol/live-state";
import type { Env } from "../../core/env";
import type { SessionStore } from "./store";
import { sessionLog } from "./session-log";

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
    later: (fn) => queueMicrotask(fn),
  });
}
