import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sha256HexSync } from "../../protocol/sha256";

describe("synchronous SHA-256", () => {
  it("agrees with node:crypto on known and generated text, across block boundaries", () => {
    expect(sha256HexSync("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256HexSync("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    for (const n of [55, 56, 63, 64, 65, 119, 120, 1000, 900_000]) {
      const text = "x".repeat(n);
      expect(sha256HexSync(text)).toBe(createHash("sha256").update(text).digest("hex"));
    }
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        expect(sha256HexSync(text)).toBe(createHash("sha256").update(text).digest("hex"));
      }),
    );
  });
});
