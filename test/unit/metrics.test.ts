// core/metrics.ts and connection/connection-metrics.ts: a busy connection costs one data point per
// metric and interval, never one per message, and nothing counted is lost at close.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { METRIC, type MetricPoint, MetricTally, type MetricsDataset, TALLY_INTERVAL_MS, recordMetric } from "../../core/metrics";
import { ConnectionMetrics } from "../../connection/connection-metrics";

function capture(): { dataset: MetricsDataset; points: Array<{ indexes?: string[]; blobs?: string[]; doubles?: number[] }> } {
  const points: Array<{ indexes?: string[]; blobs?: string[]; doubles?: number[] }> = [];
  return { dataset: { writeDataPoint: (p) => points.push(p) }, points };
}

describe("MetricTally", () => {
  it("writes nothing inside the interval and every count once after it, whatever the arrivals", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 * TALLY_INTERVAL_MS }), fc.constantFrom("a", "b", "c")), { maxLength: 200 }),
        (arrivals) => {
          const tally = new MetricTally(0);
          const taken: MetricPoint[] = [];
          let last = 0;
          for (const [at, detail] of [...arrivals].sort((x, y) => x[0] - y[0])) {
            tally.add({ tenantId: "t", metric: METRIC.messages, detail });
            const now = Math.max(last, at);
            const points = tally.take(now);
            if (points.length > 0) {
              expect(now - last).toBeGreaterThanOrEqual(TALLY_INTERVAL_MS);
              last = now;
            }
            taken.push(...points);
          }
          taken.push(...tally.take(last, true));
          const total = taken.reduce((sum, p) => sum + (p.count ?? 0), 0);
          expect(total).toBe(arrivals.length);
          for (const detail of ["a", "b", "c"]) {
            expect(taken.filter((p) => p.detail === detail).reduce((s, p) => s + (p.count ?? 0), 0)).toBe(
              arrivals.filter(([, d]) => d === detail).length,
            );
          }
        },
      ),
    );
  });
});

describe("MetricTally values", () => {
  it("keeps the largest value of a key in the interval, and a count of every add", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 1_000_000 }), { minLength: 1, maxLength: 100 }), (values) => {
        const tally = new MetricTally(0);
        for (const value of values) tally.add({ tenantId: "t", metric: METRIC.deliveryLag, detail: "agent", value });
        const points = tally.take(0, true);
        expect(points).toEqual([
          { tenantId: "t", metric: METRIC.deliveryLag, detail: "agent", count: values.length, value: Math.max(...values) },
        ]);
        expect(tally.take(0, true)).toEqual([]);
      }),
    );
  });
});

describe("ConnectionMetrics", () => {
  it("a frame that waited is delivery_lag (the longest wait as its value); one passed at once is not counted", () => {
    const { dataset, points } = capture();
    const metrics = new ConnectionMetrics(dataset, "t1", "agent", "builder");
    metrics.delayed(0);
    metrics.delayed(40);
    metrics.delayed(900);
    metrics.delayed(12);
    metrics.close();
    expect(points.filter((p) => p.blobs?.[0] === METRIC.deliveryLag).map((p) => [p.blobs?.[1], p.doubles])).toEqual([["agent", [3, 900]]]);
  });

  it("a thousand messages inside an interval are one point at close, with opened and closed around it", () => {
    const { dataset, points } = capture();
    const metrics = new ConnectionMetrics(dataset, "t1", "client", "builder");
    for (let i = 0; i < 1000; i++) metrics.message();
    metrics.refused("rate_limited");
    metrics.answeredError(-32602);
    expect(points.map((p) => p.blobs?.[0])).toEqual([METRIC.connectionOpened]);
    metrics.close();
    metrics.close();
    metrics.message();
    expect(points.map((p) => [p.blobs?.[0], p.blobs?.[1], p.doubles?.[0]])).toEqual([
      [METRIC.connectionOpened, "client", 1],
      [METRIC.messages, "client", 1000],
      [METRIC.limitRefused, "rate_limited", 1],
      [METRIC.rpcError, "-32602", 1],
      [METRIC.connectionClosed, "client", 1],
    ]);
    expect(points.every((p) => p.indexes?.[0] === "t1" && p.blobs?.[2] === "builder")).toBe(true);
  });

  it("a dataset that throws costs the connection nothing", () => {
    const throwing: MetricsDataset = {
      writeDataPoint: () => {
        throw new Error("limit of data points per invocation");
      },
    };
    expect(() => recordMetric(throwing, { tenantId: "t", metric: METRIC.permissionRequested })).not.toThrow();
    const metrics = new ConnectionMetrics(throwing, "t", "agent", "a");
    expect(() => {
      metrics.message();
      metrics.close();
    }).not.toThrow();
  });
});
