// What one relayed update and one permission request cost in SQLite rows written, counted by the
// runtime itself (each cursor's rowsWritten) in the real SessionObject and AgentObject.
// The benchmark's cost table (BENCHMARKS.md) quotes these figures.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEFAULT_OPTIONS, clientWithSession, dialInAgent, isMethod, seedTenant } from "./helpers";

/** Wraps an object's sql.exec to sum the rows each statement wrote; returns a reader of the sum. */
async function countRowsWritten(stub: DurableObjectStub): Promise<() => number> {
  const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  await runInDurableObject(stub, (_instance: unknown, state: DurableObjectState) => {
    const sql = state.storage.sql;
    const exec = sql.exec.bind(sql);
    // SAFETY: the same signature as SqlStorage.exec; the wrapper only remembers the cursor.
    sql.exec = ((query: string, ...bindings: unknown[]) => {
      const cursor = exec(query, ...bindings);
      cursors.push(cursor);
      return cursor;
    }) as typeof sql.exec;
  });
  return () => cursors.reduce((sum, c) => sum + c.rowsWritten, 0);
}

describe("cost: SQLite rows written per relayed update and per permission request", () => {
  it("counts rows written per update and per permission request in the session and agent objects", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t, "cost");
    const { client, sessionId } = await clientWithSession(t, agent);
    const session = env.SESSIONS.get(env.SESSIONS.idFromName(`${t.tenantId}/${sessionId}`));
    const agentObject = env.AGENTS.get(env.AGENTS.idFromName(`${t.tenantId}/cost`));
    // Permission requests are asked only during a turn.
    client.send({ jsonrpc: "2.0", id: "turn", method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    const sessionRows = await countRowsWritten(session);
    const agentRows = await countRowsWritten(agentObject);

    const updates = 200;
    for (let i = 0; i < updates; i++) {
      agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `chunk ${i}` } });
    }
    await client.next((m) => m.params?.update?.content?.text === `chunk ${updates - 1}`, 30_000);
    const perUpdate = { session: sessionRows() / updates, agent: agentRows() / updates };

    const before = { session: sessionRows(), agent: agentRows() };
    const asks = 20;
    for (let i = 0; i < asks; i++) {
      const id = agent.askPermission(
        sessionId,
        { toolCallId: `tc${i}`, kind: "execute", rawInput: { command: `make ${i}` } },
        DEFAULT_OPTIONS,
      );
      const copy = await client.next(isMethod("session/request_permission"), 30_000);
      client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
      await agent.peer.next((m) => m.id === id, 30_000);
    }
    const perPermission = { session: (sessionRows() - before.session) / asks, agent: (agentRows() - before.agent) / asks };
    console.log(`COST ${JSON.stringify({ perUpdate, perPermission })}`);
    // 2026-12-03: 1.015 + 0.005 per update (the log row; the turn's progress mark at most once a
    // second; a block of item numbers in the AgentObject), 3 in the AgentObject per permission request.
    expect(perUpdate.session + perUpdate.agent).toBeGreaterThan(0);
    // The session's share of a permission request answered by a client (docs/ARCHITECTURE.md, "Rows
    // per permission request"): 19 before the pending request became one row with derived copies.
    // The log entry and the resolution (2), the tool call and its key index (2), the pending row in
    // and out (2), the audit outbox in and out (2), the turn's progress mark (2), the agent batch's
    // delivery mark (1); the first request of the test also marks its row asking after the rules call.
    expect(perPermission.session).toBeLessThanOrEqual(11);
    expect(perUpdate.session + perUpdate.agent).toBeLessThan(1.1);
    // The AgentObject writes nothing per frame: the agent's open requests are mapped in memory, the
    // block of item numbers is reserved when the agent connects, and the session was marked active
    // in this connection when it was opened (a session the agent speaks to after a reconnect: once).
    expect(perUpdate.agent).toBe(0);
    expect(perPermission.agent).toBe(0);
  }, 60_000);
});
