// The agent link's wire (protocol/agent-link-wire.ts): what one end encodes, the other decodes to the
// same message; anything else decodes to undefined and never throws, whatever text arrives.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type LinkToAgent, type LinkToSession, encodeLink, linkToAgent, linkToSession } from "../../protocol/agent-link-wire";

/** A frame number as the session makes them (agent-socket.ts: Date.now() * 1000, counted up): any safe integer. */
const frameNumber = fc.maxSafeInteger();
/** A JSON value as JSON gives it back (-0 is sent as 0). */
const json = fc.jsonValue().map((value) => JSON.parse(JSON.stringify(value)) as unknown);
const toSession: fc.Arbitrary<LinkToSession> = fc.oneof(
  fc.record({ t: fc.constant("batch" as const), n: frameNumber, items: fc.array(json) }, { requiredKeys: ["t", "items"] }),
  fc.record({ t: fc.constant("sent" as const), n: frameNumber, delivered: fc.boolean() }),
  fc.record({ t: fc.constant("failed" as const), n: frameNumber }),
);
const toAgent: fc.Arbitrary<LinkToAgent> = fc.oneof(
  fc.record({ t: fc.constant("ack" as const), n: frameNumber }, { requiredKeys: ["t"] }),
  fc.record({ t: fc.constant("toAgent" as const), n: frameNumber, frame: fc.dictionary(fc.string(), json) }),
);

/** Independent of the decoders: is this value a message the session reads, and which? */
function expectedToSession(value: unknown): LinkToSession | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const m = value as Record<string, unknown>;
  switch (m.t) {
    case "batch":
      if (!Array.isArray(m.items) || !(m.n === undefined || typeof m.n === "number")) return undefined;
      return typeof m.n === "number" ? { t: "batch", n: m.n, items: m.items } : { t: "batch", items: m.items };
    case "sent":
      return typeof m.n === "number" && typeof m.delivered === "boolean" ? { t: "sent", n: m.n, delivered: m.delivered } : undefined;
    case "failed":
      return typeof m.n === "number" ? { t: "failed", n: m.n } : undefined;
    default:
      return undefined;
  }
}

function expectedToAgent(value: unknown): LinkToAgent | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const m = value as Record<string, unknown>;
  if (m.t === "ack" && typeof m.n === "number") return { t: "ack", n: m.n };
  if (m.t === "ack") return m.n === undefined ? { t: "ack" } : undefined;
  if (m.t === "toAgent" && typeof m.n === "number" && typeof m.frame === "object" && m.frame !== null) {
    return { t: "toAgent", n: m.n, frame: m.frame };
  }
  return undefined;
}

/** Objects shaped almost like link messages: every kind, with fields missing, of the wrong type, or extra. */
const anyField = fc.oneof(fc.jsonValue(), fc.constant(undefined));
const nearMessage = fc.record(
  {
    t: fc.oneof(fc.constantFrom("batch", "sent", "failed", "ack", "toAgent", "Batch", ""), fc.jsonValue()),
    n: anyField,
    items: anyField,
    delivered: anyField,
    frame: anyField,
    extra: anyField,
  },
  { requiredKeys: [] },
);

