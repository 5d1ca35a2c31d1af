// The session's storage layout (durable-objects/session/store.ts): a permission request is one log
// entry, pending requests are rebuilt from the log at start, audit entries wait in the log until D1
// has them, and an object from before this layout migrates once, losing nothing.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AuditOutbox } from "../../durable-objects/session/audit-outbox";
import { MAX_STORED_ROW_BYTES } from "../../protocol/limits";
import { freezeOperation } from "../../protocol/frozen-operation";
import { type PendingRequest, SessionStore } from "../../durable-objects/session/store";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { objects } from "../../durable-objects/objects";
import { LATEST_VERSION, MIGRATIONS, type Migration, migrateStorage } from "../../durable-objects/session/store-migrations";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { restartObject } from "./fuzz-faults";

const storedVersion = (sql: SqlStorage) => sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0]?.version;

let n = 0;
/** A session object of its own, its storage handed to `fn` (the object's own store is not used). */
async function inStorage<T>(fn: (sql: SqlStorage, storage: DurableObjectStorage) => T | Promise<T>): Promise<T> {
  const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`store-test/s${++n}-${Date.now()}`));
  return runInDurableObject(stub, (_instance: unknown, state: DurableObjectState) => fn(state.storage.sql, state.storage));
}

const frame = (id: number, toolCallId: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "session/request_permission",
    params: {
      sessionId: "s",
      toolCall: { toolCallId, kind: "execute" },
      options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }],
    },
  });

function request(store: SessionStore, agentReqId: number, toolCallId: string): PendingRequest {
  const frameParams = (JSON.parse(frame(agentReqId, toolCallId)) as { params: unknown }).params;
  return {
    permId: store.nextSeq(),
    agentReqId,
    agentEpoch: 1,
    toolCallId,
    params: JSON.stringify(frameParams),
    createdAt: 1,
    deadlineAt: 2,
    asking: 1,
    toolCall: { toolCallId, kind: "execute" },
    options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }],
    ...freezeOperation(undefined, { toolCallId, kind: "execute" }),
  };
}

function ask(store: SessionStore, agentReqId: number, toolCallId: string): number {
  const r = request(store, agentReqId, toolCallId);
  store.appendPermission(r.permId, frame(agentReqId, toolCallId), r);
  return r.permId;
}

const update = (store: SessionStore, i: number) =>
  store.append("update", JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: { i } } }));

/**
 * The layout of a session from before schema versions (2026-12-02): no version, a log without its
 * later columns, a `pending` table, an `audit_outbox` table, tool_calls with a rowid; one pending
 * request (seq 1), one resolved by a separate `resolution` entry (seq 2, 3), one tool call, one audit entry.
 */
function writeOldLayout(sql: SqlStorage): void {
  // The object's own layout (its constructor ran), replaced below by the old one: no version, old tables.
  sql.exec(`DROP TABLE schema_version; DROP TABLE log; DROP TABLE tool_calls;
CREATE TABLE tool_calls (id TEXT PRIMARY KEY, row TEXT NOT NULL, updated_seq INTEGER NOT NULL);
CREATE TABLE log (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL, agent_seq INTEGER);
CREATE TABLE pending (
  perm_id INTEGER PRIMARY KEY, agent_req_id TEXT NOT NULL, agent_epoch INTEGER NOT NULL,
  tool_call_id TEXT, params TEXT NOT NULL, created_at INTEGER NOT NULL, deadline_at INTEGER NOT NULL,
  asking INTEGER NOT NULL DEFAULT 0);
CREATE TABLE audit_outbox (seq INTEGER PRIMARY KEY, entry TEXT NOT NULL);`);
  sql.exec("INSERT INTO log (seq, kind, body, at, agent_seq) VALUES (1, 'permission', ?, 1, 7)", frame(40, "old"));
  sql.exec("INSERT INTO log (seq, kind, body, at, agent_seq) VALUES (2, 'permission', ?, 1, 7)", frame(41, "done"));
  sql.exec(
    "INSERT INTO log (seq, kind, body, at, agent_seq) VALUES (3, 'resolution', ?, 1, 8)",
    JSON.stringify({ permId: 2, decidedBy: { type: "agent_withdrew" } }),
  );
  sql.exec(
    "INSERT INTO pending VALUES (1, '40', 3, 'old', ?, 100, 200, 1)",
    JSON.stringify((JSON.parse(frame(40, "old")) as { params: unknown }).params),
  );
  sql.exec("INSERT INTO tool_calls VALUES ('old', '{\"toolCallId\":\"old\"}', 1)");
  sql.exec("INSERT INTO audit_outbox (entry) VALUES (?)", JSON.stringify({ id: "aud_legacy" }));
}

