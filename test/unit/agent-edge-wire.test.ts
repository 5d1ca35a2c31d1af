// The control socket's wire between the edge and the AgentObject (protocol/agent-edge-wire.ts): every
// message one end encodes, the other decodes to the same message, whatever JSON text it carries;
// a frame without the mark passes as it is (plain); a header that is not one of the four kinds,
// complete and well typed, decodes to undefined and never throws; and no JSON text (all an agent's
// frames are, once the edge has parsed them) can pass for a control frame.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AgentObjectToEdge, CONTROL_MARK, type EdgeToAgentObject, decodeControl, encodeControl } from "../../protocol/agent-edge-wire";

const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);

/** A JSON text as an agent sends one: any value, strings of any code units (JSON.stringify escapes the lone surrogates). */
const jsonText = fc
  .oneof(fc.jsonValue({ stringUnit: "binary" }), fc.jsonValue({ stringUnit: "grapheme" }))
  .map((value) => JSON.stringify(value));
/** JSON text with the whitespace JSON allows around it. */
const ws = fc.stringMatching(/^[ \t\n\r]*$/);
const paddedJsonText = fc.tuple(ws, jsonText, ws).map(([a, text, b]) => a + text + b);
const count = fc.maxSafeNat();
/** A session id: any string (it goes inside the JSON header, escaped). */
const sessionId = fc.string({ unit: "binary" });

const message: fc.Arbitrary<EdgeToAgentObject | AgentObjectToEdge> = fc.oneof(
  fc.record({ t: fc.constant("attributed" as const), s: sessionId, c: count, text: paddedJsonText }),
  fc.array(fc.tuple(count, paddedJsonText), { minLength: 1, maxLength: 8 }).chain((pairs) =>
    fc.record({
      t: fc.constant("handover" as const),
      s: sessionId,
      c: count,
      seqs: fc.constant(pairs.map(([seq]) => seq)),
      texts: fc.constant(pairs.map(([, text]) => text)),
    }),
  ),
  fc.record({ t: fc.constant("request" as const), s: sessionId, id: count, text: paddedJsonText }),
  fc.record({
    t: fc.constant("answer" as const),
    s: sessionId,
    id: fc.oneof(
      fc.string({ unit: "binary" }),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Object.is(x, -0)),
    ),
    text: paddedJsonText,
  }),
  fc.record({ t: fc.constant("epoch" as const), epoch: count }),
  fc
    .tuple(fc.nat({ max: Number.MAX_SAFE_INTEGER - 1 }), fc.maxSafeNat(), sessionId, count, count)
    .map(([from, to, s, c, epoch]) => ({ t: "grant" as const, s, c, from, to: Math.max(from + 1, to), epoch })),
);

/** A header and body as the wire lays them out, for the malformed cases. */
const frame = (header: unknown, ...body: string[]) => CONTROL_MARK + JSON.stringify(header) + body.map((text) => "\u0000" + text).join("");

