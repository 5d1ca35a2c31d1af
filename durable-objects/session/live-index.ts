// The session's live state in the tenant's D1 index (protocol/live-state.ts decides when to write):
// the store calls `changed` when the turn or the requests waiting on people change.
//
// Written LIVE_INDEX_MS after a change, not in the same step: a request answered within that time
// (a client that answers at once, a prompt whose turn ends at once) leaves the state as it was and
// costs no write, and a busy session writes its index at most once a window. Without it every
// request asked of people cost two writes to the one D1 every tenant shares (waiting 0 → 1 → 0);
// locally, where D1 runs on the gateway's own cores, that was half the time of a client's answer
// (decision 0036). The list shows a change at most that much later.
//
// It converges by construction (decision 0049, protocol/live-state.ts): the state D1 took and the
// version of each write begun are kept in the session's storage (`store.liveRecord`), so what is owed
// outlives the instance; the session's alarm is due while anything is (`dueAt`), a new instance
// resumes it, and D1 keeps a write only over an older version.

import { publishLiveState } from "../../db/queries/sessions";
import { LiveStatePublisher } from "../../protocol/live-state";
import type { SessionStore } from "./store";
import { sessionLog } from "./session-log";

/** How long after a change the index is written: changes within it are written once, and not at all if they cancel out. */
const LIVE_INDEX_MS = 250;

/**
 * The session's publisher. `db` is read at each write (a test may give the object a failing D1);
 * `settled` runs after each write (the session sets its alarm again from `dueAt`).
 */
export function liveIndex(
  ctx: DurableObjectState,
  db: () => D1Database,
  store: SessionStore,
  settled: () => void,
  /** Mode changes held for a second person (mode-approvals.ts): they wait on people too. */
  heldModeChanges: () => number,
): LiveStatePublisher {
  return new LiveStatePublisher({
    read: () => (store.meta ? { turn: store.turn.state, waiting: store.waitingOnPeople() + heldModeChanges() } : undefined),
    load: () => store.liveRecord,
    save: (record) => {
      store.liveRecord = record;
    },
    write: (state, version) => {
      const meta = store.meta;
      if (!meta) return Promise.resolve();
      const written = publishLiveState(db(), meta.tenantId, meta.sessionId, {
        updatedAt: Date.now(),
        turnState: state.turn,
        waiting: state.waiting,
        liveVersion: version,
      }).catch((e: unknown) => {
        sessionLog(store).warn(
          "session.index_state_failed",
          "publishing the session's state to the index failed; the alarm retries",
          { ...state },
          e,
        );
        throw e;
      });
      ctx.waitUntil(written.catch(() => undefined));
      return written;
    },
    later: (fn) => setTimeout(fn, LIVE_INDEX_MS),
    settled,
    now: Date.now,
  });
}