/** The pending request `permId`, as the machine hands it to the table to resolve. */
function pendingOf(store: SessionStore, permId: number): PendingRequest {
  const pending = store.pendingById(permId);
  if (!pending) throw new Error(`expected request ${permId} pending`);
  return pending;
}

const WITHDRAWN = { outcome: { outcome: "withdrawn" }, by: { type: "agent_withdrew" } } as const;

describe("session store: one log entry per permission request", () => {
  it("rebuilds the pending requests from the log at start: resolved ones are not pending, open ones are, whole", async () => {
    await inStorage((sql, storage) => {
      const store = new SessionStore(storage);
      const first = ask(store, 10, "a");
      for (let i = 0; i < 5; i++) update(store, i);
      const second = ask(store, 11, "b");
      store.resolvePermission(pendingOf(store, first), '{"resolved":1}', WITHDRAWN);
      update(store, 99);
      const again = new SessionStore(storage);
      expect(again.pending().map((p) => p.permId)).toEqual([second]);
      expect(again.pendingById(second)).toEqual(store.pendingById(second));
      expect(again.resolutionOf(first, "a")).toBe('{"resolved":1}');
    });
  });

  it("never starts the rebuild's scan above a request still open, or one whose answer is on its way", async () => {
    await inStorage((sql, storage) => {
      const store = new SessionStore(storage);
      const open = ask(store, 1, "open");
      const held = ask(store, 2, "held");
      store.resolvePermission(pendingOf(store, held), "{}", WITHDRAWN);
      store.held.add(held);
      // As if D1 had every audit entry written so far: only the open and held requests keep the bound down.
      store.auditCursor = store.lastSeq();
      update(store, 1);
      // The answer never reached the agent: the request is pending again, and must survive a restart.
      const pending = store.pendingById(open);
      if (!pending) throw new Error("expected the open request");
      store.reopenPermission({ ...pending, permId: held, agentReqId: 2, toolCallId: "held" });
      const again = new SessionStore(storage);
      expect(again.pending().map((p) => p.permId)).toEqual([open, held]);
    });
  });

  it("session/delete forgets the log but keeps the audit entries D1 has not taken, which then reach D1", async () => {
    const t = await seedTenant();
    const id = `aud_forget_${Date.now()}`;
    await inStorage(async (sql, storage) => {
      const store = new SessionStore(storage);
      const r = request(store, 5, "gone");
      const audit = {
        id,
        tenantId: t.tenantId,
        sessionId: "s",
        agent: "a",
        toolCallId: "gone",
        outcome: "cancelled" as const,
        decidedBy: "cancel" as const,
        at: Date.now(),
      };
      store.appendPermission(r.permId, frame(5, "gone"), r, { text: "{}", audit });
      update(store, 1);
      store.forget();
      expect(sql.exec<{ n: number }>("SELECT count(*) AS n FROM log").one().n).toBe(1);
      // No budget object in this test: every batch is kept in full.
      const budget = { charge: () => Promise.resolve({ kept: true, resetsAt: 0 }), spent: () => undefined };
      const outbox = new AuditOutbox(sql, env.DB, new SessionStore(storage), budget);
      expect(outbox.waiting()).toBe(1);
      expect(await outbox.flush()).toBe(true);
      expect(outbox.waiting()).toBe(0);
    });
    const row = await env.DB.prepare("SELECT outcome FROM decision_audit WHERE id = ?").bind(id).first();
    expect(row).toEqual({ outcome: "cancelled" });
  });
});

