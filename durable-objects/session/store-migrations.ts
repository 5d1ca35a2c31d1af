// The session's storage layout and how an older one is brought up to it (store.ts).
//
// The layout has a version, kept in its own one-row table `schema_version` (not in `meta`, which
// session/delete empties). A new object is created at the current layout and the latest version in
// one step; an object at an older version runs each migration above its version, in order, once, and
// the version is written with them, all in one transaction: a start that fails half-way leaves the
// object as it was, and the next start tries again.
//
// Every object stored before versions existed is at version 0 and could be at any earlier layout,
// so migrations 1 to 5 look at the layout before they change it (each is a no-op on a layout that
// already has what it adds). Later migrations can assume the version they start from.
//
// When a migration can go: once no object below its version can start again. Objects only migrate
// when they start, so that takes either every session started once since it shipped (no sweep does
// that today) or sessions from before it gone (deleted, or older than anyone will load). Removing one
// keeps its number: the list may start above 1, and an object below the first one left is refused
// with a clear error rather than half-migrated.

import type { JsonRpcId } from "../../protocol/jsonrpc";

/**
 * The tables of the session's parts beside the store (version 7): webhook notifications (notify.ts),
 * approval links (approval-links.ts), held mode changes (mode-approvals.ts), the turn's last progress
 * (turn-watch.ts), the unseen-changes holder (unseen-holder.ts). Until version 7 each part created its
 * own in its constructor (`CREATE TABLE IF NOT EXISTS`), outside any version.
 */
function partsTables(create: "CREATE TABLE" | "CREATE TABLE IF NOT EXISTS"): string {
  return `
${create} notify (perm_id INTEGER PRIMARY KEY, after_ms INTEGER NOT NULL, due_at INTEGER, sent_at INTEGER);
${create} approval_links (
  link_id TEXT PRIMARY KEY, perm_id INTEGER NOT NULL, tool_call_id TEXT, target_id TEXT NOT NULL, target_name TEXT NOT NULL,
  expires_at INTEGER NOT NULL, used_at INTEGER, used_option TEXT, delivered INTEGER, attempts INTEGER NOT NULL DEFAULT 0, last_result TEXT);
${create} withdrawn_links (link_id TEXT PRIMARY KEY, reason TEXT NOT NULL, at INTEGER NOT NULL);
${create} mode_proposals (id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL, body TEXT NOT NULL);
${create} turn_watch (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
${create} unseen_holder (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL, installed INTEGER NOT NULL, dropped INTEGER NOT NULL);
${create} unseen_holder_readers (tool_call_id TEXT PRIMARY KEY, at INTEGER NOT NULL);
`;
}

