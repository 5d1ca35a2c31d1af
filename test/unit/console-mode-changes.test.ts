// A held mode change in the console (web/src/mode-changes.ts, decision 0061): its card is made from
// `_acp_gateway/mode_change_waiting` once however often it is told, says how it ended from
// `_acp_gateway/mode_change_decided`, and greys out exactly what the session's judge
// (protocol/people/mode-approval.ts) refuses for certain: never a decision the gateway would take.
// The header's mode is marked governed as the session marks it.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ROLES, type Role } from "../../core/principal";
import { decide, decidedNotice, waitingNotice, type ModeProposal } from "../../protocol/people/mode-approval";
import { personKey } from "../../protocol/people/answering";
import { sessionModesOf } from "../../protocol/people/session-modes";
import {
  type HeldModeChange,
  agentModeChanged,
  currentModeText,
  decisionChoice,
  decisionSent,
  deciderOf,
  heldModeChangeOf,
  modeChangeDecided,
  modeReported,
  outcomeText,
  replayedModeChange,
  stillWaiting,
} from "../../web/src/mode-changes";

const proposal = (who: string, label: string | null = "ada"): ModeProposal => ({
  id: "p1",
  operation: "session/set_mode mode=bypassPermissions",
  change: { method: "session/set_mode", setting: "mode", value: "bypassPermissions" },
  proposer: { who, label },
  proposedAt: 1_000,
  expiresAt: 601_000,
});
/** What a client receives, as the session sends it. */
const waiting = (p: ModeProposal) => waitingNotice("s1", p) as unknown as Record<string, unknown>;

describe("a held mode change's card", () => {
  it("is made from the waiting notice the session sends, with who proposed what and when it expires", () => {
    const card = heldModeChangeOf(waiting(proposal("subject:ada")));
    expect(card).toEqual({
      proposalId: "p1",
      setting: "mode",
      value: "bypassPermissions",
      proposedBy: "ada",
      proposer: "subject:ada",
      expiresAt: 601_000,
      state: "waiting",
    });
    expect(heldModeChangeOf({ setting: "mode" })).toBeNull();
  });

  const held = (): HeldModeChange => {
    const card = heldModeChangeOf(waiting(proposal("subject:ada")));
    if (!card) throw new Error("the notice made no card");
    return card;
  };

  it("says who approved once decided, and no longer counts as waiting; a decided notice for another proposal changes nothing", () => {
    const card = held();
    expect(modeChangeDecided(card, { proposalId: "other", outcome: "approved", by: "bob" })).toEqual(card);
    expect(modeChangeDecided(card, { proposalId: "p1", outcome: "maybe", by: "bob" })).toEqual(card);
    const decided = modeChangeDecided(card, { sessionId: "s1", proposalId: "p1", outcome: "approved", by: "bob" });
    expect(decided.state).toBe("decided");
    expect(outcomeText(decided)).toBe("Approved by bob: the change went to the agent.");
    expect(stillWaiting({ p1: card })).toBe(1);
    expect(stillWaiting({ p1: decided })).toBe(0);
    expect(outcomeText(modeChangeDecided(card, { proposalId: "p1", outcome: "expired", by: null }))).toMatch(/^Expired/);
    expect(outcomeText(modeChangeDecided(card, { proposalId: "p1", outcome: "refused", by: "cy" }))).toBe(
      "Refused by cy: it was not made.",
    );
  });

  it("a decision the gateway refuses goes back to waiting with its reason; a decided card is not reopened by a late refusal", () => {
    const sent = decisionSent(held(), null);
    expect(sent.state).toBe("sent");
    const refused = decisionSent(sent, "Four eyes counts people");
    expect(refused).toMatchObject({ state: "waiting", refused: "Four eyes counts people" });
    expect(decisionSent(refused, null)).not.toHaveProperty("refused");
    const decided = modeChangeDecided(sent, { proposalId: "p1", outcome: "refused", by: "cy" });
    expect(decisionSent(decided, "late")).toEqual(decided);
  });
});