describe("session store: an object from before this layout", () => {
  it("migrates once: pending rows into their log entries, the audit outbox into the log, tool_calls WITHOUT ROWID", async () => {
    await inStorage((sql, storage) => {
      writeOldLayout(sql);

      const store = new SessionStore(storage);
      expect(store.schema).toEqual({ from: 0, to: LATEST_VERSION, ran: MIGRATIONS.map((m) => m.version), created: false });
      expect(storedVersion(sql)).toBe(LATEST_VERSION);
      expect(store.appliedAgentSeq).toBe(8);
      expect(store.pending()).toEqual([
        expect.objectContaining({
          permId: 1,
          agentReqId: 40,
          agentEpoch: 3,
          toolCallId: "old",
          createdAt: 100,
          deadlineAt: 200,
          asking: 1,
        }),
      ]);
      expect(store.pendingById(1)?.options.map((o) => o.optionId)).toEqual(["allow"]);
      expect(store.resolutionOf(2, "done")).toContain("agent_withdrew");
      expect(store.toolCall("old")).toEqual({ toolCallId: "old" });
      const tables = sql.exec<{ name: string; sql: string }>("SELECT name, sql FROM sqlite_master WHERE type = 'table'").toArray();
      expect(tables.map((r) => r.name)).not.toContain("pending");
      expect(tables.map((r) => r.name)).not.toContain("audit_outbox");
      expect(tables.find((r) => r.name === "tool_calls")?.sql).toMatch(/WITHOUT ROWID/);
      const audits = () => sql.exec<{ audit: string }>("SELECT audit FROM log WHERE audit IS NOT NULL").toArray();
      expect(audits()).toEqual([{ audit: JSON.stringify({ id: "aud_legacy" }) }]);
      // Once: a second start finds the new layout and changes nothing.
      const rows = sql.exec<{ n: number }>("SELECT count(*) AS n FROM log").one().n;
      const again = new SessionStore(storage);
      expect(again.schema).toEqual({ from: LATEST_VERSION, to: LATEST_VERSION, ran: [], created: false });
      expect(storedVersion(sql)).toBe(LATEST_VERSION);
      expect(sql.exec<{ n: number }>("SELECT count(*) AS n FROM log").one().n).toBe(rows);
      expect(again.pending().map((p) => p.permId)).toEqual([1]);
      expect(audits()).toHaveLength(1);
    });
  });

  it("hands out ids that never repeat across restarts, from a block reserved in meta", async () => {
    await inStorage((sql, storage) => {
      const store = new SessionStore(storage);
      const ids = [store.nextId(), store.nextId(), store.nextId()];
      const afterRestart = new SessionStore(storage).nextId();
      expect(new Set([...ids, afterRestart]).size).toBe(4);
      expect(afterRestart).toBeGreaterThan(Math.max(...ids));
      const written = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'next_id'").one().value;
      expect(Number(written)).toBeGreaterThanOrEqual(afterRestart);
    });
  });
});

