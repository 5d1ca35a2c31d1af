import { describe, expect, it } from "vitest";
import { TEXT_SEPARATOR, WIRE_MARK } from "../../protocol/wire-marks";

describe("the wire marks: one registry, each byte one meaning", () => {
  it("gives every mark its own byte, none of them the separator", () => {
    const bytes = [...Object.values(WIRE_MARK), TEXT_SEPARATOR];
    expect(new Set(bytes).size).toBe(bytes.length);
  });

  it("uses only bytes that no JSON text starts with, so a marked frame is never a peer's frame", () => {
    for (const mark of Object.values(WIRE_MARK)) {
      expect(mark).toHaveLength(1);
      expect(() => JSON.parse(`${mark}{}`) as unknown, JSON.stringify(mark)).toThrow(SyntaxError);
    }
  });
});
