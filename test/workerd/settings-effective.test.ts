// The tenant settings as they apply (decision 0062), in the real Worker and D1: every role reads them
// with their defaults and the operator's limits, only an admin may change them, and a refused change
// names each wrong field by its path.

import { describe, expect, it } from "vitest";
import type { ApiEffectiveSettings } from "../../protocol/rest-api";
import { DEFAULT_LIMITS } from "../../protocol/tenant-limits";
import { addKey, api, seedTenant } from "./helpers";

describe("GET /v1/tenant/settings/effective", () => {
  it("gives an unset tenant every default, the same as the defaults, and says nothing is set", async () => {
    const t = await seedTenant();
    const response = await api("/v1/tenant/settings/effective", t.adminKey);
    expect(response.status).toBe(200);
    const body = (await response.json()) as ApiEffectiveSettings;
    expect(body.settings).toEqual(body.defaults);
    expect(body.defaults).toEqual({
      roles: { groups: {}, defaultPersonRole: "observer" },
      fourEyes: { operations: [], keysApprove: false },
      modes: { forbid: [], forbidLessOversight: false },
      permissionDeadlineMs: 600_000,
      relayAlwaysAsMade: false,
      unaskedRuns: "stop",
      notifyAfterMs: 60_000,
    });
    expect(body.set).toEqual([]);
    expect(body.limits).toEqual(DEFAULT_LIMITS);
    expect(body.mayChange).toBe(true);
  });

  it("shows what the tenant set over the defaults, and the operator's limits", async () => {
    const t = await seedTenant({
      unaskedRuns: "tell",
      permissionDeadlineMs: 120_000,
      fourEyes: { operations: [{ program: "git", prefix: ["git", "push"] }] },
      limits: { rulesPerTenant: 7 },
    });
    const body = (await (await api("/v1/tenant/settings/effective", t.adminKey)).json()) as ApiEffectiveSettings;
    expect(body.settings.unaskedRuns).toBe("tell");
    expect(body.settings.permissionDeadlineMs).toBe(120_000);
    expect(body.settings.fourEyes).toEqual({ operations: [{ program: "git", prefix: ["git", "push"] }], keysApprove: false });
    expect(body.settings.notifyAfterMs).toBe(60_000);
    expect([...body.set].sort()).toEqual(["fourEyes", "permissionDeadlineMs", "unaskedRuns"]);
    expect(body.limits.rulesPerTenant).toBe(7);
    expect(body.defaultLimits.rulesPerTenant).toBe(DEFAULT_LIMITS.rulesPerTenant);
  });

  it("is read by every role, and only an admin may change what it shows", async () => {
    const t = await seedTenant();
    for (const role of ["observer", "member", "approver"] as const) {
      const key = await addKey(t.tenantId, "client", role, null, { role, user: role });
      const response = await api("/v1/tenant/settings/effective", key);
      expect({ role, status: response.status }).toEqual({ role, status: 200 });
      expect(((await response.json()) as ApiEffectiveSettings).mayChange).toBe(false);
      expect((await api("/v1/tenant/settings", key, { method: "PATCH", body: { unaskedRuns: "tell" } })).status).toBe(403);
    }
    expect((await api("/v1/tenant/settings/effective", t.agentKey)).status).toBe(403);
  });
});

describe("PATCH /v1/tenant/settings refused", () => {
  it("names each wrong field by its path, and stores nothing", async () => {
    const t = await seedTenant();
    const response = await api("/v1/tenant/settings", t.adminKey, {
      method: "PATCH",
      body: { permissionDeadlineMs: 5, fourEyes: { operations: [{ require: "two_approvals" }] }, unaskedRuns: "tell" },
    });
    expect(response.status).toBe(400);
    const { error } = (await response.json()) as { error: { code: string; message: string; issues: { path: string; message: string }[] } };
    expect(error.code).toBe("invalid_request");
    expect(error.issues.map((i) => i.path).sort()).toEqual(["fourEyes.operations.0", "permissionDeadlineMs"]);
    expect(error.message).toContain("permissionDeadlineMs");
    const after = (await (await api("/v1/tenant/settings/effective", t.adminKey)).json()) as ApiEffectiveSettings;
    expect(after.settings.unaskedRuns).toBe("stop");
  });
});