describe("session store: schema versions (store-migrations.ts)", () => {
  it("a new object is created at the current layout and the latest version, running no migration", async () => {
    await inStorage((sql, storage) => {
      // The object's constructor created it; a second start (this store) finds the latest version.
      expect(storedVersion(sql)).toBe(LATEST_VERSION);
      expect(new SessionStore(storage).schema).toEqual({ from: LATEST_VERSION, to: LATEST_VERSION, ran: [], created: false });
      const columns = sql
        .exec<{ name: string }>("SELECT name FROM pragma_table_info('log')")
        .toArray()
        .map((r) => r.name);
      expect(columns).toEqual(["seq", "kind", "body", "at", "agent_seq", "scan_from", "request", "resolved", "resolved_at", "audit"]);
    });
  });

  it("an evicted object with the old layout migrates on its next start, once, keeping its data; the start after runs none", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`store-test/restart-${++n}-${Date.now()}`));
    await runInDurableObject(stub, (_: SessionObject, state: DurableObjectState) => writeOldLayout(state.storage.sql));
    await restartObject(stub);
    const first = await runInDurableObject(stub, (instance: SessionObject, state: DurableObjectState) => {
      const { store } = sessionTesting(instance);
      return {
        schema: store.schema,
        version: storedVersion(state.storage.sql),
        pending: store.pending().map((p) => [p.permId, p.agentReqId, p.toolCallId]),
        toolCall: store.toolCall("old"),
        resolution: store.resolutionOf(2, "done"),
        audits: state.storage.sql.exec("SELECT audit FROM log WHERE audit IS NOT NULL").toArray().length,
      };
    });
    expect(first).toEqual({
      schema: { from: 0, to: LATEST_VERSION, ran: MIGRATIONS.map((m) => m.version), created: false },
      version: LATEST_VERSION,
      pending: [[1, 40, "old"]],
      toolCall: { toolCallId: "old" },
      resolution: expect.stringContaining("agent_withdrew") as unknown,
      audits: 1,
    });
    await restartObject(stub);
    const second = await runInDurableObject(stub, (instance: SessionObject, state: DurableObjectState) => ({
      schema: sessionTesting(instance).store.schema,
      version: storedVersion(state.storage.sql),
      pending: sessionTesting(instance).store.pending().length,
      audits: state.storage.sql.exec("SELECT audit FROM log WHERE audit IS NOT NULL").toArray().length,
    }));
    expect(second).toEqual({
      schema: { from: LATEST_VERSION, to: LATEST_VERSION, ran: [], created: false },
      version: LATEST_VERSION,
      pending: 1,
      audits: 1,
    });
  });

  it("migrations run in one transaction with the version: one that throws leaves the tables and the version as they were", async () => {
    await inStorage((sql, storage) => {
      const before = storedVersion(sql) ?? 0;
      const migrations: Migration[] = [
        { version: before + 1, what: "adds a table", run: (s) => s.exec("CREATE TABLE added_by_test (x INTEGER)") },
        {
          version: before + 2,
          what: "fails",
          run: () => {
            throw new Error("injected migration failure");
          },
        },
      ];
      expect(() => migrateStorage(storage, migrations)).toThrow("injected migration failure");
      expect(storedVersion(sql)).toBe(before);
      expect(sql.exec("SELECT 1 FROM sqlite_master WHERE name = 'added_by_test'").toArray()).toHaveLength(0);
      // Both fixed: the next start runs them, in order, once.
      const fixed = [migrations[0] as Migration, { version: before + 2, what: "fixed", run: () => undefined }];
      expect(migrateStorage(storage, fixed)).toEqual({ from: before, to: before + 2, ran: [before + 1, before + 2], created: false });
      expect(migrateStorage(storage, fixed).ran).toEqual([]);
      expect(storedVersion(sql)).toBe(before + 2);
    });
  });

  it("an object older than the oldest migration kept is refused with a clear error, not half-migrated", async () => {
    await inStorage((sql, storage) => {
      const at = storedVersion(sql) ?? 0;
      const kept: Migration[] = [{ version: at + 2, what: "needs the one removed before it", run: () => undefined }];
      expect(() => migrateStorage(storage, kept)).toThrow(
        `session storage at version ${at} is older than the oldest migration kept (${at + 2})`,
      );
      expect(storedVersion(sql)).toBe(at);
    });
  });
});

/**
 * A session's storage as the code before version 7 made it (main at 8e20b2b, 2026-12-07): the layout at
 * version 6, and beside it the tables each part created in its constructor, outside any version.
 */
