import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { displayText, symbolFor } from "../../protocol/display-text";

/** Code points no output may contain, whatever the context (the multi-line and emoji exceptions aside). */
function forbidden(cp: number): boolean {
  return (
    cp < 0x20 ||
    (cp >= 0x7f && cp <= 0x9f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0x200b ||
    cp === 0x200c ||
    cp === 0x200e ||
    cp === 0x200f ||
    cp === 0x061c ||
    cp === 0x2060 ||
    cp === 0xfeff ||
    cp === 0x00ad ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    (cp >= 0xe0000 && cp <= 0xe007f) ||
    (cp >= 0xe0100 && cp <= 0xe01ef) ||
    (cp >= 0xfe00 && cp <= 0xfe0d) ||
    (cp >= 0xd800 && cp <= 0xdfff)
  );
}

const codePoints = (s: string): number[] => {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const cp = s.codePointAt(i) as number;
    out.push(cp);
    if (cp > 0xffff) i++;
  }
  return out;
};

// Hostile material mixed with ordinary text: controls, bidi, invisibles, emoji parts, lone surrogates.
const hostile = fc.constantFrom(
  "\u001b",
  "[2K",
  "\u001b[1A",
  "\r",
  "\n",
  "\t",
  "\u0000",
  "\u007f",
  "\u0085",
  "\u009b",
  "\u202e",
  "\u2066",
  "\u2069",
  "\u200b",
  "\u200d",
  "\u200e",
  "\u061c",
  "\ufeff",
  "\u00ad",
  "\u2028",
  "\ufe0f",
  "\ufe0e",
  "\ufe00",
  "\u{e0041}",
  "\u{e0100}",
  "\ud800",
  "\udc00",
  "\u20e3",
  "1",
  "❤",
  "😀",
  "👨",
  "\u{1f3fd}",
  "␛",
  "⟨U+202E⟩",
  "rm -rf /",
  "é",
);
const hostileText = fc.array(fc.oneof(hostile, fc.string({ unit: "binary" })), { maxLength: 12 }).map((parts) => parts.join(""));
const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) });

/** The inverse of the replacement, for input that does not already contain the symbols. */
function recover(text: string): string {
  return text
    .replace(/⟨U\+([0-9A-F]{4,6})⟩/g, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/[\u2400-\u241f]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 0x2400))
    .replace(/\u2421/g, "\u007f");
}

describe("display text", () => {
  it("shows a terminal escape and a bidi override as visible symbols", () => {
    expect(displayText("ls\u001b[2K\u001b[1Arm -rf ~")).toEqual({ text: "ls␛[2K␛[1Arm -rf ~", escaped: 2 });
    expect(displayText("echo safe \u202e;hs.exe")).toEqual({ text: "echo safe ⟨U+202E⟩;hs.exe", escaped: 1 });
    expect(displayText("a\u200bb\u{e0041}\ud800").text).toBe("a⟨U+200B⟩b⟨U+E0041⟩⟨U+D800⟩");
    expect(displayText("\u0085\u007f").text).toBe("⟨U+0085⟩␡");
  });

  it("keeps line breaks and tabs only in multi-line text, and a carriage return only before a line feed", () => {
    expect(displayText("a\nb\tc").text).toBe("a␊b␉c");
    expect(displayText("a\nb\tc\r\nd\re", { multiline: true })).toEqual({ text: "a\nb\tc\r\nd␍e", escaped: 1 });
  });

  it("keeps emoji as written: ZWJ sequences, a selector after an emoji, keycaps", () => {
    for (const emoji of ["👨‍👩‍👧", "❤️", "❤️‍🔥", "1️⃣", "👍🏽"]) expect(displayText(emoji)).toEqual({ text: emoji, escaped: 0 });
    // A selector anywhere else, a run of them, or a joiner between letters is replaced.
    expect(displayText("a\ufe0f").escaped).toBe(1);
    expect(displayText("❤\ufe0f\ufe0f").escaped).toBe(1);
    expect(displayText("a\u200db").escaped).toBe(1);
    expect(displayText("1\ufe0f").escaped).toBe(1);
  });

  it("output never contains a forbidden code point", () => {
    fc.assert(
      fc.property(hostileText, fc.boolean(), (raw, multiline) => {
        const { text } = displayText(raw, { multiline });
        for (const cp of codePoints(text)) {
          if (multiline && (cp === 0x0a || cp === 0x09 || cp === 0x0d)) continue;
          expect(forbidden(cp), `U+${cp.toString(16)} in ${JSON.stringify(text)}`).toBe(false);
        }
        if (multiline) expect(/\r(?!\n)/.test(text)).toBe(false);
      }),
    );
  });

  it("is the identity on printable text", () => {
    fc.assert(
      fc.property(printable, (raw) => {
        expect(displayText(raw)).toEqual({ text: raw, escaped: 0 });
      }),
    );
  });

  it("is idempotent: shown text shown again is unchanged", () => {
    fc.assert(
      fc.property(hostileText, fc.boolean(), (raw, multiline) => {
        const once = displayText(raw, { multiline }).text;
        expect(displayText(once, { multiline })).toEqual({ text: once, escaped: 0 });
      }),
    );
  });

  it("every replaced code point can be read back from what is shown", () => {
    fc.assert(
      fc.property(hostileText, fc.boolean(), (raw, multiline) => {
        fc.pre(!/[\u2400-\u2421⟨]/.test(raw));
        const shown = displayText(raw, { multiline });
        expect(recover(shown.text)).toBe(raw);
        expect(shown.escaped > 0).toBe(shown.text !== raw);
      }),
    );
  });

  it("names each code point by its U+2400 picture or its number", () => {
    expect(symbolFor(0x1b)).toBe("␛");
    expect(symbolFor(0)).toBe("␀");
    expect(symbolFor(0x202e)).toBe("⟨U+202E⟩");
  });
});
