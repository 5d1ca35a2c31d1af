// The session machine's table (protocol/session-machine.ts `SessionTable`): the meta, the turn and the
// ids of store.ts and the client requests waiting across the session (request-rows.ts). The one place
// outside the machine that writes the turn, through to the store (the lint rule `turnInOneModule`).

import type { SessionTable } from "../../protocol/session-machine";
import type { RequestRows } from "./request-rows";
import type { SessionStore } from "./store";

export function sessionTable(store: SessionStore, requests: RequestRows): SessionTable {
  return {
    get meta() {
      return store.meta;
    },
    get turn() {
      return store.turn;
    },
    set turn(turn) {
      store.turn = turn;
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