const VERSION_6_WITH_PARTS = `
CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
INSERT INTO schema_version (id, version) VALUES (1, 6);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tool_calls (id TEXT PRIMARY KEY, row TEXT NOT NULL, updated_seq INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE log (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL,
  agent_seq INTEGER, scan_from INTEGER, request TEXT, resolved TEXT, resolved_at INTEGER, audit TEXT);
CREATE TABLE agent_requests (out_id INTEGER PRIMARY KEY, agent_req_id TEXT NOT NULL, agent_epoch INTEGER NOT NULL, conn_id TEXT NOT NULL, method TEXT NOT NULL);
CREATE TABLE inflight (gw_id INTEGER PRIMARY KEY, conn_id TEXT NOT NULL, client_id TEXT NOT NULL, method TEXT NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX inflight_client ON inflight (conn_id, client_id);
CREATE TABLE frozen_operations (perm_id INTEGER PRIMARY KEY, operation TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notify (perm_id INTEGER PRIMARY KEY, after_ms INTEGER NOT NULL, due_at INTEGER, sent_at INTEGER);
CREATE TABLE IF NOT EXISTS approval_links (
  link_id TEXT PRIMARY KEY, perm_id INTEGER NOT NULL, tool_call_id TEXT, target_id TEXT NOT NULL, target_name TEXT NOT NULL,
  expires_at INTEGER NOT NULL, used_at INTEGER, used_option TEXT, delivered INTEGER, attempts INTEGER NOT NULL DEFAULT 0, last_result TEXT);
CREATE TABLE IF NOT EXISTS withdrawn_links (link_id TEXT PRIMARY KEY, reason TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS mode_proposals (id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS turn_watch (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS unseen_holder (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL, installed INTEGER NOT NULL, dropped INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS unseen_holder_readers (tool_call_id TEXT PRIMARY KEY, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS agent_delivery (id INTEGER PRIMARY KEY CHECK (id = 1), last_seq INTEGER NOT NULL);
`;

/** One row in each part's table (and the old delivery mark, 12, above the log's 5). */
const PARTS_ROWS = `
INSERT INTO log (seq, kind, body, at, agent_seq, scan_from) VALUES (1, 'update', '{}', 1, 5, 0);
INSERT INTO notify VALUES (1, 60000, 70000, NULL);
INSERT INTO approval_links (link_id, perm_id, target_id, target_name, expires_at) VALUES ('l1', 1, 't1', 'ops', 90000);
INSERT INTO withdrawn_links VALUES ('l0', 'resolved', 5);
INSERT INTO mode_proposals VALUES ('p1', 80000, '{"proposal":{"id":"p1"}}');
INSERT INTO turn_watch VALUES (1, 4242);
INSERT INTO unseen_holder VALUES (0, 3, 1, 0);
INSERT INTO unseen_holder_readers VALUES ('tc1', 9);
INSERT INTO agent_delivery VALUES (1, 12);
`;

const PARTS_TABLES = [
  "notify",
  "approval_links",
  "withdrawn_links",
  "mode_proposals",
  "turn_watch",
  "unseen_holder",
  "unseen_holder_readers",
];

/** Every table of the object's own (not SQLite's or the platform's). */
function ownTables(sql: SqlStorage): string[] {
  return sql
    .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
    .toArray()
    .map((r) => r.name);
}

function dropEverything(sql: SqlStorage): void {
  for (const name of ownTables(sql)) sql.exec(`DROP TABLE ${name}`);
}

