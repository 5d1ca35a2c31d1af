// Who may answer a permission request (protocol/people/answering.ts, decision 0028), property-tested
// over every role, turn owner, option kind, four-eyes requirement and recorded approval.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../../../core/principal";
import {
  type Answerer,
  type RequestFacts,
  answerable,
  authorise,
  authoriseAnswer,
  isApproval,
  personKey,
  unsatisfiable,
  waitsOn,
} from "../../../protocol/people/answering";
import type { PermissionOption } from "../../../protocol/permissions";
import { rank } from "../../../protocol/people/roles";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const OPTIONS: PermissionOption[] = [
  { optionId: "once", name: "Allow once", kind: "allow_once" },
  { optionId: "always", name: "Always allow", kind: "allow_always" },
  { optionId: "no", name: "Reject", kind: "reject_once" },
  { optionId: "never", name: "Always reject", kind: "reject_always" },
  { optionId: "custom", name: "Something else", kind: "_vendor_kind" },
];
const PEOPLE = ["person:a", "person:b", "person:c"];

const answerer: fc.Arbitrary<Answerer> = fc.record({ role: fc.constantFrom(...ROLES), who: fc.constantFrom(...PEOPLE) });
const facts: fc.Arbitrary<RequestFacts> = fc.record({
  options: fc.subarray(OPTIONS, { minLength: 1 }),
  prompter: fc.option(fc.constantFrom(...PEOPLE), { nil: null }),
  fourEyes: fc.option(
    fc.record({ require: fc.constantFrom("not_prompter" as const, "two_approvals" as const), why: fc.constant("it runs rm") }),
    { nil: null },
  ),
  approvals: fc.subarray(PEOPLE, { maxLength: 1 }),
  alsoPrompted: fc.subarray(PEOPLE, { maxLength: 2 }),
});

describe("answering: a person's answer judged whole (authoriseAnswer)", () => {
  const result = fc.oneof(
    fc.constantFrom(...OPTIONS.map((o) => ({ outcome: { outcome: "selected", optionId: o.optionId } }))),
    fc.constant({ outcome: { outcome: "cancelled" } }),
    fc.constant({ outcome: { outcome: "approved" } }),
    fc.constant({ outcome: "selected" }),
    fc.constant(null),
  );

  it("is no answer (never approval) unless it names an option offered or cancels; otherwise exactly what authorise says of the option", () => {
    fc.assert(
      fc.property(answerer, facts, result, (a, f, r) => {
        const judged = authoriseAnswer(a, f, r);
        const named = (r as { outcome?: { outcome?: unknown; optionId?: unknown } } | null)?.outcome;
        const option =
          typeof named === "object" && named.outcome === "selected" ? f.options.find((o) => o.optionId === named.optionId) : undefined;
        const valid = option !== undefined || (typeof named === "object" && named.outcome === "cancelled");
        expect(judged.ok).toBe(valid);
        if (judged.ok) {
          expect(judged.chosen).toBe(option ?? null);
          expect(judged.authorised).toEqual(authorise(a, f, option ?? null));
        }
      }),
      { numRuns: RUNS },
    );
  });
});

