import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { objectNames, splitName } from "../../durable-objects/objects";

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

describe("objectNames: the one place an object's name is built", () => {
  it("round-trips through splitName for every session, agent and connection name", () => {
    const part = fc.string({ minLength: 1, maxLength: 16 });
    fc.assert(
      fc.property(tenantId, part, (t, r) => {
        for (const name of [objectNames.session(t, r), objectNames.agent(t, r), objectNames.connection(t, r)]) {
          expect(splitName(name)).toEqual({ tenantId: t, rest: r });
        }
        expect(objectNames.rules(t)).toBe(t);
        expect(objectNames.tenantLimits(t)).toBe(t);
      }),
    );
  });

  it('refuses a missing or empty part instead of naming `undefined/<sid>` or one RulesObject "" every tenant would share', () => {
    const missing = [undefined, null, ""] as unknown as string[];
    for (const value of missing) {
      expect(() => objectNames.session(value, "s")).toThrow(/tenant id/);
      expect(() => objectNames.session("t", value)).toThrow(/session id/);
      expect(() => objectNames.agent("t", value)).toThrow(/agent name/);
      expect(() => objectNames.connection("t", value)).toThrow(/connection id/);
      expect(() => objectNames.rules(value)).toThrow(/tenant id/);
      expect(() => objectNames.tenantLimits(value)).toThrow(/tenant id/);
    }
  });

  it("refuses a tenant id with a / (the name would be split in the wrong place)", () => {
    expect(() => objectNames.session("a/b", "s")).toThrow(/cannot contain/);
    expect(() => objectNames.rules("a/b")).toThrow(/cannot contain/);
  });
});
