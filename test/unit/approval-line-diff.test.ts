import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lineDiff } from "../../protocol/line-diff";

const side = (lines: { op: string; text: string }[], keep: string) =>
  lines
    .filter((l) => l.op === " " || l.op === keep)
    .map((l) => l.text)
    .join("\n");

describe("line diff of the approval page", () => {
  it("marks a changed line as removed then added, and keeps the others", () => {
    expect(lineDiff("a\nb\nc", "a\nB\nc")).toEqual([
      { op: " ", text: "a" },
      { op: "-", text: "b" },
      { op: "+", text: "B" },
      { op: " ", text: "c" },
    ]);
    expect(lineDiff(null, "new")).toEqual([{ op: "+", text: "new" }]);
  });

  it("always rebuilds both texts exactly (property)", () => {
    const text = fc.array(fc.constantFrom("a", "b", "c", ""), { maxLength: 12 }).map((l) => l.join("\n"));
    fc.assert(
      fc.property(text, text, (a, b) => {
        const d = lineDiff(a, b);
        expect(side(d, "-")).toBe(a === "" ? "" : a);
        expect(side(d, "+")).toBe(b);
      }),
    );
  });
});
