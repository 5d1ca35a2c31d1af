// The session's side of the unseen-changes gate (decision 0058, protocol/unseen-lease.ts `UnseenHolder`):
// under a clean lease from the tenant's root it lets rule-answered readers go itself, with no call; it
// keeps them in its own SQLite in the same event (so the answer leaves only once they are stored, and a
// new instance still reports them), and reports them whole to the root when it asks, when the root
// revokes its lease, and when one the root was told of finishes.

import { type HolderMeta, type HolderState, NO_HOLDER_STATE, UnseenHolder, type UnseenHolderIo } from "../../protocol/unseen-lease";

type MetaRow = { seq: number; installed: number; dropped: number };
type ReaderRow = { tool_call_id: string; at: number };

/** The holder's persisted state in the session's SQLite (its tables `unseen_holder`, `unseen_holder_readers`: store-migrations.ts). */
class HolderStore {
  constructor(private readonly sql: SqlStorage) {}

  restore(): HolderState {
    const meta = this.sql.exec<MetaRow>("SELECT seq, installed, dropped FROM unseen_holder").toArray()[0] ?? NO_HOLDER_STATE;
    const readers = this.sql
      .exec<ReaderRow>("SELECT tool_call_id, at FROM unseen_holder_readers")
      .toArray()
      .map((r): [string, number] => [r.tool_call_id, r.at]);
    return { seq: meta.seq, installed: meta.installed, dropped: meta.dropped, readers };
  }

  saveMeta(meta: HolderMeta): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO unseen_holder (id, seq, installed, dropped) VALUES (0, ?, ?, ?)",
      meta.seq,
      meta.installed,
      meta.dropped,
    );
  }

  saveReader(toolCallId: string, at: number | null): void {
    if (at === null) this.sql.exec("DELETE FROM unseen_holder_readers WHERE tool_call_id = ?", toolCallId);
    else this.sql.exec("INSERT OR REPLACE INTO unseen_holder_readers (tool_call_id, at) VALUES (?, ?)", toolCallId, at);
  }
}

/** The session's UnseenHolder over its SQLite, asking the root through `root` (the calls' RPC). */
export function sessionUnseenHolder(sql: SqlStorage, root: Pick<UnseenHolderIo, "step" | "renew" | "report">): UnseenHolder {
  const store = new HolderStore(sql);
  return new UnseenHolder(
    {
      now: Date.now,
      saveMeta: (meta) => store.saveMeta(meta),
      saveReader: (toolCallId, at) => store.saveReader(toolCallId, at),
      step: root.step,
      renew: root.renew,
      report: root.report,
    },
    store.restore(),
  );
}