describe("the edge's control socket wire", () => {
  it("decodes what it encodes, for all six kinds, whatever JSON text they carry", () => {
    fc.assert(
      fc.property(message, (m) => {
        const encoded = encodeControl(m);
        expect(encoded.startsWith(CONTROL_MARK)).toBe(true);
        expect(decodeControl(encoded)).toEqual(m);
      }),
      { numRuns: RUNS },
    );
  });

  it("passes a frame without the mark as it is", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }).filter((text) => !text.startsWith(CONTROL_MARK)),
        (text) => {
          expect(decodeControl(text)).toEqual({ t: "plain", text });
        },
      ),
      { numRuns: RUNS },
    );
    expect(decodeControl("")).toEqual({ t: "plain", text: "" });
    expect(decodeControl(` ${CONTROL_MARK}{}`)).toEqual({ t: "plain", text: ` ${CONTROL_MARK}{}` });
  });

  it("no JSON text ever decodes as a control frame: nothing an agent sends passes for one", () => {
    fc.assert(
      fc.property(paddedJsonText, (text) => {
        expect(decodeControl(text)).toEqual({ t: "plain", text });
      }),
      { numRuns: RUNS },
    );
  });

  it("never throws, whatever follows the mark", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.string({ unit: "binary" }), (header, body) => {
        decodeControl(CONTROL_MARK + header);
        decodeControl(CONTROL_MARK + header + "\u0000" + body);
      }),
      { numRuns: RUNS },
    );
  });

  describe("refuses a malformed header", () => {
    const good = {
      attributed: { t: "attributed", s: "s1", c: 3 },
      handover: { t: "handover", s: "s1", c: 3, seqs: [7, 8] },
      request: { t: "request", s: "s1", id: 5 },
      grant: { t: "grant", s: "s1", c: 3, from: 10, to: 20, epoch: 2 },
    } as const;
    const bodies: Record<keyof typeof good, string[]> = { attributed: ["{}"], handover: ["{}", "[]"], request: ["{}"], grant: [] };
    const numeric: Record<keyof typeof good, string[]> = {
      attributed: ["c"],
      handover: ["c"],
      request: ["id"],
      grant: ["c", "from", "to", "epoch"],
    };
    const kinds = Object.keys(good) as (keyof typeof good)[];

    it("the well-formed ones it is checked against decode", () => {
      for (const kind of kinds) expect(decodeControl(frame(good[kind], ...bodies[kind]))?.t).toBe(kind);
    });

    it("a missing field", () => {
      for (const kind of kinds) {
        for (const field of Object.keys(good[kind])) {
          const header: Record<string, unknown> = { ...good[kind] };
          delete header[field];
          expect(decodeControl(frame(header, ...bodies[kind])), `${kind} without ${field}`).toBeUndefined();
        }
      }
    });

    it("a field of the wrong type", () => {
      const wrong = [null, true, "3", [3], { n: 3 }];
      for (const kind of kinds) {
        for (const value of wrong) {
          expect(
            decodeControl(frame({ ...good[kind], s: value === "3" ? 3 : value }, ...bodies[kind])),
            `${kind} s=${JSON.stringify(value)}`,
          ).toBeUndefined();
          for (const field of numeric[kind]) {
            expect(
              decodeControl(frame({ ...good[kind], [field]: value }, ...bodies[kind])),
              `${kind} ${field}=${JSON.stringify(value)}`,
            ).toBeUndefined();
          }
        }
      }
      expect(decodeControl(frame({ ...good.handover, seqs: 7 }, "{}"))).toBeUndefined();
      expect(decodeControl(frame({ ...good.handover, seqs: ["7", 8] }, "{}", "[]"))).toBeUndefined();
    });

    it("a number that is negative, fractional or beyond the safe integers", () => {
      // As they appear in the JSON text: 1e400 parses to Infinity.
      const bad = ["-1", "0.5", String(2 ** 53), "1e400", "-0.0001"];
      for (const kind of kinds) {
        for (const field of numeric[kind]) {
          for (const value of bad) {
            const header = JSON.stringify({ ...good[kind], [field]: 0 }).replace(`"${field}":0`, `"${field}":${value}`);
            const text = CONTROL_MARK + header + bodies[kind].map((b) => "\u0000" + b).join("");
            expect(decodeControl(text), `${kind} ${field}=${value}`).toBeUndefined();
          }
        }
      }
      expect(decodeControl(frame({ ...good.handover, seqs: [7, -8] }, "{}", "[]"))).toBeUndefined();
      expect(decodeControl(frame({ ...good.handover, seqs: [7, 2 ** 53] }, "{}", "[]"))).toBeUndefined();
    });

    it("a grant whose range is empty or backwards", () => {
      expect(decodeControl(frame({ ...good.grant, from: 20, to: 20 }))).toBeUndefined();
      expect(decodeControl(frame({ ...good.grant, from: 21, to: 20 }))).toBeUndefined();
      expect(decodeControl(frame({ ...good.grant, from: 19, to: 20 }))?.t).toBe("grant");
    });

    it("a handover whose numbers and texts do not pair up", () => {
      expect(decodeControl(frame(good.handover, "{}"))).toBeUndefined();
      expect(decodeControl(frame(good.handover, "{}", "[]", "1"))).toBeUndefined();
      expect(decodeControl(frame({ ...good.handover, seqs: [] }, "{}"))).toBeUndefined();
    });

    it("a frame kind without its body (no NUL after the header)", () => {
      for (const kind of ["attributed", "handover", "request"] as const) expect(decodeControl(frame(good[kind])), kind).toBeUndefined();
    });

    it("an unknown kind, or a header that is not a JSON object", () => {
      expect(decodeControl(frame({ ...good.attributed, t: "grantx" }, "{}"))).toBeUndefined();
      expect(decodeControl(frame({ ...good.attributed, t: "plain" }, "{}"))).toBeUndefined();
      for (const header of ["", "{", "[]", "null", "3", '"attributed"', '[{"t":"attributed","s":"s","c":1}]']) {
        expect(decodeControl(CONTROL_MARK + header + "\u0000{}"), header).toBeUndefined();
      }
    });

    it("any header that is not one of the four, complete and well typed (property)", () => {
      // A well-formed header with one field replaced by any JSON value: decodes only if that value is valid there.
      const fields = fc.constantFrom(...kinds.flatMap((kind) => Object.keys(good[kind]).map((field) => [kind, field] as const)));
      fc.assert(
        fc.property(fields, fc.jsonValue(), ([kind, field], value) => {
          const header = { ...good[kind], [field]: value };
          const decoded = decodeControl(frame(header, ...bodies[kind]));
          const valid =
            field === "s"
              ? typeof value === "string"
              : field === "t"
                ? value === kind
                : field === "seqs"
                  ? Array.isArray(value) && value.length === 2 && value.every((v) => Number.isSafeInteger(v) && (v as number) >= 0)
                  : Number.isSafeInteger(value) &&
                    (value as number) >= 0 &&
                    (field === "from" ? (value as number) < good.grant.to : field === "to" ? (value as number) > good.grant.from : true);
          // The header travels as JSON text, where -0 is written 0: expect what the text says.
          if (valid) expect(decoded).toMatchObject({ ...(JSON.parse(JSON.stringify(header)) as object), t: kind });
          else expect(decoded).toBeUndefined();
        }),
        // -0 in a numeric field: a counterexample this property once found (JSON writes it 0).
        { numRuns: RUNS, examples: [[["grant", "from"], -0] as [readonly [string, string], unknown]] },
      );
    });
  });

  // Found by this suite (fixed): an empty handover's body "" split to one empty text, so it did not
  // round-trip. The router never sends one (edge-routing.ts `handOver` sends only when it has items).
  it("an empty handover decodes as it was encoded", () => {
    const empty: EdgeToAgentObject = { t: "handover", s: "s1", c: 1, seqs: [], texts: [] };
    expect(decodeControl(encodeControl(empty))).toEqual(empty);
  });
});
