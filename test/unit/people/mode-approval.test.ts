// Four eyes on a mode change (protocol/people/mode-approval.ts, decision 0061): a model test over
// sequences of decisions by people, keys and roles at generated times, driven as the session's shell
// drives it (a proposal is decided once; a decision not permitted leaves it held).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../../../core/principal";
import { ErrorCode } from "../../../core/rpc-errors";
import { type Decided, type Decision, type ModeProposal, decide, fourEyesHoldsModes } from "../../../protocol/people/mode-approval";
import { personKey } from "../../../protocol/people/answering";
import { rank } from "../../../protocol/people/roles";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

/** People and credentials: ada proposes; ada's other key is ada; the admin key names nobody. */
const CREDENTIALS = [
  { keyId: "k-ada-1", person: { issuer: "key", subject: "ada" } },
  { keyId: "k-ada-2", person: { issuer: "https://idp", subject: "ada" } },
  { keyId: "k-bob", person: { issuer: "key", subject: "bob" } },
  { keyId: "k-admin" },
  { keyId: "k-nobody" },
];
const PROPOSER = personKey(CREDENTIALS[0] ?? { keyId: "" });

const proposal: ModeProposal = {
  id: "p1",
  operation: "session/set_mode mode=bypassPermissions",
  change: { method: "session/set_mode", setting: "mode", value: "bypassPermissions" },
  proposer: { who: PROPOSER, label: "ada" },
  proposedAt: 1_000,
  expiresAt: 61_000,
};

const step = fc.record({
  credential: fc.constantFrom(...CREDENTIALS),
  role: fc.constantFrom<Role | null>(...ROLES, null),
  decision: fc.constantFrom<Decision>("approve", "refuse"),
  at: fc.integer({ min: 0, max: 80_000 }),
});

/** What the model says one decision does. */
function expected(who: string, role: Role | null, decision: Decision, at: number, keysApprove: boolean): Decided["kind"] {
  if (at >= proposal.expiresAt) return "expired";
  if (role === null || rank(role) < rank("approver")) return "not_permitted";
  if (decision === "refuse") return "refused";
  if (who === PROPOSER) return "not_permitted";
  if (who.startsWith("key:") && !keysApprove) return "not_permitted";
  return "relay";
}

describe("four eyes on a mode change: who may decide", () => {
  it("matches the model over every sequence: nothing relays but a second person's approval before the deadline, decided once", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 8 }), fc.boolean(), (steps, keysApprove) => {
        let outcome: Decided["kind"] | "held" = "held";
        for (const s of steps) {
          if (outcome !== "held" && outcome !== "not_permitted") break; // decided once: the shell took it out
          const who = personKey(s.credential);
          const got = decide(proposal, { role: s.role, who, label: s.credential.keyId, keysApprove }, s.decision, s.at);
          expect(got.kind).toBe(expected(who, s.role, s.decision, s.at, keysApprove));
          if (got.kind !== "relay") expect(got.error.code).toBe(ErrorCode.notPermitted);
          if (got.kind === "relay") {
            expect(who).not.toBe(PROPOSER);
            expect(s.decision).toBe("approve");
            expect(s.at).toBeLessThan(proposal.expiresAt);
          }
          outcome = got.kind;
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("counts people, not keys: the proposer's other key is the proposer", () => {
    const other = personKey({ keyId: "k-ada-2", person: { issuer: "https://idp", subject: "ada" } });
    const got = decide(proposal, { role: "owner", who: other, label: "ada", keysApprove: true }, "approve", 2_000);
    expect(got).toMatchObject({ kind: "not_permitted", error: { message: expect.stringMatching(/You proposed/) } });
  });

  it("tells the proposer who refused, or that it expired and after how long", () => {
    const refused = decide(proposal, { role: "approver", who: "subject:bob", label: "bob", keysApprove: false }, "refuse", 2_000);
    expect(refused).toMatchObject({
      kind: "refused",
      error: { message: "bob refused switching the session's mode to bypassPermissions; it was not made." },
    });
    const late = decide(proposal, { role: "approver", who: "subject:bob", label: "bob", keysApprove: false }, "approve", 61_000);
    expect(late).toMatchObject({
      kind: "expired",
      error: { message: expect.stringMatching(/expired: no second person approved it within 60 seconds/) },
    });
  });

  it("holds mode changes only where settings.modes.fourEyes says so; a value no API would store holds them", () => {
    expect(fourEyesHoldsModes(undefined)).toBe(false);
    expect(fourEyesHoldsModes({})).toBe(false);
    expect(fourEyesHoldsModes({ fourEyes: false })).toBe(false);
    expect(fourEyesHoldsModes({ fourEyes: true })).toBe(true);
    // SAFETY: a row written by hand, which the settings API would refuse.
    expect(fourEyesHoldsModes({ fourEyes: "yes" } as unknown as { fourEyes: boolean })).toBe(true);
  });
});
