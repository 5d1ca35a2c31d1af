import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitName } from "../../durable-objects/object-name";

// Tenant ids never contain "/"; session ids (chosen by agents) and agent names may.
const tenantId = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes("/"));
const rest = fc.string({ maxLength: 16 });

describe("splitName: who an object is, from its name", () => {
  it("gives back the tenant and the rest of any `${tenantId}/${rest}`, also when the rest contains a /", () => {
    fc.assert(
      fc.property(tenantId, rest, (t, r) => {
        expect(splitName(`${t}/${r}`)).toEqual({ tenantId: t, rest: r });
      }),
    );
  });

  it("splits at the first / (a session id with slashes stays whole)", () => {
    expect(splitName("t-1/a/b/c")).toEqual({ tenantId: "t-1", rest: "a/b/c" });
  });

  it("is undefined without a name (workerd lost it) or without a / (not a tenant-scoped name)", () => {
    expect(splitName(undefined)).toBeUndefined();
    expect(splitName("t-1")).toBeUndefined();
  });
});