describe("session store: the parts' tables are in the versioned layout (version 7)", () => {
  it("a new object is created with every part's table by the layout itself, and no agent_delivery", async () => {
    await inStorage((sql, storage) => {
      dropEverything(sql);
      expect(migrateStorage(storage)).toEqual({ from: 0, to: LATEST_VERSION, ran: [], created: true });
      const tables = ownTables(sql);
      for (const table of PARTS_TABLES) expect(tables).toContain(table);
      expect(tables).not.toContain("agent_delivery");
    });
  });

  it("a session the code before made (version 6, each part's table made by its constructor) opens at version 7 keeping every row", async () => {
    const stub = env.SESSIONS.get(env.SESSIONS.idFromName(`store-test/v6-${++n}-${Date.now()}`));
    const rowsOf = (sql: SqlStorage) => Object.fromEntries(PARTS_TABLES.map((t) => [t, sql.exec(`SELECT * FROM ${t}`).toArray()]));
    const before = await runInDurableObject(stub, (_: SessionObject, state: DurableObjectState) => {
      dropEverything(state.storage.sql);
      state.storage.sql.exec(VERSION_6_WITH_PARTS);
      state.storage.sql.exec(PARTS_ROWS);
      return rowsOf(state.storage.sql);
    });
    await restartObject(stub);
    const after = await runInDurableObject(stub, (instance: SessionObject, state: DurableObjectState) => {
      const { store } = sessionTesting(instance);
      return {
        schema: store.schema,
        rows: rowsOf(state.storage.sql),
        applied: store.appliedAgentSeq,
        tables: ownTables(state.storage.sql),
      };
    });
    expect(after.schema).toEqual({ from: 6, to: LATEST_VERSION, ran: [7], created: false });
    expect(after.rows).toEqual(before);
    for (const table of PARTS_TABLES) expect(after.rows[table]).toHaveLength(1);
    // The old delivery mark is kept (in the newest log entry), its table gone: an item at or below 12 is not applied again.
    expect(after.applied).toBe(12);
    expect(after.tables).not.toContain("agent_delivery");
    await restartObject(stub);
    const again = await runInDurableObject(stub, (instance: SessionObject, state: DurableObjectState) => ({
      schema: sessionTesting(instance).store.schema,
      rows: rowsOf(state.storage.sql),
      applied: sessionTesting(instance).store.appliedAgentSeq,
    }));
    expect(again).toEqual({ schema: { from: LATEST_VERSION, to: LATEST_VERSION, ran: [], created: false }, rows: before, applied: 12 });
  });
});

describe("session store: meta read from memory, written through", () => {
  it("reads after writes agree in the instance, in a second store over the same storage, and after a restart", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { sessionId } = await clientWithSession(t, agent);
    const stub = objects.session(env, t.tenantId, sessionId);
    const written = await runInDurableObject(stub, (instance: SessionObject, state: DurableObjectState) => {
      const { store } = sessionTesting(instance);
      const meta = store.meta;
      if (!meta) throw new Error("expected the session's meta");
      store.meta = { ...meta, title: "cached and written" };
      store.unindexPending = { tenantId: t.tenantId, sessionId };
      store.unindexPending = undefined;
      store.foldedAt = 7;
      const fresh = new SessionStore(state.storage); // reads SQLite, not this instance's memory
      return {
        here: [store.meta?.title, store.unindexPending, store.foldedAt],
        fresh: [fresh.meta?.title, fresh.unindexPending, fresh.foldedAt],
      };
    });
    expect(written).toEqual({ here: ["cached and written", undefined, 7], fresh: ["cached and written", undefined, 7] });
    await restartObject(stub);
    expect((await stub.snapshot())?.title).toBe("cached and written");
    const after = await runInDurableObject(stub, (instance: SessionObject) => {
      const { store } = sessionTesting(instance);
      return [store.meta?.title, store.unindexPending, store.foldedAt, store.turn.state];
    });
    expect(after).toEqual(["cached and written", undefined, 7, "idle"]);
  });

  it("a meta value read is frozen: changing it without writing it back throws instead of drifting from SQLite", async () => {
    await inStorage((_sql, storage) => {
      const store = new SessionStore(storage);
      store.meta = {
        tenantId: "t",
        sessionId: "s",
        agent: "a",
        cwd: "/",
        deadlineMs: 1,
        createdAt: 1,
        result: { modes: { currentModeId: "x" } },
      };
      const meta = store.meta;
      if (!meta) throw new Error("expected the meta just written");
      expect(() => {
        (meta as { title?: string }).title = "lost";
      }).toThrow(TypeError);
      expect(() => {
        (meta.result as { modes: { currentModeId: string } }).modes.currentModeId = "y";
      }).toThrow(TypeError);
      expect(new SessionStore(storage).meta).toEqual(store.meta);
    });
  });

  it("forget empties the meta in memory as in SQLite: the session is gone for the instance and after a restart", async () => {
    await inStorage((_sql, storage) => {
      const store = new SessionStore(storage);
      store.meta = { tenantId: "t", sessionId: "s", agent: "a", cwd: "/", deadlineMs: 1, createdAt: 1 };
      store.foldedAt = 3;
      expect(store.meta?.sessionId).toBe("s");
      store.forget();
      expect([store.meta, store.foldedAt, store.turn.state]).toEqual([undefined, 0, "idle"]);
      const again = new SessionStore(storage);
      expect([again.meta, again.foldedAt]).toEqual([undefined, 0]);
    });
  });
});

