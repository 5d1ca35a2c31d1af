// Messages per second on a client connection: over the rate a request gets a clear JSON-RPC error,
// a sustained flood closes the connection with 4429 and a reason; within the rate nothing changes.

import { describe, expect, it } from "vitest";
import { connect, seedTenant } from "./helpers";

describe("reliability: message rate per client connection", () => {
  it("answers a request over the tenant's rate with -32029 naming the limit, then closes a connection that keeps flooding", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerConnection: 5 } });
    const client = await connect("/acp?agent=none", t.clientKey);
    for (let i = 0; i < 15; i++) client.send({ jsonrpc: "2.0", id: i, method: "_test/ping" });
    const answers = await Promise.all(Array.from({ length: 15 }, (_, i) => client.next((m) => m.id === i)));
    const refused = answers.filter((a) => a.error?.code === -32029);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused[0]?.error).toMatchObject({ data: { reason: "rate_limited", limit: "messagesPerSecondPerConnection", value: 5 } });
    expect(refused[0]?.error.message).toMatch(/limit is 5 a second.*_test\/ping was refused/);
    for (let i = 0; i < 100; i++) client.send({ jsonrpc: "2.0", id: `flood-${i}`, method: "_test/ping" });
    const closed = await client.closed;
    expect(closed.code).toBe(4429);
    expect(closed.reason).toMatch(/over 5 messages a second/);
  });

  it("leaves a connection within its rate alone", async () => {
    const t = await seedTenant({ limits: { messagesPerSecondPerConnection: 5 } });
    const client = await connect("/acp?agent=none", t.clientKey);
    for (let i = 0; i < 10; i++) client.send({ jsonrpc: "2.0", id: i, method: "_test/ping" });
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => client.next((m) => m.id === i)));
    expect(answers.filter((a) => a.error?.code === -32029)).toEqual([]);
  });
});
