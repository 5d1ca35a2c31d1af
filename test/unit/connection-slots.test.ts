// Connection slots per key, off the tenant's root (protocol/tenant-limits.ts, decision 0035): every
// connection of a key is counted in the one shard its key hashes to, so the per-key limit is exact
// there; keys spread over the shards; and the table a shard keeps (SlotTable), as a model: `open`
// never takes a key past its limit, a slot not renewed within the TTL is free, a close frees it, and
// a renewal after a restart takes it back.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CONNECTION_RENEW_MS, CONNECTION_TTL_MS, LIMIT_SHARDS, SlotTable, slotShardOf } from "../../protocol/tenant-limits";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

type Op =
  | { kind: "open"; key: number; conn: number }
  | { kind: "renew"; key: number; conn: number }
  | { kind: "close"; key: number; conn: number }
  | { kind: "wait"; ms: number }
  | { kind: "restart" };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("open" as const), key: fc.nat(2), conn: fc.nat(9) }),
  fc.record({ kind: fc.constant("renew" as const), key: fc.nat(2), conn: fc.nat(9) }),
  fc.record({ kind: fc.constant("close" as const), key: fc.nat(2), conn: fc.nat(9) }),
  fc.record({ kind: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 2 * CONNECTION_RENEW_MS }) }),
  fc.constant({ kind: "restart" as const }),
);

describe("connection slots per key", () => {
  it("every connection of a key opens, renews and closes at one shard, in range; many keys spread over the shards", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 30 }), (keyId) => {
        const shard = slotShardOf(keyId);
        expect(Number.isInteger(shard) && shard >= 0 && shard < LIMIT_SHARDS).toBe(true);
        expect(slotShardOf(keyId)).toBe(shard);
      }),
      { numRuns: RUNS },
    );
    // 100 keys of the form the gateway mints reach most of the 64 shards, none with many keys.
    const counts = new Map<number, number>();
    for (let i = 0; i < 100; i++) {
      const s = slotShardOf(`key_${i.toString(36).padStart(8, "0")}`);
      counts.set(s, (counts.get(s) ?? 0) + 1);
    }
    expect(counts.size).toBeGreaterThan(40);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(6);
  });

  it("a shard's table never lets `open` take a key past its limit; lapsed and closed slots are free; a renewal after a restart takes its slot back (model)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(op, { maxLength: 60 }), (limit, ops) => {
        let table = new SlotTable();
        let now = 0;
        // The model: per key, connection → lapses at; and the connections whose slot a restart forgot.
        const model = new Map<number, Map<number, number>>();
        const liveOf = (key: number) => {
          const m = model.get(key) ?? new Map<number, number>();
          model.set(key, m);
          for (const [c, at] of m) if (at <= now) m.delete(c);
          return m;
        };
        for (const o of ops) {
          if (o.kind === "wait") now += o.ms;
          else if (o.kind === "restart") {
            table = new SlotTable();
            model.clear();
          } else if (o.kind === "open") {
            const live = liveOf(o.key);
            const had = live.has(o.conn);
            const outcome = table.open(`k${o.key}`, `c${o.conn}`, limit, now);
            // Refused exactly when a new connection would pass the limit, with the count it saw.
            if (!had && live.size >= limit) expect(outcome).toEqual({ ok: false, open: live.size });
            else {
              expect(outcome).toEqual({ ok: true });
              live.set(o.conn, now + CONNECTION_TTL_MS);
            }
          } else if (o.kind === "renew") {
            table.renew(`k${o.key}`, `c${o.conn}`, now);
            liveOf(o.key).set(o.conn, now + CONNECTION_TTL_MS);
          } else {
            table.close(`k${o.key}`, `c${o.conn}`);
            liveOf(o.key).delete(o.conn);
          }
          const total = [0, 1, 2].reduce((n, k) => n + liveOf(k).size, 0);
          expect(table.count(now)).toBe(total);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
