// The session machine's table (protocol/session-machine.ts `SessionTable`): the meta, the turn and the
// ids of store.ts and the client requests waiting across the session (request-rows.ts). The one place
// outside the machine that writes the turn, through to the store (the lint rule `turnInOneModule`).

import type { SessionTable } from "../../protocol/session-machine";
import type { TurnState } from "../../protocol/turn-state";
import type { RequestRows } from "./request-rows";
import type { SessionStore } from "./store";

/** `turnSet`: told of each change of the turn, with the turn before it (the PR's turn_complete, decision 0060). */
export function sessionTable(
  store: SessionStore,
  requests: RequestRows,
  turnSet: (before: TurnState, after: TurnState) => void,
): SessionTable {
  return {
    get meta() {
      return store.meta;
    },
    get turn() {
      return store.turn;
    },
    set turn(turn) {
      const before = store.turn;
      store.turn = turn;
      turnSet(before, turn);
    },
    get hold() {
      return store.hold;
    },
    nextId: () => store.nextId(),
    lastSeq: () => store.lastSeq(),
    addInflight: (row) => requests.addInflight(row),
    takeInflight: (gwId) => requests.takeInflight(gwId),
    inflightByClient: (connId, clientId) => requests.inflightByClient(connId, clientId),
  };
}