/** The layout a new object is created at: the tables as of LATEST_VERSION. */
const CURRENT_LAYOUT = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tool_calls (id TEXT PRIMARY KEY, row TEXT NOT NULL, updated_seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE log (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL,
  agent_seq INTEGER, scan_from INTEGER, request TEXT, resolved TEXT, resolved_at INTEGER, audit TEXT);
CREATE TABLE agent_requests (out_id INTEGER PRIMARY KEY, agent_req_id TEXT NOT NULL, agent_epoch INTEGER NOT NULL, conn_id TEXT NOT NULL, method TEXT NOT NULL);
CREATE TABLE inflight (gw_id INTEGER PRIMARY KEY, conn_id TEXT NOT NULL, client_id TEXT NOT NULL, method TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX inflight_client ON inflight (conn_id, client_id);
CREATE TABLE frozen_operations (perm_id INTEGER PRIMARY KEY, operation TEXT NOT NULL);
${partsTables("CREATE TABLE")}
`;

/** The storage a migration runs against: the object's SQLite and its synchronous transaction. */
export interface MigrationStorage {
  readonly sql: SqlStorage;
  transactionSync<T>(closure: () => T): T;
}

export interface Migration {
  /** The version the object is at once this has run. */
  version: number;
  what: string;
  run(sql: SqlStorage): void;
}

/** What one start did to the layout: the version found, the version left, the migrations run. */
export interface MigrationOutcome {
  from: number;
  to: number;
  ran: number[];
  /** True when the object had no tables yet and was created at the current layout. */
  created: boolean;
}

/** Columns added to the log since it was first created (2026-12-02 → 2026-12-03). */
const LOG_COLUMNS = ["agent_seq INTEGER", "scan_from INTEGER", "request TEXT", "resolved TEXT", "resolved_at INTEGER", "audit TEXT"];

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    // Removable with 2–5: sessions from before 2026-12-04 (unversioned) no longer start.
    what: "the tables of the first layout, for an unversioned object that lacks one (CREATE IF NOT EXISTS), and its old index and copies table dropped",
    run(sql) {
      sql.exec(`
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tool_calls (id TEXT PRIMARY KEY, row TEXT NOT NULL, updated_seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL);
DROP INDEX IF EXISTS pending_deadline;
DROP TABLE IF EXISTS copies;
CREATE TABLE IF NOT EXISTS agent_requests (out_id INTEGER PRIMARY KEY, agent_req_id TEXT NOT NULL, agent_epoch INTEGER NOT NULL, conn_id TEXT NOT NULL, method TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inflight (gw_id INTEGER PRIMARY KEY, conn_id TEXT NOT NULL, client_id TEXT NOT NULL, method TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS inflight_client ON inflight (conn_id, client_id);
`);
    },
  },
  {
    version: 2,
    // Removable once no session from before 2026-12-03 (log without these columns) can start.
    what: "the log's columns added since it was created (agent_seq, scan_from, request, resolved, resolved_at, audit)",
    run(sql) {
      const have = new Set(columnsOf(sql, "log"));
      for (const column of LOG_COLUMNS) {
        if (!have.has(column.split(" ")[0] ?? "")) sql.exec(`ALTER TABLE log ADD COLUMN ${column}`);
      }
    },
  },
  {
    version: 3,
    // Removable once no session from before 2026-12-03 (a `pending` table) can start.
    what: "the `pending` table moved into its requests' log entries (the `request` column), then dropped",
    run(sql) {
      if (!tableSql(sql, "pending")) return;
      for (const r of sql.exec<LegacyPendingSql>("SELECT * FROM pending").toArray()) {
        const column = {
          agentReqId: JSON.parse(r.agent_req_id) as JsonRpcId,
          agentEpoch: r.agent_epoch,
          toolCallId: r.tool_call_id,
          createdAt: r.created_at,
          deadlineAt: r.deadline_at,
          asking: r.asking,
        };
        sql.exec("UPDATE log SET request = ? WHERE seq = ?", JSON.stringify(column), r.perm_id);
      }
      // The newest entry's bound may be above the requests just moved: scan the whole log this once.
      sql.exec("UPDATE log SET scan_from = 0 WHERE seq = (SELECT max(seq) FROM log)");
      sql.exec("DROP TABLE pending");
    },
  },
  {
    version: 4,
    // Removable once no session from before 2026-12-03 (tool_calls with a rowid) can start.
    what: "tool_calls rebuilt WITHOUT ROWID (one row written per upsert, no separate key index)",
    run(sql) {
      if (/WITHOUT ROWID/i.test(tableSql(sql, "tool_calls") ?? "WITHOUT ROWID")) return;
      sql.exec(`CREATE TABLE tool_calls_new (id TEXT PRIMARY KEY, row TEXT NOT NULL, updated_seq INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO tool_calls_new (id, row, updated_seq) SELECT id, row, updated_seq FROM tool_calls;
DROP TABLE tool_calls;
ALTER TABLE tool_calls_new RENAME TO tool_calls;`);
    },
  },
  {
    version: 5,
    // Removable once no session from before 2026-12-03 (an `audit_outbox` table) can start.
    what: "audit entries left in the old `audit_outbox` table moved into the log (after its newest entry), then the table dropped",
    run(sql) {
      if (!tableSql(sql, "audit_outbox")) return;
      // Each new entry carries the newest entry's bounds (agent_seq, scan_from), as every log write does.
      const newest = sql
        .exec<{ agent_seq: number | null; scan_from: number | null }>("SELECT agent_seq, scan_from FROM log ORDER BY seq DESC LIMIT 1")
        .toArray()[0];
      for (const r of sql.exec<{ entry: string }>("SELECT entry FROM audit_outbox ORDER BY seq").toArray()) {
        sql.exec(
          "INSERT INTO log (kind, body, at, agent_seq, scan_from, audit) VALUES ('resolution', ?, ?, ?, ?, ?)",
          JSON.stringify({ migrated: "audit_outbox" }),
          Date.now(),
          newest?.agent_seq ?? 0,
          newest?.scan_from ?? 0,
          r.entry,
        );
      }
      sql.exec("DROP TABLE audit_outbox");
    },
  },
  {
    version: 6,
    what: "frozen_operations: the operation each pending permission request was asked with (decision 0040), a row of its own beside its log entry",
    run(sql) {
      sql.exec("CREATE TABLE IF NOT EXISTS frozen_operations (perm_id INTEGER PRIMARY KEY, operation TEXT NOT NULL)");
    },
  },
  {
    version: 7,
    what: "the parts' tables into the versioned layout (each part created its own, IF NOT EXISTS, until now: an object that has one keeps it and its rows); agent_delivery's mark (sessions from before 2026-12-03) moved into the newest log entry, the table dropped",
    run(sql) {
      sql.exec(partsTables("CREATE TABLE IF NOT EXISTS"));
      if (!tableSql(sql, "agent_delivery")) return;
      const legacy = sql.exec<{ last_seq: number }>("SELECT last_seq FROM agent_delivery WHERE id = 1").toArray()[0]?.last_seq;
      const newest = sql
        .exec<{ seq: number; agent_seq: number | null }>("SELECT seq, agent_seq FROM log ORDER BY seq DESC LIMIT 1")
        .toArray()[0];
      // The newest entry carries the last agent item applied (store-log.ts `appliedAgentSeq`): the mark goes there.
      if (legacy !== undefined && newest && legacy > (newest.agent_seq ?? 0))
        sql.exec("UPDATE log SET agent_seq = ? WHERE seq = ?", legacy, newest.seq);
      else if (legacy !== undefined && !newest)
        sql.exec(
          "INSERT INTO log (kind, body, at, agent_seq, scan_from) VALUES ('resolution', ?, ?, ?, 0)",
          JSON.stringify({ migrated: "agent_delivery" }),
          Date.now(),
          legacy,
        );
      sql.exec("DROP TABLE agent_delivery");
    },
  },
];

export const LATEST_VERSION = MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);

/**
 * Brings the object's storage to LATEST_VERSION: created at the current layout when it has none,
 * otherwise each migration above its version run once, in order, in one transaction with the version.
 */
export function migrateStorage(storage: MigrationStorage, migrations: readonly Migration[] = MIGRATIONS): MigrationOutcome {
  return storage.transactionSync(() => {
    const { sql } = storage;
    const latest = migrations.reduce((v, m) => Math.max(v, m.version), 0);
    sql.exec("CREATE TABLE IF NOT EXISTS schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)");
    const stored = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0]?.version;
    if (stored === undefined && !tableSql(sql, "log")) {
      sql.exec(CURRENT_LAYOUT);
      setVersion(sql, latest);
      return { from: 0, to: latest, ran: [], created: true };
    }
    const from = stored ?? 0;
    const due = migrations.filter((m) => m.version > from).sort((a, b) => a.version - b.version);
    const first = due[0];
    if (first && first.version !== from + 1) {
      throw new Error(
        `session storage at version ${from} is older than the oldest migration kept (${first.version}); it cannot be brought up to ${latest}`,
      );
    }
    for (const m of due) m.run(sql);
    if (due.length > 0 || stored === undefined) setVersion(sql, Math.max(from, latest));
    return { from, to: Math.max(from, latest), ran: due.map((m) => m.version), created: false };
  });
}

function setVersion(sql: SqlStorage, version: number): void {
  sql.exec("INSERT INTO schema_version (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version", version);
}

function columnsOf(sql: SqlStorage, table: "log"): string[] {
  return sql
    .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)
    .toArray()
    .map((r) => r.name);
}

function tableSql(sql: SqlStorage, name: string): string | undefined {
  return sql.exec<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", name).toArray()[0]?.sql;
}

type LegacyPendingSql = {
  perm_id: number;
  agent_req_id: string;
  agent_epoch: number;
  tool_call_id: string | null;
  created_at: number;
  deadline_at: number;
  asking: number;
};
