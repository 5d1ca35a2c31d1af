// protocol/unseen.ts, decision 0064: seen means each change shown as the server sent it. What a change
// keeps to be shown (`diffOf`: the diff its tool call reported for its path, bounded), what an answer
// may claim (`shownClaimOf`), and which changes a person's allow clears (`seenBy`): only listed ones its
// card named against the list it was sent — never one it was not sent, never by an answer that says nothing.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ANYTHING, UNSEEN_DIFF_CHARS, UNSEEN_LISTED, type UnseenHold, diffOf, seenBy, shownClaimOf } from "../../protocol/unseen";

const change = (id: number, path = `/p/f${id}`) => ({ id, path, sessionId: "s", toolCallId: `t${id}`, ruleId: null, at: 0 });
const hold = (ids: number[], listId = "L"): UnseenHold => ({
  total: ids.length,
  changes: ids.map((id) => change(id)),
  upTo: Math.max(0, ...ids),
  readers: [],
  listId,
});
const answer = (shown: unknown) => ({ outcome: { outcome: "selected", optionId: "a" }, _meta: { acpGateway: { shown } } });

describe("diffOf: what a card can show of a change", () => {
  it("is the diff the tool call reported for that path, a relative one resolved against the session's directory", () => {
    const call = { content: [{ type: "diff", path: "src/a.js", oldText: "x", newText: "y" }, { type: "content" }] };
    expect(diffOf(call, "/p", "/p/src/a.js")).toEqual({ oldText: "x", newText: "y" });
    expect(diffOf({ content: [{ type: "diff", path: "/p/new.js", newText: "n" }] }, "/p", "/p/new.js")).toEqual({
      oldText: null,
      newText: "n",
    });
  });

  it("is none when the call reported no diff for the path, several (no one diff is the change), or one too large to carry", () => {
    expect(diffOf({ content: [{ type: "diff", path: "/p/b.js", oldText: "x", newText: "y" }] }, "/p", "/p/a.js")).toBeUndefined();
    expect(diffOf({ locations: [{ path: "/p/a.js" }] }, "/p", "/p/a.js")).toBeUndefined();
    const twice = { type: "diff", path: "/p/a.js", oldText: "x", newText: "y" };
    expect(diffOf({ content: [twice, twice] }, "/p", "/p/a.js")).toBeUndefined();
    const big = {
      type: "diff",
      path: "/p/a.js",
      oldText: "x".repeat(UNSEEN_DIFF_CHARS / 2),
      newText: "y".repeat(UNSEEN_DIFF_CHARS / 2 + 1),
    };
    expect(diffOf({ content: [big] }, "/p", "/p/a.js")).toBeUndefined();
    expect(diffOf({ content: [{ ...big, oldText: "" }] }, "/p", "/p/a.js")).toBeDefined();
    expect(diffOf({ content: [{ type: "diff", path: "/p/a.js", oldText: "x", newText: 3 }] }, "/p", "/p/a.js")).toBeUndefined();
    expect(diffOf({ content: [{ type: "diff", path: "/p/a.js", newText: "y" }] }, "/p", ANYTHING)).toBeUndefined();
  });
});

describe("shownClaimOf: what an answer says its card showed", () => {
  it("reads `_meta.acpGateway.shown {list, changes}`, keeping only whole numbers, at most as many as a list holds", () => {
    expect(shownClaimOf(answer({ list: "L", changes: [1, "2", 3.5, 4] }))).toEqual({ list: "L", changes: [1, 4] });
    const many = Array.from({ length: 100 }, (_, i) => i);
    expect(shownClaimOf(answer({ list: "L", changes: many }))?.changes).toHaveLength(UNSEEN_LISTED);
  });

  it("is null when the answer says nothing, or says it in a shape it cannot be read in", () => {
    expect(shownClaimOf({ outcome: { outcome: "selected", optionId: "a" } })).toBeNull();
    expect(shownClaimOf(answer({ changes: [1] }))).toBeNull();
    expect(shownClaimOf(answer({ list: "L", changes: 1 }))).toBeNull();
    expect(shownClaimOf(answer("all"))).toBeNull();
    expect(shownClaimOf(null)).toBeNull();
  });
});

describe("seenBy: what a person's allow clears", () => {
  it("clears the listed changes the card named against the list it was sent", () => {
    expect(seenBy(hold([3, 5, 8]), { list: "L", changes: [8, 3] })).toEqual([3, 8]);
  });

  it("clears nothing without a claim, against another list, or for a request sent no list (readers only, or one without a list id)", () => {
    expect(seenBy(hold([3]), null)).toEqual([]);
    expect(seenBy(hold([3]), { list: "older", changes: [3] })).toEqual([]);
    expect(seenBy(undefined, { list: "L", changes: [3] })).toEqual([]);
    const { listId: _none, ...unlisted } = hold([3]);
    expect(seenBy(unlisted, { list: "L", changes: [3] })).toEqual([]);
  });

  it("property: never a change the list did not carry, never one the card did not name, and each at most once", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: UNSEEN_LISTED }),
        fc.array(fc.integer({ min: -5, max: 80 }), { maxLength: 40 }),
        fc.constantFrom("L", "M"),
        (listed, named, list) => {
          const cleared = seenBy(hold(listed), { list, changes: named });
          if (list !== "L") return cleared.length === 0;
          return (
            cleared.every((id) => listed.includes(id) && named.includes(id)) &&
            new Set(cleared).size === cleared.length &&
            listed.filter((id) => named.includes(id)).every((id) => cleared.includes(id))
          );
        },
      ),
    );
  });
});
