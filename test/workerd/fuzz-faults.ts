// Fault injection for the workerd fault tests: object restarts (the plugin's eviction), and D1
// outages or slowness inside one Durable Object. A D1 outage is the one behaviour no real peer
// produces on demand, so it is the one hand-written stand-in: a wrapper of the real binding whose
// calls fail (or wait), put in the object's test seam (`d1`, read instead of `env.DB`) until taken back.

import { env, evictDurableObject, runInDurableObject } from "cloudflare:test";
import { SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { RulesObject, rulesCalls, rulesTesting } from "../../durable-objects/rules/rules-object";
import { countFault, newCounters } from "./fuzz-session";
import { objects } from "../../durable-objects/objects";
import { RULES_SHARDS } from "../../durable-objects/rules/contract";
import { shardOf } from "../../protocol/generation-lease";
import { onTestFinished } from "vitest";

/** Counters of one fault-test file, printed for scripts/reliability-summary.ts by `printCounters`. */
export const faultCounters = newCounters();

export function injected(kind: string): void {
  countFault(faultCounters, kind);
}

export function printCounters(suite: string): void {
  console.log(`RELIABILITY ${JSON.stringify({ suite, ...faultCounters })}`);
}

export const sessionStub = (tenantId: string, sessionId: string) => objects.session(env, tenantId, sessionId);
export const agentStub = (tenantId: string, name: string) => objects.agent(env, tenantId, name);
export const rulesStub = (tenantId: string) => objects.rules(env, tenantId);

/** The shard of the tenant's rules a session takes them from. */
const shardOfSession = (tenantId: string, sessionId: string) => objects.rulesShard(env, tenantId, shardOf(sessionId, RULES_SHARDS));

/**
 * Counts the sessions' calls that reach the tenant's rules shards (the class's seam `rulesCalls`, told
 * of every instance's calls, also of instances woken later: only this tenant's shards are counted).
 */
export function countRulesCalls(tenantId: string): { snapshot: number; check: number } {
  const counts = { snapshot: 0, check: 0 };
  const before = rulesCalls.seen;
  rulesCalls.seen = (name, method) => {
    before?.(name, method);
    if (name.startsWith(`${tenantId}/`) && (method === "snapshot" || method === "check")) counts[method]++;
  };
  onTestFinished(() => {
    rulesCalls.seen = before;
  });
  return counts;
}

/** The lease the session's shard hands out (ms): lengthened where a test counts calls, so none is a renewal. */
export async function setSessionLease(tenantId: string, sessionId: string, leaseMs: number): Promise<void> {
  await runInDurableObject(shardOfSession(tenantId, sessionId), (instance: RulesObject) => {
    rulesTesting(instance).leaseMs = leaseMs;
  });
}

/** Makes the session's rules shard fail to tell it of a change (its push is lost) until the test ends. */
export async function losePushesTo(tenantId: string, sessionId: string): Promise<void> {
  await runInDurableObject(shardOfSession(tenantId, sessionId), (instance: RulesObject) => {
    rulesTesting(instance).tellSession = () => Promise.reject(new Error("push lost (test)"));
    onTestFinished(() => {
      rulesTesting(instance).tellSession = undefined;
    });
  });
}

/** Evicts an object as a restart does; one that is not running (evicted already) counts as restarted. */
export async function restartObject(stub: DurableObjectStub): Promise<void> {
  await evictDurableObject(stub).catch((error: unknown) => {
    if (!String(error).includes("not currently running")) throw error;
  });
}

/** A crash rather than an eviction: `ctx.abort()` drops the object's memory at once, mid-call. */
export async function crashObject(stub: DurableObjectStub): Promise<void> {
  // SAFETY: any gateway object; only its state is used.
  await runInDurableObject(stub as DurableObjectStub<never>, (_instance: unknown, state: DurableObjectState) => {
    try {
      state.abort("crash injected by a test");
    } catch {
      // abort throws in the calling context by design
    }
  }).catch(() => undefined);
}

/**
 * Closes the session's edge links from its side; how many it had. Its answers to the agent's
 * requests then go through the AgentObject, as whenever no edge link is open (decision 0034); the
 * edge opens one again at the agent's next request.
 */
export async function closeEdgeLinks(tenantId: string, sessionId: string): Promise<number> {
  // SAFETY: a SessionObject; only its state is used.
  return runInDurableObject(
    sessionStub(tenantId, sessionId) as DurableObjectStub<never>,
    (_instance: unknown, state: DurableObjectState) => {
      const links = state.getWebSockets("edge-link");
      for (const ws of links) ws.close(1000, "closed by a test");
      return links.length;
    },
  );
}

export async function restartBoth(tenantId: string, sessionId: string, agent: string): Promise<void> {
  await restartObject(sessionStub(tenantId, sessionId));
  await restartObject(agentStub(tenantId, agent));
  injected("session_restart");
  injected("agent_restart");
}

export type D1Mode = "down" | "slow" | "up";

/** Makes D1 fail (or answer after `slowMs`) for one object, until called again with "up". */
export async function setD1(
  stub: DurableObjectStub<SessionObject> | DurableObjectStub<RulesObject>,
  mode: D1Mode,
  slowMs = 1500,
): Promise<void> {
  // SAFETY: either object's stub; the instance is checked below.
  await runInDurableObject(stub as DurableObjectStub<never>, (instance: unknown) => {
    const seam =
      instance instanceof SessionObject ? sessionTesting(instance) : instance instanceof RulesObject ? rulesTesting(instance) : undefined;
    if (!seam) throw new Error("setD1 injects D1 faults in a SessionObject or a RulesObject");
    seam.d1 = mode === "up" ? undefined : faultyD1(env.DB, mode, slowMs);
  });
  if (mode !== "up") injected(`d1_${mode}`);
}

function faultyD1(db: D1Database, mode: "down" | "slow", slowMs: number): D1Database {
  const outage = () => Promise.reject(new Error("D1_ERROR: injected outage (test)"));
  const later = <T>(call: () => Promise<T>) => (mode === "down" ? outage() : new Promise<T>((r) => setTimeout(() => r(call()), slowMs)));
  const statement = (s: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(s, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => statement(target.bind(...values));
        if (prop === "run" || prop === "all" || prop === "first" || prop === "raw") {
          return (...args: unknown[]) => later(() => (target[prop] as (...a: unknown[]) => Promise<unknown>).apply(target, args));
        }
        return Reflect.get(target, prop, target) as unknown;
      },
    });
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (query: string) => statement(target.prepare(query));
      if (prop === "batch") return (statements: D1PreparedStatement[]) => later(() => target.batch(statements));
      if (prop === "exec") return (query: string) => later(() => target.exec(query));
      return Reflect.get(target, prop, target) as unknown;
    },
  });
}
