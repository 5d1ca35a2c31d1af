// What a permission request answered by a client costs beyond the request itself (issue 15): no
// call to the tenant's RulesObject (the watch is the rules cache's push subscription), no read of
// the tenant's notification settings in D1 (kept for a while by the session), and no alarm write
// (the alarm only ever moves earlier). Counted in the real objects after a warm-up request, which
// pays each of them once.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, onTestFinished } from "vitest";
import { rulesCalls } from "../../durable-objects/rules/rules-object";
import type { SessionObject } from "../../durable-objects/session/session-object";
import { clientWithSession, DEFAULT_OPTIONS, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { sessionStub } from "./fuzz-faults";

type Counts = { rulesCalls: number; unseenReads: number; notifyReads: number; alarmWrites: number };

/** Counts, from now on, the calls the session makes beyond its own SQLite (restored when the test ends). */
async function countCosts(tenantId: string, sessionId: string): Promise<Counts> {
  const counts: Counts = { rulesCalls: 0, unseenReads: 0, notifyReads: 0, alarmWrites: 0 };
  const before = rulesCalls.seen;
  rulesCalls.seen = (name, method) => {
    before?.(name, method);
    if (name === tenantId && method === "unseenNow") counts.unseenReads++;
    else if (name === tenantId) counts.rulesCalls++;
  };
  onTestFinished(() => {
    rulesCalls.seen = before;
  });
  await runInDurableObject(sessionStub(tenantId, sessionId), (_instance: SessionObject, state) => {
    const storage = state.storage;
    const setAlarm = storage.setAlarm.bind(storage);
    const deleteAlarm = storage.deleteAlarm.bind(storage);
    storage.setAlarm = (...args: Parameters<typeof setAlarm>) => {
      counts.alarmWrites++;
      return setAlarm(...args);
    };
    storage.deleteAlarm = (...args: Parameters<typeof deleteAlarm>) => {
      counts.alarmWrites++;
      return deleteAlarm(...args);
    };
    // The objects' D1 binding is the isolate's one (the test's `env.DB`): a read by any object counts.
    const db = env.DB;
    const prepare = db.prepare.bind(db);
    db.prepare = (query: string) => {
      if (query.includes("notification_targets")) counts.notifyReads++;
      return prepare(query);
    };
    onTestFinished(() =>
      runInDurableObject(sessionStub(tenantId, sessionId), () => {
        storage.setAlarm = setAlarm;
        storage.deleteAlarm = deleteAlarm;
        db.prepare = prepare;
      }),
    );
  });
  return counts;
}

describe("a permission request answered by a client", () => {
  it("makes no call to the RulesObject but one read of the unseen changes after the copies are sent, reads no notification settings and writes no alarm once the session is warm", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId);
    const askAndAnswer = async (toolCallId: string) => {
      const id = agent.askPermission(
        sessionId,
        { toolCallId, kind: "execute", rawInput: { command: `make ${toolCallId}` } },
        DEFAULT_OPTIONS,
      );
      const copy = await client.next(isMethod("session/request_permission"));
      client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
      expect((await agent.peer.next(isResponseTo(id))).result.outcome).toEqual({ outcome: "selected", optionId: "allow" });
      await client.next(isMethod("_acp_gateway/permission_resolved"));
    };
    await askAndAnswer("warm");
    const counts = await countCosts(t.tenantId, sessionId);
    for (let i = 0; i < 5; i++) await askAndAnswer(`c${i}`);
    // One read of the tenant's unseen changes per request that may read content, after its copies are
    // sent (decision 0046): not on the answer's path, and nothing written when nothing is unseen.
    expect(counts).toEqual({ rulesCalls: 0, unseenReads: 5, notifyReads: 0, alarmWrites: 0 });
  });
});
