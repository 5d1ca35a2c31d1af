// The operator's view (core/log.ts, worker/middleware/request-log.ts): every request the Worker
// answers leaves one JSON line with its route pattern, status, tenant and trace id, and the response
// hands the trace id back. Lines are captured through the log module's sink, in the Worker's isolate.
import { SELF } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { setLogSink } from "../../core/log";
import { seedTenant } from "./helpers";

let lines: Array<Record<string, unknown>> = [];
beforeEach(() => {
  lines = [];
  setLogSink((_level, line) => lines.push(JSON.parse(line) as Record<string, unknown>));
});
afterEach(() => setLogSink(undefined));

const requestLines = () => lines.filter((l) => l.event === "http.request");

describe("request logs", () => {
  it("a request's traceparent becomes its trace id: in the log line and the X-Trace-Id header", async () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const response = await SELF.fetch("https://gw/health", { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("X-Trace-Id")).toBe(traceId);
    expect(requestLines()).toEqual([
      expect.objectContaining({ level: "info", event: "http.request", route: "/health", status: 200, method: "GET", traceId }),
    ]);
  });

  it("a request without one gets a fresh trace id, different for each request", async () => {
    const [a, b] = [await SELF.fetch("https://gw/health"), await SELF.fetch("https://gw/health")];
    const ids = [a.headers.get("X-Trace-Id"), b.headers.get("X-Trace-Id")];
    expect(ids[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(ids[1]).toMatch(/^[0-9a-f]{32}$/);
    expect(ids[0]).not.toBe(ids[1]);
    expect(requestLines().map((l) => l.traceId)).toEqual(ids);
  });

  it("an authenticated call names its tenant and key; a refused one names neither", async () => {
    const t = await seedTenant();
    expect((await SELF.fetch("https://gw/v1/keys", { headers: { Authorization: `Bearer ${t.adminKey}` } })).status).toBe(200);
    expect((await SELF.fetch("https://gw/v1/keys", { headers: { Authorization: "Bearer nope" } })).status).toBe(401);
    const [ok, refused] = requestLines();
    expect(ok).toMatchObject({ route: "/v1/keys", status: 200, tenantId: t.tenantId });
    expect(ok?.keyId).toEqual(expect.any(String));
    expect(refused).toMatchObject({ route: "/v1/keys", status: 401 });
    expect(refused).not.toHaveProperty("tenantId");
  });

  it("the line names the route's pattern, never the path: an approval link's token stays out of the logs", async () => {
    const token = "secret-token-value-that-must-not-be-logged";
    await SELF.fetch(`https://gw/approve/${token}`);
    expect(requestLines()).toHaveLength(1);
    expect(JSON.stringify(lines)).not.toContain(token);
  });

  it("every line is one JSON object with level, event and msg", async () => {
    await SELF.fetch("https://gw/health");
    await SELF.fetch("https://gw/no-such-route");
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) {
      expect(line).toEqual(expect.objectContaining({ level: expect.any(String), event: expect.any(String), msg: expect.any(String) }));
    }
  });
});