describe("agent link wire: round trip", () => {
  it("every message the AgentObject sends decodes, at the session, to itself", () => {
    expect(linkToSession(encodeLink({ t: "batch", items: [] }))).toEqual({ t: "batch", items: [] });
    expect(linkToSession(encodeLink({ t: "sent", n: 1, delivered: false }))).toEqual({ t: "sent", n: 1, delivered: false });
    expect(linkToSession(encodeLink({ t: "failed", n: 1_764_000_000_000_001 }))).toEqual({ t: "failed", n: 1_764_000_000_000_001 });
    fc.assert(
      fc.property(toSession, (message) => {
        expect(linkToSession(encodeLink(message))).toEqual(message);
      }),
      { numRuns: 1000 },
    );
  });

  it("every message the session sends decodes, at the AgentObject, to itself", () => {
    expect(linkToAgent(encodeLink({ t: "ack" }))).toEqual({ t: "ack" });
    expect(linkToAgent(encodeLink({ t: "ack", n: 3 }))).toEqual({ t: "ack", n: 3 });
    const frame = { type: "response", epoch: 1, id: "perm-1", result: { outcome: { outcome: "selected", optionId: "allow" } } };
    expect(linkToAgent(encodeLink({ t: "toAgent", n: 7, frame }))).toEqual({ t: "toAgent", n: 7, frame });
    fc.assert(
      fc.property(toAgent, (message) => {
        expect(linkToAgent(encodeLink(message))).toEqual(message);
      }),
      { numRuns: 1000 },
    );
  });

  it("each end reads only its own direction: a session's message is nothing to the session, and the reverse", () => {
    fc.assert(
      fc.property(toSession, toAgent, (forSession, forAgent) => {
        expect(linkToAgent(encodeLink(forSession))).toBeUndefined();
        expect(linkToSession(encodeLink(forAgent))).toBeUndefined();
      }),
    );
  });
});

describe("agent link wire: anything else", () => {
  it("arbitrary text never throws, and decodes to undefined or to exactly the well-formed message it holds", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.string({ unit: "binary" }), fc.json()), (text) => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        expect(linkToSession(text)).toEqual(expectedToSession(parsed));
        expect(linkToAgent(text)).toEqual(expectedToAgent(parsed));
      }),
      { numRuns: 2000 },
    );
  });

  it("near-misses (fields missing, of the wrong type, extra) decode as the shape says, extra fields dropped", () => {
    fc.assert(
      fc.property(nearMessage, (message) => {
        const text = JSON.stringify(message);
        // What the wire carries, not the value it came from: JSON.stringify writes -0 as 0 (a
        // counterexample fast-check found: `frame: [-0]`).
        const sent: unknown = JSON.parse(text);
        expect(linkToSession(text)).toEqual(expectedToSession(sent));
        expect(linkToAgent(text)).toEqual(expectedToAgent(sent));
      }),
      { numRuns: 5000 },
    );
  });

  it("a frame holding -0 decodes as the 0 the wire carries (a counterexample fast-check found)", () => {
    const text = JSON.stringify({ t: "toAgent", n: 1, frame: [-0] });
    expect(linkToAgent(text)).toEqual({ t: "toAgent", n: 1, frame: [0] });
  });

  it.each([
    ["n missing", '{"t":"sent","delivered":true}'],
    ["n a string", '{"t":"sent","n":"1","delivered":true}'],
    ["delivered missing", '{"t":"sent","n":1}'],
    ["delivered a string", '{"t":"sent","n":1,"delivered":"true"}'],
    ["failed without n", '{"t":"failed"}'],
    ["failed with n null", '{"t":"failed","n":null}'],
    ["items missing", '{"t":"batch"}'],
    ["items an object", '{"t":"batch","items":{"0":1}}'],
    ["items a string", '{"t":"batch","items":"[]"}'],
    ["a batch's n a string", '{"t":"batch","n":"1","items":[]}'],
    ["an array", '[{"t":"ack"}]'],
    ["null", "null"],
    ["a number", "1"],
    ["a string", '"ack"'],
    ["no t", '{"n":1,"items":[]}'],
    ["t of another case", '{"t":"Batch","items":[]}'],
    ["not JSON", '{"t":"ack"'],
    ["empty", ""],
  ])("the session reads nothing from %s", (_, text) => {
    expect(linkToSession(text)).toBeUndefined();
  });

  it.each([
    ["n missing", '{"t":"toAgent","frame":{}}'],
    ["n a string", '{"t":"toAgent","n":"1","frame":{}}'],
    ["frame missing", '{"t":"toAgent","n":1}'],
    ["frame null", '{"t":"toAgent","n":1,"frame":null}'],
    ["frame a string", '{"t":"toAgent","n":1,"frame":"{}"}'],
    ["an array", '[{"t":"ack"}]'],
    ["null", "null"],
    ["a JSON-RPC frame (what a client is sent)", '{"jsonrpc":"2.0","method":"session/update","params":{}}'],
    ["t of another case", '{"t":"Ack"}'],
    ["an ack's n a string", '{"t":"ack","n":"1"}'],
    ["not JSON", "ack"],
  ])("the AgentObject reads nothing from %s", (_, text) => {
    expect(linkToAgent(text)).toBeUndefined();
  });
});