describe("answering: who may choose what", () => {
  it("authorise accepts exactly the options answerable lists", () => {
    fc.assert(
      fc.property(answerer, facts, (a, f) => {
        const listed = answerable(a, f).optionIds;
        for (const option of f.options) expect(authorise(a, f, option).ok).toBe(listed.includes(option.optionId));
      }),
      { numRuns: RUNS },
    );
  });

  it("an observer chooses nothing, and is told why", () => {
    fc.assert(
      fc.property(fc.constantFrom(...PEOPLE), facts, (who, f) => {
        const a = { role: "observer" as Role, who };
        expect(answerable(a, f)).toEqual({ optionIds: [], reason: expect.stringMatching(/observer/) });
        expect(authorise(a, f, null)).toMatchObject({ ok: false });
      }),
      { numRuns: RUNS },
    );
  });

  it("a member answers only a turn they prompted; approvers and up answer any turn", () => {
    fc.assert(
      fc.property(answerer, facts, (a, f) => {
        const decline = authorise(a, f, null);
        const own = f.prompter === a.who;
        expect(decline.ok).toBe(rank(a.role) >= rank("approver") || (a.role === "member" && own));
      }),
      { numRuns: RUNS },
    );
  });

  it("whoever may choose any option may decline (a reject, or cancelled)", () => {
    fc.assert(
      fc.property(answerer, facts, (a, f) => {
        if (answerable(a, f).optionIds.length === 0) return;
        expect(authorise(a, f, null).ok).toBe(true);
        for (const o of f.options) if (!isApproval(o)) expect(authorise(a, f, o).ok).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it("under not_prompter, the prompter, whoever else prompted into the turn and every member never approve; another approver does", () => {
    fc.assert(
      fc.property(answerer, facts, (a, f) => {
        if (f.fourEyes?.require !== "not_prompter") return;
        for (const o of f.options.filter(isApproval)) {
          const ok = authorise(a, f, o).ok;
          if (a.who === f.prompter || f.alsoPrompted?.includes(a.who) || rank(a.role) < rank("approver")) expect(ok).toBe(false);
          else expect(ok).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("under two_approvals, a first approval is recorded not committed, the same person cannot add the second, another approver commits", () => {
    const f: RequestFacts = { options: OPTIONS, prompter: "person:a", fourEyes: { require: "two_approvals", why: "w" }, approvals: [] };
    const once = OPTIONS[0] as PermissionOption;
    expect(authorise({ role: "approver", who: "person:a" }, f, once)).toEqual({ ok: true, commit: false });
    const after = { ...f, approvals: ["person:a"] };
    expect(authorise({ role: "approver", who: "person:a" }, after, once)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/two approvals/),
    });
    expect(authorise({ role: "admin", who: "person:b" }, after, once)).toEqual({ ok: true, commit: true, once: null });
    expect(authorise({ role: "member", who: "person:a" }, after, once).ok).toBe(false);
  });

  it("a committed approval under four eyes never needs a second approval of the same person (no one approves alone)", () => {
    fc.assert(
      fc.property(answerer, facts, (a, f) => {
        if (f.fourEyes === null) return;
        for (const o of f.options.filter(isApproval)) {
          const r = authorise(a, f, o);
          if (!r.ok || !r.commit) continue;
          if (f.fourEyes.require === "not_prompter") expect([f.prompter, ...(f.alsoPrompted ?? [])]).not.toContain(a.who);
          else expect(f.approvals.length === 1 && f.approvals[0] !== a.who).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("an 'always' commits as once when the person may not make rules or the operation needs four eyes, and says why", () => {
    fc.assert(
      fc.property(answerer, facts, (a, f) => {
        for (const o of f.options.filter((x) => x.kind === "allow_always" || x.kind === "reject_always")) {
          const r = authorise(a, f, o);
          if (!r.ok || !r.commit) continue;
          const mayStore = rank(a.role) >= rank("approver") && f.fourEyes === null;
          expect(r.once === null).toBe(mayStore);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("an unknown option kind is an approval", () => {
    expect(isApproval({ optionId: "x", name: "x", kind: "_vendor" })).toBe(true);
  });

  it("names a person across keys by their subject, and an unnamed key by its id", () => {
    expect(personKey({ keyId: "k1", person: { issuer: "https://idp", subject: "alice" } })).toBe(
      personKey({ keyId: "k2", person: { issuer: "https://idp", subject: "alice" } }),
    );
    expect(personKey({ keyId: "k1" })).not.toBe(personKey({ keyId: "k2" }));
  });
});

describe("four eyes counts people, not credentials (decision 0041)", () => {
  // The shapes worker/auth.ts gives the two credentials of one person: a sign-in with the tenant's
  // provider, and a key issued to them (`POST /v1/keys {user}`), which names them with the issuer "key".
  const signIn = { keyId: "person:5f1e", person: { issuer: "https://idp.example.com", subject: "alice" } };
  const aliceKey = { keyId: "key_alice", person: { issuer: "key", subject: "alice" } };
  const rm: RequestFacts = { options: OPTIONS, prompter: null, fourEyes: { require: "not_prompter", why: "it runs rm" }, approvals: [] };
  const once = OPTIONS[0] as PermissionOption;

  it("a person's sign-in plus a key issued to the same person is one person: the prompter's own key cannot approve", () => {
    expect(personKey(signIn)).toBe(personKey(aliceKey));
    const facts = { ...rm, prompter: personKey(signIn) };
    expect(authorise({ role: "approver", who: personKey(aliceKey) }, facts, once)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/you prompted this turn/),
    });
    const two: RequestFacts = { ...rm, fourEyes: { require: "two_approvals", why: "w" }, approvals: [personKey(aliceKey)] };
    expect(authorise({ role: "approver", who: personKey(signIn) }, two, once)).toMatchObject({ ok: false });
  });

  it("a prompter recorded before decision 0041 (person:<issuer>|<subject>) is still the same person", () => {
    const facts = { ...rm, prompter: "person:https://idp.example.com|alice" };
    expect(authorise({ role: "approver", who: personKey(aliceKey) }, facts, once).ok).toBe(false);
    const two: RequestFacts = { ...rm, fourEyes: { require: "two_approvals", why: "w" }, approvals: ["person:key|alice"] };
    expect(authorise({ role: "approver", who: personKey(signIn) }, two, once).ok).toBe(false);
  });

  it("a freshly minted key with no person is refused as second approver, and so is the admin key; both may reject", () => {
    const facts = { ...rm, prompter: personKey(signIn) };
    for (const keyId of ["key_fresh", "key_admin"]) {
      const who = personKey({ keyId });
      for (const role of ["approver", "admin", "owner"] as const) {
        expect(authorise({ role, who }, facts, once)).toMatchObject({ ok: false, reason: expect.stringMatching(/names nobody/) });
        expect(authorise({ role, who }, facts, OPTIONS[2] as PermissionOption)).toMatchObject({ ok: true, commit: true });
      }
    }
    expect(unsatisfiable(facts, [{ role: "owner", who: personKey({ keyId: "key_admin" }) }])).toMatch(/nobody attached can approve/);
  });

  it("a tenant that lets keys approve (settings.fourEyes.keysApprove) counts a key with no person", () => {
    const facts: RequestFacts = { ...rm, prompter: personKey(signIn), fourEyes: { require: "not_prompter", why: "w", keysApprove: true } };
    expect(authorise({ role: "approver", who: personKey({ keyId: "key_fresh" }) }, facts, once)).toEqual({
      ok: true,
      commit: true,
      once: null,
    });
  });

  it("without four eyes, a key with no person answers as its role allows", () => {
    fc.assert(
      fc.property(fc.constantFrom(...ROLES), fc.constantFrom(...OPTIONS), (role, option) => {
        const who = personKey({ keyId: "key_x" });
        const facts: RequestFacts = { options: OPTIONS, prompter: null, fourEyes: null, approvals: [] };
        expect(authorise({ role, who }, facts, option).ok).toBe(rank(role) >= rank("approver"));
      }),
      { numRuns: RUNS },
    );
  });
});

describe("answering: a four-eyes request nobody attached can approve", () => {
  const f: RequestFacts = {
    options: OPTIONS,
    prompter: "person:a",
    fourEyes: { require: "not_prompter", why: "it runs rm" },
    approvals: [],
  };

  it("is unsatisfiable with only the prompter and members attached, and says who it waits for", () => {
    const reason = unsatisfiable(f, [
      { role: "approver", who: "person:a" },
      { role: "member", who: "person:b" },
      { role: "observer", who: "person:c" },
    ]);
    expect(reason).toMatch(/four eyes.*it runs rm.*nobody attached can approve.*other than the person who prompted/);
  });

  it("is satisfiable once a second approver attaches", () => {
    expect(
      unsatisfiable(f, [
        { role: "approver", who: "person:a" },
        { role: "approver", who: "person:b" },
      ]),
    ).toBeNull();
  });

  it("is never reported for a request without four eyes", () => {
    fc.assert(
      fc.property(facts, fc.array(answerer), (g, attached) => {
        if (g.fourEyes === null) expect(unsatisfiable(g, attached)).toBeNull();
      }),
      { numRuns: RUNS },
    );
  });

  it("matches what answerable says: unsatisfiable exactly when no attached person may choose an approval", () => {
    fc.assert(
      fc.property(facts, fc.array(answerer, { maxLength: 4 }), (g, attached) => {
        if (g.fourEyes === null || !g.options.some(isApproval)) return;
        const anyone = attached.some((a) =>
          answerable(a, g).optionIds.some((id) => isApproval(g.options.find((o) => o.optionId === id) as PermissionOption)),
        );
        expect(unsatisfiable(g, attached) === null).toBe(anyone);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("the gateway's marks on a copy", () => {
  it("sets its fields in _meta.acpGateway, keeping the agent's _meta and the gateway's other fields", async () => {
    const { withGatewayMeta, markedRulesUnknown } = await import("../../../protocol/permissions");
    const params = JSON.stringify({ sessionId: "s", options: [], _meta: { agentOwn: 1 } });
    const marked = JSON.parse(withGatewayMeta(markedRulesUnknown(params), { answerable: { optionIds: [] } }));
    expect(marked._meta).toEqual({
      agentOwn: 1,
      acpGateway: { rulesUnavailable: { message: expect.any(String) }, answerable: { optionIds: [] } },
    });
    expect(withGatewayMeta("null", { answerable: {} })).toBe("null");
  });
});

describe("waiting on you (waitsOn)", () => {
  it("property: a request waits on a person exactly when they may approve it now, or it offers no approval and they may choose an option", () => {
    fc.assert(
      fc.property(answerer, facts, (a, f) => {
        const { optionIds } = answerable(a, f);
        const approvals = f.options.filter(isApproval);
        const expected = approvals.length > 0 ? approvals.some((o) => authorise(a, f, o).ok) : optionIds.length > 0;
        expect(waitsOn(a, f)).toBe(expected);
      }),
      { numRuns: RUNS },
    );
  });

  it("the prompter of a turn whose operation needs another approver may reject it, and it does not wait on them", () => {
    const f: RequestFacts = {
      options: OPTIONS,
      prompter: "person:a",
      fourEyes: { require: "not_prompter", why: "it runs rm" },
      approvals: [],
    };
    expect(answerable({ role: "approver", who: "person:a" }, f).optionIds).toContain("no");
    expect(waitsOn({ role: "approver", who: "person:a" }, f)).toBe(false);
    expect(waitsOn({ role: "approver", who: "person:b" }, f)).toBe(true);
    expect(waitsOn({ role: "observer", who: "person:b" }, f)).toBe(false);
  });
});
