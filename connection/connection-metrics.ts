// The metrics of one connection (core/metrics.ts), client or agent: opened and closed once each, its
// messages, refusals and error answers tallied and written at most once per interval, and whatever
// is left written at close. The connection calls it; nothing here can fail the connection.

import { METRIC, type MetricsDataset, MetricTally, recordMetric } from "../core/metrics";

export class ConnectionMetrics {
  private readonly tally: MetricTally;
  private closed = false;

  constructor(
    private readonly dataset: MetricsDataset | undefined,
    private readonly tenantId: string,
    private readonly kind: "client" | "agent",
    private readonly agent: string,
  ) {
    this.tally = new MetricTally(Date.now());
    recordMetric(dataset, { tenantId, metric: METRIC.connectionOpened, detail: kind, agent });
  }

  /** One message from the peer. */
  message(): void {
    this.count(METRIC.messages, this.kind);
  }

  /** A limit refused the peer's message (`reason`: the error's `data.reason`). */
  refused(reason: string): void {
    this.count(METRIC.limitRefused, reason);
  }

  /** The gateway answered the peer a JSON-RPC error with this code. */
  answeredError(code: number): void {
    this.count(METRIC.rpcError, String(code));
  }

  /** A frame of the peer waited `ms` before it passed on (the agent's hold): tallied, the longest kept. */
  delayed(ms: number): void {
    if (this.closed || ms <= 0) return;
    this.tally.add({ tenantId: this.tenantId, metric: METRIC.deliveryLag, detail: this.kind, agent: this.agent, value: ms });
    this.write(false);
  }

  /** Writes the tallies when the interval has passed (the connection calls it from a timer it has). */
  flushIfDue(): void {
    this.write(false);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.write(true);
    recordMetric(this.dataset, { tenantId: this.tenantId, metric: METRIC.connectionClosed, detail: this.kind, agent: this.agent });
  }

  private count(metric: (typeof METRIC)[keyof typeof METRIC], detail: string): void {
    if (this.closed) return;
    this.tally.add({ tenantId: this.tenantId, metric, detail, agent: this.agent });
    this.write(false);
  }

  private write(force: boolean): void {
    for (const point of this.tally.take(Date.now(), force)) recordMetric(this.dataset, point);
  }
}
