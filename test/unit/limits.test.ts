import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseFrame } from "../../protocol/jsonrpc";
import {
  MAX_FRAME_BYTES,
  MAX_JSON_DEPTH,
  checkFrameLimits,
  exactUtf8Length,
  nestingDepth,
  topLevelFields,
  utf8LongerThan,
} from "../../protocol/limits";
import { ErrorCode } from "../../core/rpc-errors";

/** The nesting depth of a parsed value, by definition: a scalar is 0, a container one more than its deepest child. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (typeof value === "object" && value !== null) return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

/** Strings that try to confuse a scanner: brackets, quotes, backslashes, escapes, non-BMP characters. */
const trickyString = fc
  .array(fc.constantFrom("[", "]", "{", "}", '"', "\\", '\\"', "\\\\", "\u2028", "😀", "a", ":", ",", "\u0000"), {
    maxLength: 12,
  })
  .map((parts) => parts.join(""));

const tricky = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    trickyString,
    fc.integer(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(trickyString, tie("value"), { maxKeys: 4 }),
  ),
})).value;

const nested = (depth: number, open = "[", close = "]") => open.repeat(depth) + close.repeat(depth);

describe("frame limits, checked on the text before parsing", () => {
  it("the scanned nesting depth equals the parsed value's depth, whatever the strings contain", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), tricky), (value) => {
        const text = JSON.stringify(value);
        expect(nestingDepth(text)).toBe(depthOf(JSON.parse(text)));
      }),
      { numRuns: 2000 },
    );
  });

  it("skipping strings by indexOf scans as a character-at-a-time scan does, on any text (JSON or not)", () => {
    /** The scan before strings were skipped by indexOf: the reference. */
    const byCharacter = (text: string) => {
      let [depth, deepest, inString] = [0, 0, false];
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (inString) {
          if (c === "\\") i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === "[" || c === "{") deepest = Math.max(deepest, ++depth);
        else if (c === "]" || c === "}") depth--;
      }
      return deepest;
    };
    const piece = fc.constantFrom("[", "]", "{", "}", '"', "\\", "a", ",", "😀");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (parts) => {
        const text = parts.join("");
        expect(nestingDepth(text)).toBe(byCharacter(text));
      }),
      { numRuns: 3000 },
    );
    // Fixed cases: a quote after an even and an odd run of backslashes, and an unclosed string.
    for (const text of ['"\\\\"[', '"\\"[', '["\\\\\\"]', '"[[[']) expect(nestingDepth(text)).toBe(byCharacter(text));
  });

  it("random nesting of arrays and objects: refused exactly when deeper than the limit", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 200 }), trickyString, (kinds, leaf) => {
        let text = JSON.stringify(leaf);
        for (const isArray of kinds) text = isArray ? `[${text}]` : `{"k":${text}}`;
        const message = `{"jsonrpc":"2.0","id":7,"method":"m","params":${text}}`;
        const verdict = checkFrameLimits(message);
        const depth = kinds.length + 1;
        expect(verdict.ok).toBe(depth <= MAX_JSON_DEPTH);
        if (!verdict.ok) expect(verdict).toMatchObject({ id: 7, hasMethod: true, data: { reason: "too_deep" } });
      }),
    );
  });

  it("counts UTF-8 bytes exactly as TextEncoder does, and decides the size limit as they do", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), fc.integer({ min: 0, max: 900 }), (s, max) => {
        const bytes = new TextEncoder().encode(s).length;
        expect(exactUtf8Length(s)).toBe(bytes);
        expect(utf8LongerThan(s, max)).toBe(bytes > max);
      }),
    );
  });

  it("reads the top-level id and method from text it does not parse, never a nested one", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer()), fc.boolean(), tricky, (id, withMethod, params) => {
        const message = { jsonrpc: "2.0", params: { id: "nested", method: "nested", params }, id, ...(withMethod ? { method: "m" } : {}) };
        expect(topLevelFields(JSON.stringify(message))).toEqual({ id, hasMethod: withMethod });
      }),
    );
  });

  it("a prompt nested 20,000 arrays deep is refused with -32600 and its id, without being parsed", () => {
    const text = `{"jsonrpc":"2.0","id":"deep","method":"session/prompt","params":{"sessionId":"s","prompt":${nested(20_000)}}}`;
    const parsed = parseFrame(text);
    expect(parsed).toMatchObject({
      ok: false,
      reply: { id: "deep", error: { code: ErrorCode.invalidRequest, data: { reason: "too_deep" } } },
    });
  });

  it("an answer with deeply nested _meta is refused with id null, naming the request it answered", () => {
    const text = `{"jsonrpc":"2.0","id":12,"result":{"outcome":{"outcome":"selected","optionId":"allow"},"_meta":${nested(100, '{"a":', "}").replace(/\{"a":\}/, "{}")}}}`;
    const parsed = parseFrame(text);
    expect(parsed).toMatchObject({ ok: false, reply: { id: null, error: { code: ErrorCode.invalidRequest, data: { requestId: 12 } } } });
  });

  it("refuses a frame over the size limit before parsing, counting UTF-8 bytes, not characters", () => {
    const pad = "é".repeat(Math.ceil(MAX_FRAME_BYTES / 2));
    const parsed = parseFrame(`{"jsonrpc":"2.0","id":3,"method":"m","params":{"p":"${pad}"}}`);
    expect(parsed).toMatchObject({
      ok: false,
      reply: { id: 3, error: { code: ErrorCode.invalidRequest, data: { reason: "frame_too_large" } } },
    });
    expect(parseFrame(`{"jsonrpc":"2.0","id":3,"method":"m","params":{"p":"${"e".repeat(MAX_FRAME_BYTES - 100)}"}}`).ok).toBe(true);
  });

  it("depth 64 passes, 65 does not; brackets inside strings never count", () => {
    expect(checkFrameLimits(nested(64)).ok).toBe(true);
    expect(checkFrameLimits(nested(65)).ok).toBe(false);
    expect(checkFrameLimits(JSON.stringify({ s: "[".repeat(10_000) + '\\"' + "{".repeat(100) })).ok).toBe(true);
  });
});
