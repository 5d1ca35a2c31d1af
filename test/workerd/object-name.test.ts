// Whether an object knows its own name (`ctx.id.name`) with our compatibility_date, for ids made by
// `idFromName` / `getByName`, including when it is woken by no stub at all: by a hibernated client
// socket or by its own alarm after an eviction. It is, in all three (and with a 2025 date as well):
// the objects can drop the SessionRef and tenant id arguments they are passed on every call. Not
// covered here: an alarm that wakes an object after the runtime itself restarted, which workerd in
// development has been seen to deliver without a name (cloudflare/partykit#391); so an object keeps
// the name it stored (its meta) as the fallback.

import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";
import { restartObject, sessionStub } from "./fuzz-faults";

/** The instances a test marked (the isolate's own memory, so a new instance after an eviction is unmarked). */
const markedInstances = new WeakSet<object>();

/** The name the object's own ctx reports, read inside the object, and whether this instance was marked. */
async function nameInside(stub: DurableObjectStub): Promise<{ name: string | undefined; marked: boolean }> {
  // SAFETY: any gateway object; only its state is read, and the instance is used as a key.
  return runInDurableObject(stub as DurableObjectStub<never>, (instance: object, state: DurableObjectState) => ({
    name: state.id.name,
    marked: markedInstances.has(instance),
  }));
}

/** Marks the running instance, so a test can tell that a later one is new (the eviction happened). */
async function mark(stub: DurableObjectStub): Promise<void> {
  // SAFETY: as above.
  await runInDurableObject(stub as DurableObjectStub<never>, (instance: object) => {
    markedInstances.add(instance);
  });
}

describe("ctx.id.name inside the gateway's objects", () => {
  it("is the name the stub was made with, by idFromName and by getByName", async () => {
    const name = `t-${crypto.randomUUID()}/s`;
    expect((await nameInside(env.SESSIONS.get(env.SESSIONS.idFromName(name)))).name).toBe(name);
    expect((await nameInside(env.AGENTS.getByName(name))).name).toBe(name);
    expect((await nameInside(env.RULES.getByName(name))).name).toBe(name);
  });

  it("survives an eviction when the object is woken again by a hibernated client socket, not by a stub", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await mark(sessionStub(t.tenantId, sessionId));
    await restartObject(sessionStub(t.tenantId, sessionId));
    await startTurn(client, agent, sessionId, "p");
    expect(await nameInside(sessionStub(t.tenantId, sessionId))).toEqual({ name: `${t.tenantId}/${sessionId}`, marked: false });
  });

  it("survives an eviction when the object is woken again by its own alarm (a permission deadline)", async () => {
    const t = await seedTenant({ permissionDeadlineMs: 300 });
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: 1, method: "session/prompt", params: { sessionId, prompt: [] } });
    await agent.peer.next(isMethod("session/prompt"));
    const asked = agent.askPermission(sessionId, { toolCallId: "slow", kind: "execute" });
    await client.next(isMethod("session/request_permission"));
    await mark(sessionStub(t.tenantId, sessionId));
    await restartObject(sessionStub(t.tenantId, sessionId));
    expect((await agent.peer.next(isResponseTo(asked), 10_000)).result).toEqual({ outcome: { outcome: "cancelled" } });
    expect(await nameInside(sessionStub(t.tenantId, sessionId))).toEqual({ name: `${t.tenantId}/${sessionId}`, marked: false });
  });
});
