// Greying out the options a person may not choose (web/src/answerable.ts): the gateway's
// `_meta.acpGateway.answerable` on a permission request names the option ids this person may choose;
// the others are disabled with its reason. Absent or unreadable, every option stays enabled (the
// gateway still decides at commit).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerableOf, optionChoice } from "../../web/src/answerable";

const OPTIONS = [
  { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject-once", name: "Reject", kind: "reject_once" },
];
const request = (answerable: unknown) => ({
  toolCall: { toolCallId: "t1", kind: "execute" },
  options: OPTIONS,
  ...(answerable === undefined ? {} : { _meta: { acpGateway: { answerable } } }),
});

describe("answerable options", () => {
  it("enables every option when the request says nothing of who may answer", () => {
    const answerable = answerableOf(request(undefined));
    expect(answerable).toBeNull();
    for (const o of OPTIONS) expect(optionChoice(answerable, o.optionId)).toEqual({ enabled: true });
  });

  it("disables the options not listed, each with the gateway's reason", () => {
    const answerable = answerableOf(request({ optionIds: ["allow-once", "reject-once"], reason: "Only approvers create rules" }));
    expect(OPTIONS.map((o) => optionChoice(answerable, o.optionId))).toEqual([
      { enabled: true },
      { enabled: false, reason: "Only approvers create rules" },
      { enabled: true },
    ]);
  });

  it("disables every option of an empty list, with a plain reason when the gateway gives none", () => {
    const answerable = answerableOf(request({ optionIds: [] }));
    for (const o of OPTIONS)
      expect(optionChoice(answerable, o.optionId)).toEqual({ enabled: false, reason: expect.stringContaining("may not choose") });
  });

  it("treats an unreadable list as absent, and ignores ids that are not strings", () => {
    expect(answerableOf(request({ optionIds: "allow-once" }))).toBeNull();
    expect(answerableOf(request("everything"))).toBeNull();
    expect(answerableOf({ ...request(undefined), _meta: { acpGateway: "x" } })).toBeNull();
    const answerable = answerableOf(request({ optionIds: ["reject-once", 7, null] }));
    expect(answerable?.optionIds).toEqual(["reject-once"]);
    expect(optionChoice(answerable, "7").enabled).toBe(false);
  });

  it("keeps a reason short and never empty", () => {
    expect(answerableOf(request({ optionIds: [], reason: "x".repeat(5000) }))?.reason).toHaveLength(300);
    expect(answerableOf(request({ optionIds: [], reason: "   " }))?.reason).toBeNull();
  });

  it("enables exactly the listed options, for any lists of ids (property)", () => {
    const id = fc.string({ minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.uniqueArray(id, { maxLength: 6 }), fc.uniqueArray(id, { maxLength: 6 }), (offered, allowed) => {
        const answerable = answerableOf(request({ optionIds: allowed }));
        for (const optionId of offered) expect(optionChoice(answerable, optionId).enabled).toBe(allowed.includes(optionId));
      }),
    );
  });
});
