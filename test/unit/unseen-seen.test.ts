// protocol/unseen.ts, decision 0064: seen means each change shown as the server sent it. What a change
// keeps to be shown (`diffOf`: the diff its tool call reported for its path, bounded), what an answer
// may claim (`shownClaimOf`), and which changes a person's allow clears (`seenBy`): only listed ones its
// card named against the list it was sent — never one it was not sent, never by an answer that says nothing.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ANYTHING,
  UNSEEN_COMMAND_CHARS,
  UNSEEN_DIFF_CHARS,
  UNSEEN_LISTED,
  type UnseenChange,
  type UnseenHold,
  diffOf,
  seenBy,
  shownClaimOf,
  stepOf,
} from "../../protocol/unseen";

/** A change shown by its diff, or (`blind`) one no diff can show: a command's `*`; `running` when its step has not finished. */
const change = (id: number, blind = false, running = false): UnseenChange => ({
  id,
  path: blind ? ANYTHING : `/p/f${id}`,
  sessionId: "s",
  toolCallId: `t${id}`,
  ruleId: "rule_1",
  at: 0,
  ...(blind ? { command: "make", cwd: "/p" } : { diff: { oldText: null, newText: `f${id}` } }),
  ...(running ? { running } : {}),
});
/** A list of changes with diffs, but `blind` ones (no diff) and the `running` among those. */
const hold = (ids: number[], listId = "L", blind: number[] = [], running: number[] = []): UnseenHold => ({
  total: ids.length,
  changes: ids.map((id) => change(id, blind.includes(id), running.includes(id))),
  upTo: Math.max(0, ...ids),
  readers: [],
  listId,
});
const claim = (list: string, changes: number[], accepted: number[] = []) => ({ list, changes, accepted });
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
  it("reads `_meta.acpGateway.shown {list, changes, accepted}`, keeping only whole numbers, at most as many as a list holds", () => {
    expect(shownClaimOf(answer({ list: "L", changes: [1, "2", 3.5, 4] }))).toEqual({ list: "L", changes: [1, 4], accepted: [] });
    expect(shownClaimOf(answer({ list: "L", changes: [], accepted: [9, "x", 2.5] }))).toEqual({ list: "L", changes: [], accepted: [9] });
    expect(shownClaimOf(answer({ list: "L", changes: [1], accepted: "all" }))?.accepted).toEqual([]);
    const many = Array.from({ length: 100 }, (_, i) => i);
    expect(shownClaimOf(answer({ list: "L", changes: many }))?.changes).toHaveLength(UNSEEN_LISTED);
    expect(shownClaimOf(answer({ list: "L", changes: [], accepted: many }))?.accepted).toHaveLength(UNSEEN_LISTED);
  });

  it("is null when the answer says nothing, or says it in a shape it cannot be read in", () => {
    expect(shownClaimOf({ outcome: { outcome: "selected", optionId: "a" } })).toBeNull();
    expect(shownClaimOf(answer({ changes: [1] }))).toBeNull();
    expect(shownClaimOf(answer({ list: "L", changes: 1 }))).toBeNull();
    expect(shownClaimOf(answer("all"))).toBeNull();
    expect(shownClaimOf(null)).toBeNull();
  });
});

describe("stepOf: what a card can say of a change no diff shows", () => {
  it("is the command and its directory, a long command cut and saying so, nothing for a step without a command", () => {
    expect(stepOf({ command: "make test &", workdir: "/p" })).toEqual({ command: "make test &", cwd: "/p" });
    expect(stepOf({ command: null, workdir: null })).toEqual({});
    const long = stepOf({ command: "x".repeat(UNSEEN_COMMAND_CHARS + 5), workdir: null });
    expect(long.command).toMatch(/… \(cut\)$/);
    expect(long.command?.length).toBeLessThan(UNSEEN_COMMAND_CHARS + 10);
    expect(long.cwd).toBeUndefined();
  });
});

describe("seenBy: what a person's allow clears", () => {
  it("clears the listed changes with diffs the card named against the list it was sent", () => {
    expect(seenBy(hold([3, 5, 8]), claim("L", [8, 3]))).toEqual([3, 8]);
  });

  it("a change no diff can show is cleared only by the person's explicit acceptance of it, not by being named (decision 0068)", () => {
    const listed = hold([3, 5, 8], "L", [5, 8]);
    expect(seenBy(listed, claim("L", [3, 5, 8]))).toEqual([3]);
    expect(seenBy(listed, claim("L", [3, 5, 8], [5]))).toEqual([3, 5]);
    expect(seenBy(listed, claim("L", [], [5, 8]))).toEqual([5, 8]);
    // Accepting a change that has a diff is not how it is seen: its diff must be named.
    expect(seenBy(listed, claim("L", [], [3]))).toEqual([]);
  });

  it("a change whose step has not reported finishing cannot be accepted: it may still be writing", () => {
    expect(seenBy(hold([4, 6], "L", [4, 6], [6]), claim("L", [4, 6], [4, 6]))).toEqual([4]);
  });

  it("clears nothing without a claim, against another list, or for a request sent no list (readers only, or one without a list id)", () => {
    expect(seenBy(hold([3]), null)).toEqual([]);
    expect(seenBy(hold([3], "L", [3]), claim("older", [3], [3]))).toEqual([]);
    expect(seenBy(undefined, claim("L", [3], [3]))).toEqual([]);
    const { listId: _none, ...unlisted } = hold([3]);
    expect(seenBy(unlisted, claim("L", [3]))).toEqual([]);
  });

  it("property: a change with a diff only when named, one without only when accepted and finished, never one the list did not carry, each at most once", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { maxLength: UNSEEN_LISTED }),
        fc.array(fc.integer({ min: -5, max: 80 }), { maxLength: 40 }),
        fc.array(fc.integer({ min: -5, max: 80 }), { maxLength: 40 }),
        fc.func(fc.constantFrom<"diff" | "blind" | "running">("diff", "blind", "running")),
        fc.constantFrom("L", "M"),
        (listed, named, accepted, kindOf, list) => {
          const kind = new Map(listed.map((id) => [id, kindOf(id)]));
          const blind = listed.filter((id) => kind.get(id) !== "diff");
          const running = listed.filter((id) => kind.get(id) === "running");
          const cleared = seenBy(hold(listed, "L", blind, running), claim(list, named, accepted));
          if (list !== "L") return cleared.length === 0;
          const clears = (id: number) => (kind.get(id) === "diff" ? named.includes(id) : kind.get(id) === "blind" && accepted.includes(id));
          return (
            cleared.every((id) => listed.includes(id) && clears(id)) &&
            new Set(cleared).size === cleared.length &&
            listed.filter(clears).every((id) => cleared.includes(id))
          );
        },
      ),
    );
  });
});
