// Clients whose socket dropped and who may still resume their stream (decision 0050's window): the
// PR's `client_disconnected` is owed for each only once the window lapsed with no resume (decision
// 0060). Kept in the session's meta table, not memory: an instance evicted in the window is woken by
// the alarm (session-deadlines.ts) and still announces them. One row for all: drops are rare, and the
// list is bounded as the kept streams are (MAX_RETAINED, retained-streams.ts).

import type { PeerView } from "../../protocol/session-attach";
import { MetaTable } from "../meta-table";

interface Departure {
  connId: string;
  peer: PeerView;
  /** When the client's stream lapses: a resume after it is refused, so the client is gone. */
  at: number;
}

/** The meta table's key (store.ts owns the others; none is this one). */
const KEY = "departures";

export class Departures {
  private readonly rows: MetaTable;

  constructor(sql: SqlStorage) {
    this.rows = new MetaTable(sql);
  }

  /**
   * A client's socket dropped with its stream kept until `at`. Past `max` owed, the oldest are given
   * back to be announced now: the session keeps no more streams than that (retained-streams.ts lets the
   * oldest go), so those clients can no longer resume.
   */
  add(connId: string, peer: PeerView, at: number, max: number): { connId: string; peer: PeerView }[] {
    const list = [...this.list().filter((d) => d.connId !== connId), { connId, peer, at }];
    const over = list.splice(0, Math.max(0, list.length - max));
    this.write(list);
    return over;
  }

  /** The client is back (its stream resumed, or the connection attached again): nothing is owed. */
  back(connId: string): void {
    const list = this.list();
    if (list.some((d) => d.connId === connId)) this.write(list.filter((d) => d.connId !== connId));
  }

  /** When the next one is owed, for the alarm. */
  nextAt(): number | undefined {
    const list = this.list();
    return list.length === 0 ? undefined : Math.min(...list.map((d) => d.at));
  }

  /** The departures owed at `now`, taken out: each is announced once. */
  due(now: number): { connId: string; peer: PeerView }[] {
    const list = this.list();
    const owed = list.filter((d) => d.at <= now);
    if (owed.length > 0) this.write(list.filter((d) => d.at > now));
    return owed;
  }

  private list(): readonly Departure[] {
    return this.rows.get<Departure[]>(KEY) ?? [];
  }

  private write(list: Departure[]): void {
    this.rows.set(KEY, list.length === 0 ? undefined : list);
  }
}
