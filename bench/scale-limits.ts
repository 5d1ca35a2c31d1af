// The tenant's message-rate limit at 10,000 connections and 50,000 messages a second (issue 26):
// the lease traffic per message, each object's request rate, and how far the limit holds. Ten
// thousand sockets sending fifty thousand frames a second do not fit a 2-core machine, so this runs
// the gateway's own lease classes (protocol/rate-limit.ts: every connection's RateGate and
// TenantLease, each shard's LeasePool, the TenantLimitsObject's TokenBucket) on a simulated clock,
// with every call to an object taking `rttMs` and counted by the object it reaches.

import { LeasePool, type LeaseGrant, RateGate, TokenBucket } from "../protocol/rate-limit.ts";
import { CONNECTION_RENEW_MS, LIMIT_SHARDS, type Limits, MAX_LEASE_RETRY_MS, limitsOf, slotShardOf } from "../protocol/tenant-limits.ts";

export interface LimitsScenario {
  connections: number;
  /** Messages a second across all of them (spread evenly, each connection at its share). */
  messagesPerSecond: number;
  tenantRate: number;
  seconds: number;
  rttMs: number;
  /** Shards between the connections and the tenant's object (0: every connection asks the object itself). */
  shards: number;
}

export interface LimitsOutcome {
  scenario: LimitsScenario;
  messages: number;
  admitted: number;
  refusedByTenant: number;
  /** Calls to the tenant's root object, per second, and its busiest second. */
  rootPerSecond: number;
  /** Calls to the busiest shard, per second (0 without shards). */
  busiestShardPerSecond: number;
  /** All lease calls (to the root and the shards) per message. */
  leaseCallsPerMessage: number;
  /** Messages admitted above what the tenant's bucket allows over the run (rate × seconds + burst); ≤ 0 is within. */
  overLimit: number;
}

/** @public (imported by bench/scale.ts from an esbuild bundle, which knip cannot follow) */
export async function simulateLimits(scenario: LimitsScenario): Promise<LimitsOutcome> {
  const clock = { now: 0 };
  const now = () => clock.now;
  // Events by whole millisecond (a call's round trip is a millisecond or more).
  const queue = new Map<number, (() => void)[]>();
  const later = (at: number, run: () => void) => {
    const ms = Math.ceil(at);
    const list = queue.get(ms);
    if (list) list.push(run);
    else queue.set(ms, [run]);
  };
  const bucket = new TokenBucket(scenario.tenantRate, 2 * scenario.tenantRate, 0);
  let rootCalls = 0;
  const shardCalls = new Array<number>(Math.max(1, scenario.shards)).fill(0);
  const root = (want: number): Promise<LeaseGrant> => {
    rootCalls++;
    return new Promise((resolve) =>
      later(clock.now + scenario.rttMs, () => {
        const granted = bucket.takeUpTo(want, clock.now);
        // As TenantLimitsObject.lease answers.
        const retryAfterMs = granted < want ? Math.min(MAX_LEASE_RETRY_MS, Math.max(1, bucket.msUntilTokens(want - granted))) : 0;
        resolve({ granted, retryAfterMs });
      }),
    );
  };
  const pools = Array.from({ length: scenario.shards }, () => new LeasePool(root, now));
  const limits: Limits = {
    ...limitsOf({}),
    messagesPerSecondPerConnection: 1_000_000,
    messagesPerSecondPerAgentConnection: 1_000_000,
    messagesPerSecondPerTenant: scenario.tenantRate,
  };
  const gates = Array.from({ length: scenario.connections }, (_, i) => {
    const shard = scenario.shards === 0 ? 0 : i % scenario.shards;
    const ask =
      scenario.shards === 0
        ? root
        : (want: number): Promise<LeaseGrant> => {
            shardCalls[shard] = (shardCalls[shard] ?? 0) + 1;
            return new Promise((resolve) =>
              later(clock.now + scenario.rttMs / 2, () => {
                void (pools[shard] as LeasePool).take(want).then((grant) => later(clock.now + scenario.rttMs / 2, () => resolve(grant)));
              }),
            );
          };
    return new RateGate(limits, "client", ask, now);
  });
  // Each connection sends at its share of the rate, evenly, from a random phase.
  const perConnection = scenario.messagesPerSecond / scenario.connections;
  const gap = 1000 / perConnection;
  let messages = 0;
  let admitted = 0;
  let refusedByTenant = 0;
  const end = scenario.seconds * 1000;
  gates.forEach((gate, i) => {
    const send = () => {
      messages++;
      const admission = gate.admit("session/update");
      if (admission.ok) admitted++;
      else if (admission.error.data.limit === "messagesPerSecondPerTenant") refusedByTenant++;
      if (clock.now + gap < end) later(clock.now + gap, send);
    };
    later(((i * 7919) % 1000) * (gap / 1000), send);
  });
  // Run the events in time order; let the promise callbacks of each millisecond settle before the next.
  for (let ms = 0; ms <= end + 10 * scenario.rttMs || queue.size > 0; ms++) {
    clock.now = ms;
    for (let round = 0; round < 4; round++) {
      const list = queue.get(ms);
      queue.delete(ms);
      for (const run of list ?? []) run();
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (ms > end + 60_000) break;
  }
  const seconds = scenario.seconds;
  return {
    scenario,
    messages,
    admitted,
    refusedByTenant,
    rootPerSecond: Math.round(rootCalls / seconds),
    busiestShardPerSecond: scenario.shards === 0 ? 0 : Math.round(Math.max(...shardCalls) / seconds),
    leaseCallsPerMessage: Math.round(((rootCalls + shardCalls.reduce((a, b) => a + b, 0)) / Math.max(1, messages)) * 1000) / 1000,
    overLimit: admitted - (scenario.tenantRate * seconds + 2 * scenario.tenantRate),
  };
}

export interface SlotsOutcome {
  connections: number;
  keys: number;
  /** Slot renewals a second at the tenant's root: before decision 0035 every one; now none. */
  rootBeforePerSecond: number;
  rootPerSecond: number;
  /** Renewals a second at the busiest shard (a key's connections all renew at its shard). */
  busiestShardPerSecond: number;
}

/**
 * Connection-slot renewals at 10,000 connections: each renews once every CONNECTION_RENEW_MS, at the
 * shard its key hashes to (`slotShardOf`, the gateway's own routing), spread over `keys` keys.
 * @public (imported by bench/scale.ts from an esbuild bundle)
 */
export function simulateSlots(connections: number, keys: number): SlotsOutcome {
  const perShard = new Array<number>(LIMIT_SHARDS).fill(0);
  for (let c = 0; c < connections; c++) {
    const keyId = `key_${(c % keys).toString(36).padStart(8, "0")}`;
    const s = slotShardOf(keyId);
    perShard[s] = (perShard[s] ?? 0) + 1;
  }
  const perSecond = (n: number) => Math.round((n * 1000) / CONNECTION_RENEW_MS);
  return {
    connections,
    keys,
    rootBeforePerSecond: perSecond(connections),
    rootPerSecond: 0,
    busiestShardPerSecond: perSecond(Math.max(...perShard)),
  };
}