describe("who may decide, as the session judges it", () => {
  const role = fc.constantFrom<Role | null>(null, ...ROLES);
  const person = fc.oneof(
    fc.constantFrom("ada", "bob").map((s) => ({ keyId: `k-${s}`, person: { issuer: "key", subject: s } })),
    fc.constantFrom("k1", "k2").map((k) => ({ keyId: k, person: null })),
  );

  it("never greys out a decision the session would take, and greys out every one it refuses for the role or the proposer", () => {
    fc.assert(
      fc.property(role, person, person, (r, me, proposer) => {
        const p = proposal(personKey({ keyId: proposer.keyId, person: proposer.person ?? undefined }));
        const card = heldModeChangeOf(waiting(p));
        if (!card) throw new Error("the notice made no card");
        const decider = deciderOf({ ...me, role: r });
        for (const decision of ["approve", "refuse"] as const) {
          const greyed = decisionChoice(card, decider, decision);
          // keysApprove: the console cannot know the tenant's setting, so it judges as if keys count.
          const server = decide(p, { role: r, who: decider.who ?? "", label: null, keysApprove: true }, decision, p.proposedAt);
          expect(greyed.enabled).toBe(server.kind !== "not_permitted");
          if (!greyed.enabled && server.kind === "not_permitted") expect(greyed.reason).toMatch(/role|proposed/);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("before GET /v1/me answers, nothing is greyed out (the gateway still decides)", () => {
    const card = heldModeChangeOf(waiting(proposal("subject:ada")));
    if (!card) throw new Error("no card");
    expect(decisionChoice(card, { role: undefined, who: null }, "approve")).toEqual({ enabled: true });
  });

  it("the proposer's Approve is greyed out saying a second person approves; their Refuse (a withdrawal) is not", () => {
    const card = heldModeChangeOf(waiting(proposal("subject:ada")));
    if (!card) throw new Error("no card");
    const ada = deciderOf({ keyId: "k-ada-laptop", person: { issuer: "key", subject: "ada" }, role: "approver" });
    expect(decisionChoice(card, ada, "approve")).toMatchObject({ enabled: false, reason: expect.stringMatching(/second person/) });
    expect(decisionChoice(card, ada, "refuse")).toEqual({ enabled: true });
  });
});

describe("the agent's mode in the header", () => {
  const advertised = sessionModesOf({
    modes: {
      currentModeId: "default",
      availableModes: [
        { id: "default", name: "Default" },
        { id: "bypassPermissions", name: "Bypass permissions" },
      ],
    },
  });

  it("shows the mode's name and id, governed as the session marks it", () => {
    expect(currentModeText(advertised)).toBe("Default (default)");
    const bypass = modeReported(advertised, { sessionUpdate: "current_mode_update", currentModeId: "bypassPermissions" });
    expect(bypass).toMatchObject({ currentModeId: "bypassPermissions", currentGoverned: true });
    expect(currentModeText(bypass)).toBe("Bypass permissions (bypassPermissions)");
    expect(modeReported(bypass, { currentModeId: "plan" })?.currentGoverned).toBe(false);
    expect(currentModeText(null)).toBeNull();
  });

  it("a mode the agent never advertised is marked as the session would mark it (unknown: governed)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (id) => {
        const reported = modeReported(advertised, { currentModeId: id });
        expect(reported?.currentGoverned).toBe(sessionModesOf({ modes: { currentModeId: id, availableModes: [] } })?.currentGoverned);
      }),
      { numRuns: 200 },
    );
  });

  it("agent_mode_changed marks the header governed", () => {
    expect(agentModeChanged(advertised, { from: "default", to: "yolo" })).toMatchObject({ currentModeId: "yolo", currentGoverned: true });
  });
});

describe("a decided mode change replayed from the session's history (decision 0064)", () => {
  const decided = (outcome: "approved" | "refused" | "expired" | "withdrawn", by: string | null) =>
    decidedNotice("s1", proposal("subject:ada"), outcome, by) as unknown as Record<string, unknown>;

  it("makes the card from the decided notice alone, the same card the live one ends as: who proposed what, who decided", () => {
    const card = replayedModeChange(decided("approved", "bob"));
    expect(card).toMatchObject({
      proposalId: "p1",
      proposedBy: "ada",
      proposer: "subject:ada",
      value: "bypassPermissions",
      state: "decided",
    });
    expect(card && outcomeText(card)).toBe("Approved by bob: the change went to the agent.");
    expect(stillWaiting({ p1: card as HeldModeChange })).toBe(0);
    // Live, the same notice ends the card the waiting notice made.
    const live = heldModeChangeOf(waiting(proposal("subject:ada")));
    expect(live && modeChangeDecided(live, decided("approved", "bob"))).toEqual(card);
  });

  it("says a change in a deleted session was withdrawn, and who deleted it", () => {
    const card = replayedModeChange(decided("withdrawn", "bob"));
    expect(card && outcomeText(card)).toBe("Withdrawn: the session was deleted by bob, so it was not made.");
  });

  it("makes no card from a notice that names no proposal or no known outcome", () => {
    expect(replayedModeChange({ ...decided("approved", "bob"), outcome: "maybe" })).toBeNull();
    expect(replayedModeChange({ outcome: "approved" })).toBeNull();
  });
});