describe("session store: a request at the size limits", () => {
  it("a near-limit request whose tool call holds a near-limit command resolves, and its audit reaches D1 (the operation cut to its bound, with its length and SHA-256)", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const near = 1024 * 1024 - 4 * 1024; // each frame within the frame limit; together above SQLite's row cap
    agent.update(sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "big",
      kind: "execute",
      rawInput: { command: `x${"y".repeat(near)}` },
    });
    // The request's tool call merged over the row (its frozen operation, decision 0040) just within the stored-row bound.
    const id = agent.askPermission(sessionId, { toolCallId: "big", title: "z".repeat(near - 150_000) });
    const copy = await client.next(isMethod("session/request_permission"), 15_000);
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next(isResponseTo(id), 15_000)).result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
    expect((await client.next(isMethod("_acp_gateway/permission_resolved"), 15_000)).params.toolCallId).toBe("big");
    let row: { outcome: string; operation: string } | null = null;
    for (let i = 0; i < 100 && !row; i++) {
      row = await env.DB.prepare("SELECT outcome, operation FROM decision_audit WHERE tenant_id = ? AND tool_call_id = 'big'")
        .bind(t.tenantId)
        .first();
      if (!row) await scheduler.wait(50);
    }
    expect(row?.outcome).toBe("selected");
    expect(row?.operation.startsWith("xyyy")).toBe(true);
    expect(row?.operation).toMatch(/cut: \d+ bytes in full, sha256 [0-9a-f]{64}\]$/);
    expect(new TextEncoder().encode(row?.operation).length).toBeLessThanOrEqual(4 * 1024);
    // The request's row, with its resolution and audit entry, within SQLite's row cap (workerd's own SQLite does not enforce it).
    const bytes = await runInDurableObject(
      objects.session(env, t.tenantId, sessionId),
      (_: unknown, state: DurableObjectState) =>
        state.storage.sql
          .exec<{ n: number }>(
            "SELECT length(CAST(body AS BLOB)) + length(CAST(request AS BLOB)) + length(CAST(resolved AS BLOB)) + length(CAST(audit AS BLOB)) + 64 AS n FROM log WHERE kind = 'permission'",
          )
          .one().n,
    );
    expect(bytes).toBeLessThanOrEqual(MAX_STORED_ROW_BYTES);
  }, 60_000);

  it("a request whose operation (its tool call merged over the row) is past the stored-row bound is refused with a clear limit error, never judged on less", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const near = 1024 * 1024 - 4 * 1024; // each frame within the frame limit; together above SQLite's row cap
    agent.update(sessionId, {
      sessionUpdate: "tool_call",
      toolCallId: "big",
      kind: "execute",
      rawInput: { command: `x${"y".repeat(near)}` },
    });
    const id = agent.askPermission(sessionId, { toolCallId: "big", title: "z".repeat(near) });
    const refused = await agent.peer.next(isResponseTo(id), 15_000);
    expect(refused.error.code).toBe(-32029);
    expect(refused.error.data.reason).toBe("operation_too_large");
    expect(refused.error.message).toMatch(/cannot be shown and judged whole/);
    const notice = await client.next(isMethod("_acp_gateway/limit_reached"), 15_000);
    expect(notice.params.data.reason).toBe("operation_too_large");
  }, 60_000);
});
