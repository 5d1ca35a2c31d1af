import { log } from "./log";

// The counters an operator watches, written to Workers Analytics Engine (wrangler.toml `METRICS`),
// or as a log line where that is not bound. One registry of names, so the dashboard query
// (docs/OPERATIONS.md) and the code agree. A data point is laid out the same for every metric:
//   index1 = tenant id (Analytics Engine samples per index: one tenant's flood never hides another's)
//   blob1  = metric name, blob2 = its detail (a limit's reason, an error code, who decided), blob3 = agent
//   double1 = count, double2 = a value (milliseconds, for the lag metrics)
// A high-rate metric (messages) is tallied in memory and written as one point per interval, so a
// busy connection costs a data point every few seconds, not one per message.

export const METRIC = {
  /** A client or agent connection opened (detail: "client" | "agent"). */
  connectionOpened: "connection_opened",
  connectionClosed: "connection_closed",
  /** Messages a connection received from its peer (detail: "client" | "agent"); tallied. */
  messages: "messages",
  /** A permission request reached the gateway from an agent. */
  permissionRequested: "permission_requested",
  /** A permission request was resolved (detail: who decided — rule, client, deadline, cancelled, …). */
  permissionResolved: "permission_resolved",
  /** A limit refused or held something (detail: the limit's `data.reason`). */
  limitRefused: "limit_refused",
  /** The gateway answered a JSON-RPC error to a peer (detail: the code). */
  rpcError: "rpc_error",
  /**
   * An agent's frames that waited in the edge's hold for its rates (protocol/agent-hold.ts): count of
   * frames delayed, value the longest wait in the interval (ms). Frames passed at once are not counted.
   */
  deliveryLag: "delivery_lag",
} as const;

type MetricName = (typeof METRIC)[keyof typeof METRIC];

export interface MetricPoint {
  tenantId: string;
  metric: MetricName;
  detail?: string;
  agent?: string;
  count?: number;
  value?: number;
}

/** The Analytics Engine binding as this module uses it (a structural type: no import). */
export interface MetricsDataset {
  writeDataPoint(point: { indexes?: string[]; blobs?: string[]; doubles?: number[] }): void;
}

/** Writes one point. Never throws: a metric lost is better than a message lost. */
export function recordMetric(dataset: MetricsDataset | undefined, point: MetricPoint): void {
  const count = point.count ?? 1;
  if (count <= 0) return;
  try {
    if (dataset) {
      dataset.writeDataPoint({
        indexes: [point.tenantId],
        blobs: [point.metric, point.detail ?? "", point.agent ?? ""],
        doubles: [count, point.value ?? 0],
      });
    } else {
      const { tenantId, metric, detail, agent, value } = point;
      log("info", "metric", metric, { tenantId, metric, detail, agent, count, value });
    }
  } catch {
    // the dataset refused the point (its limits per invocation): counters are best effort
  }
}

/** How often a tally is written, at most. */
export const TALLY_INTERVAL_MS = 10_000;

/** Counts of a high-rate metric kept in memory and written as one point per key and interval. */
export class MetricTally {
  private readonly counts = new Map<string, { point: Omit<MetricPoint, "count" | "value">; count: number; value?: number }>();
  private flushedAt: number;

  constructor(now: number) {
    this.flushedAt = now;
  }

  /** Counts `n` under the point's key; a `value` is kept as the largest seen in the interval. */
  add(point: Omit<MetricPoint, "count">, n = 1): void {
    const key = `${point.tenantId}\u0000${point.metric}\u0000${point.detail ?? ""}\u0000${point.agent ?? ""}`;
    const { value, ...rest } = point;
    const entry = this.counts.get(key);
    if (entry) {
      entry.count += n;
      if (value !== undefined) entry.value = Math.max(entry.value ?? value, value);
    } else this.counts.set(key, { point: rest, count: n, ...(value === undefined ? {} : { value }) });
  }

  /** The points to write now: every count when the interval has passed (or `force`), else none. */
  take(now: number, force = false): MetricPoint[] {
    if (!force && now - this.flushedAt < TALLY_INTERVAL_MS) return [];
    this.flushedAt = now;
    const points = [...this.counts.values()].map(({ point, count, value }) => ({
      ...point,
      count,
      ...(value === undefined ? {} : { value }),
    }));
    this.counts.clear();
    return points;
  }
}