describe("agent link wire: a batch's frame texts travel after its header, not escaped inside it", () => {
  const item = fc.record(
    {
      kind: fc.constantFrom("frame", "response", "gone"),
      seq: fc.nat(),
      // Any text: JSON, quotes and backslashes, empty, or holding a NUL (which then stays in its item).
      text: fc.oneof(fc.string({ unit: "binary" }), fc.json(), fc.constant(""), fc.constant("a\u0000b")),
    },
    { requiredKeys: ["kind", "seq"] },
  );

  it("a batch of items with any texts, or none, decodes to equal items in the same order", () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 8 }), (items) => {
        expect(linkToSession(encodeLink({ t: "batch", items }))).toEqual({ t: "batch", items });
      }),
    );
  });

  it("a numbered batch keeps its number beside the moved texts; one of the deploy before (no number) writes the bytes it wrote then", () => {
    const items = [{ kind: "frame", seq: 1, text: "{}" }];
    expect(linkToSession(encodeLink({ t: "batch", n: 4, items }))).toEqual({ t: "batch", n: 4, items });
    expect(encodeLink({ t: "batch", items })).toBe('{"t":"batch","items":[{"kind":"frame","seq":1}],"moved":[0]}\u0000{}');
    expect(encodeLink({ t: "ack" })).toBe('{"t":"ack"}');
  });

  it("a frame's JSON follows the header byte for byte, never escaped into a string", () => {
    const frame = '{"jsonrpc":"2.0","method":"session/update","params":{"text":"say \\"hi\\""}}';
    const encoded = encodeLink({ t: "batch", items: [{ kind: "frame", epoch: 1, text: frame, seq: 7 }] });
    expect(encoded.endsWith(`\u0000${frame}`)).toBe(true);
    expect(encoded.split("\u0000")[0]).not.toContain("jsonrpc");
  });

  it.each([
    ["more texts than moved items", '{"t":"batch","items":[{"k":1}],"moved":[0]}\u0000{}\u0000{}'],
    ["fewer texts than moved items", '{"t":"batch","items":[{"k":1},{"k":2}],"moved":[0,1]}\u0000{}'],
    ["texts and no moved list", '{"t":"batch","items":[{"k":1}]}\u0000{}'],
    ["a moved list and no texts", '{"t":"batch","items":[{"k":1}],"moved":[0]}'],
    ["moved out of order", '{"t":"batch","items":[{"k":1},{"k":2}],"moved":[1,0]}\u0000{}\u0000{}'],
    ["moved twice", '{"t":"batch","items":[{"k":1}],"moved":[0,0]}\u0000{}\u0000{}'],
    ["moved past the end", '{"t":"batch","items":[{"k":1}],"moved":[1]}\u0000{}'],
    ["moved naming a non-object", '{"t":"batch","items":[1],"moved":[0]}\u0000{}'],
    ["moved naming an item that kept its text", '{"t":"batch","items":[{"text":"x"}],"moved":[0]}\u0000{}'],
    ["moved not a list", '{"t":"batch","items":[{"k":1}],"moved":0}\u0000{}'],
    ["a fractional index", '{"t":"batch","items":[{"k":1}],"moved":[0.5]}\u0000{}'],
  ])("a batch whose texts and moved list do not pair up is refused: %s", (_, text) => {
    expect(linkToSession(text)).toBeUndefined();
  });
});
