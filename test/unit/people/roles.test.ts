// Roles (protocol/people/roles.ts, decision 0028): where a role comes from, what each may do, and who
// may grant which. Property tests over every role, key kind, stored value and group mapping.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../../../core/principal";
import { type Action, may, mayGrant, rank, roleOf } from "../../../protocol/people/roles";
import { refusedByRole } from "../../../protocol/people/acp-methods";
import { ErrorCode } from "../../../core/rpc-errors";

const RUNS = Number(process.env.FUZZ_RUNS ?? 500);
const role = fc.constantFrom(...ROLES);
const ACTIONS: Action[] = ["watch", "drive", "answer_own", "answer_any", "oversight", "rules", "administer"];

describe("roles: where they come from", () => {
  it("keeps what keys could do before roles: an admin key without a role is owner, a client key approver, an agent key none", () => {
    expect(roleOf({ credential: "key", kind: "admin", stored: null }, undefined)).toBe("owner");
    expect(roleOf({ credential: "key", kind: "client", stored: null }, undefined)).toBe("approver");
    expect(roleOf({ credential: "key", kind: "agent", stored: null }, undefined)).toBeNull();
    expect(roleOf({ credential: "key", kind: "agent", stored: "owner" }, undefined)).toBeNull();
  });

  it("a key's stored role is its role, whatever the tenant maps groups to", () => {
    fc.assert(
      fc.property(role, fc.constantFrom("client" as const, "admin" as const), role, (stored, kind, mapped) => {
        expect(roleOf({ credential: "key", kind, stored }, { groups: { any: mapped }, defaultPersonRole: mapped })).toBe(stored);
      }),
      { numRuns: RUNS },
    );
  });

  it("a stored role or mapping that is no role grants observer, never more", () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !(ROLES as readonly string[]).includes(s)),
        (bad) => {
          expect(roleOf({ credential: "key", kind: "client", stored: bad }, undefined)).toBe("observer");
          // SAFETY: a settings row written by hand may hold anything; the type says what the API stores.
          const settings = { groups: { g: bad as Role }, defaultPersonRole: bad as Role };
          expect(roleOf({ credential: "token", groups: ["g"] }, settings)).toBe("observer");
          expect(roleOf({ credential: "token", groups: [] }, settings)).toBe("observer");
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a signed-in person gets the highest role of their mapped groups, else the tenant's default, else observer", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), role),
        fc.array(fc.string({ minLength: 1, maxLength: 6 }), { maxLength: 6 }),
        fc.option(role, { nil: undefined }),
        (groups, theirs, fallback) => {
          const mapped = theirs.filter((g) => Object.hasOwn(groups, g)).map((g) => groups[g] as Role);
          const expected = mapped.length > 0 ? mapped.reduce((a, b) => (rank(b) > rank(a) ? b : a)) : (fallback ?? "observer");
          const settings = fallback === undefined ? { groups } : { groups, defaultPersonRole: fallback };
          expect(roleOf({ credential: "token", groups: theirs }, settings)).toBe(expected);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a group named like an object's own property grants nothing", () => {
    expect(roleOf({ credential: "token", groups: ["__proto__", "constructor", "toString"] }, { groups: {} })).toBe("observer");
  });
});

describe("roles: what each may do", () => {
  it("each role may do all that the roles below it may (monotone)", () => {
    fc.assert(
      fc.property(role, role, fc.constantFrom(...ACTIONS), (a, b, action) => {
        if (rank(a) <= rank(b) && may(a, action)) expect(may(b, action)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it("the table: observer watches; member drives and answers its own turn; approver answers all, makes rules and changes modes that ask less; admin administers", () => {
    const table = Object.fromEntries(ROLES.map((r) => [r, ACTIONS.filter((a) => may(r, a))]));
    expect(table).toEqual({
      observer: ["watch"],
      member: ["watch", "drive", "answer_own"],
      approver: ["watch", "drive", "answer_own", "answer_any", "oversight", "rules"],
      admin: ACTIONS,
      owner: ACTIONS,
    });
    for (const action of ACTIONS) expect(may(null, action)).toBe(false);
  });

  it("only administrators grant, and never above their own role", () => {
    fc.assert(
      fc.property(role, role, (granter, granted) => {
        expect(mayGrant(granter, granted)).toBe(rank(granter) >= rank("admin") && rank(granted) <= rank(granter));
      }),
      { numRuns: RUNS },
    );
    expect(mayGrant("admin", "owner")).toBe(false);
    expect(mayGrant("owner", "owner")).toBe(true);
  });
});

describe("roles on /acp", () => {
  it("an observer may set up, load, list, resume, close and cancel its own requests, and nothing else", () => {
    for (const m of [
      "initialize",
      "authenticate",
      "logout",
      "session/load",
      "session/resume",
      "session/list",
      "session/close",
      "$/cancel_request",
    ])
      expect(refusedByRole("observer", m)).toBeNull();
    for (const m of [
      "session/new",
      "session/prompt",
      "session/cancel",
      "session/set_mode",
      "session/set_config_option",
      "session/delete",
      "session/fork",
      "_vendor/anything",
    ]) {
      const refusal = refusedByRole("observer", m);
      expect(refusal?.code).toBe(ErrorCode.notPermitted);
      expect(refusal?.message).toMatch(new RegExp(`observer.*${m.replace(/[$/]/g, "\\$&")}.*member`));
    }
  });

  it("members and up send every method; a caller without a role sends none", () => {
    fc.assert(
      fc.property(fc.constantFrom<Role>("member", "approver", "admin", "owner"), fc.string(), (r, m) => {
        expect(refusedByRole(r, m)).toBeNull();
        expect(refusedByRole(null, m)).not.toBeNull();
      }),
      { numRuns: RUNS },
    );
  });
});
