// What an operator and a tenant admin can see (core/metrics.ts, worker/api/metrics.ts): GET
// /v1/metrics summarises the tenant's live sessions, open connections and recent decisions from
// what the gateway holds, for admins only and only their own tenant; the counters written to
// Analytics Engine carry the tenant as their index and the registry's names.
import { SELF, env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { METRIC } from "../../core/metrics";
import { clientWithSession, dialInAgent, isMethod, isResponseTo, seedTenant, startTurn } from "./helpers";

const api = (path: string, key: string) => SELF.fetch(`https://gw${path}`, { headers: { Authorization: `Bearer ${key}` } });

interface Metrics {
  liveSessions: number;
  openClientConnections: number;
  permissions: { resolved: number; byDecidedBy: Record<string, number>; autoAnswered: number };
}
const metricsOf = async (key: string) => (await (await api("/v1/metrics", key)).json()) as Metrics;

afterEach(() => vi.restoreAllMocks());

describe("GET /v1/metrics", { timeout: 20_000 }, () => {
  it("counts the tenant's live sessions, open connections and resolved requests, and nothing of another tenant's", async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const before = await metricsOf(t.adminKey);
    expect(before).toMatchObject({ liveSessions: 0, openClientConnections: 0, permissions: { resolved: 0 } });

    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId, "p");
    const asked = agent.askPermission(sessionId, { toolCallId: "m1", kind: "read", locations: [{ path: "/projects/demo/a" }] });
    client.respond((await client.next(isMethod("session/request_permission"))).id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(asked));

    // Audit rows reach D1 in batches (100 ms after a batch's first resolution): wait for the row.
    let now = await metricsOf(t.adminKey);
    for (let i = 0; i < 100 && now.permissions.resolved === 0; i++) {
      await scheduler.wait(20);
      now = await metricsOf(t.adminKey);
    }
    expect(now).toMatchObject({
      liveSessions: 1,
      openClientConnections: 1,
      permissions: { resolved: 1, byDecidedBy: { person: 1 }, autoAnswered: 0 },
    });
    expect(await metricsOf(other.adminKey)).toMatchObject({ liveSessions: 0, openClientConnections: 0, permissions: { resolved: 0 } });
  });

  it("is for the tenant's admins: a client key is refused 403, no key 401", async () => {
    const t = await seedTenant();
    expect((await api("/v1/metrics", t.clientKey)).status).toBe(403);
    expect((await SELF.fetch("https://gw/v1/metrics")).status).toBe(401);
  });
});

describe("counters in Analytics Engine", { timeout: 20_000 }, () => {
  it("a permission request and its resolution are points indexed by the tenant, named from the registry", async () => {
    const written = vi.spyOn(env.METRICS, "writeDataPoint");
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    await startTurn(client, agent, sessionId, "p");
    const asked = agent.askPermission(sessionId, { toolCallId: "m2", kind: "read", locations: [{ path: "/projects/demo/b" }] });
    client.respond((await client.next(isMethod("session/request_permission"))).id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(asked));
    const points = written.mock.calls.map(([point]) => point).filter((p) => p?.indexes?.[0] === t.tenantId);
    const names = points.map((p) => p?.blobs?.[0]);
    expect(names).toEqual(expect.arrayContaining([METRIC.connectionOpened, METRIC.permissionRequested, METRIC.permissionResolved]));
    expect(points.find((p) => p?.blobs?.[0] === METRIC.permissionResolved)?.blobs?.slice(1)).toEqual(["person", agent.name]);
    expect(points.every((p) => Object.values(METRIC).includes(p?.blobs?.[0] as never))).toBe(true);
  });
});
