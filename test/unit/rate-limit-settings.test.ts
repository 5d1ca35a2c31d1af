import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS, limitsOf } from "../../protocol/tenant-limits";

describe("per-tenant limits", () => {
  it("are the defaults when the tenant sets nothing, or something that is not an object", () => {
    expect(limitsOf(undefined)).toEqual(DEFAULT_LIMITS);
    expect(limitsOf("fast")).toEqual(DEFAULT_LIMITS);
  });

  it("take each override that is a positive whole number and ignore the rest", () => {
    const limits = limitsOf({ pendingPermissionsPerSession: 3, turnIdleMs: -1, connectionsPerKey: 2.5, unknown: 7 });
    expect(limits).toEqual({ ...DEFAULT_LIMITS, pendingPermissionsPerSession: 3 });
  });
});
