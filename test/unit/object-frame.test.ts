// The one framing of the sockets between objects (protocol/object-frame.ts): a header and the texts
// after it come back as they went, and the three wires that use it still write, byte for byte, what
// they wrote before it existed (an edge Worker and an object of two deploys may talk during a deploy).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame, framable, textsOf } from "../../protocol/object-frame";
import { encodeLink } from "../../protocol/agent-link-wire";
import { CONTROL_MARK, encodeControl } from "../../protocol/agent-edge-wire";

const NUL = "\u0000";
/** A JSON object as JSON gives it back (-0 is sent as 0). */
const header = fc.dictionary(fc.string(), fc.jsonValue()).map((value) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>);
const text = fc.string().filter(framable);

describe("object frames", () => {
  it("a header with no body, one text, or several texts decodes to the same header and texts, with or without a mark", () => {
    fc.assert(
      fc.property(header, fc.array(text), fc.constantFrom("", CONTROL_MARK), (h, texts, mark) => {
        const none = decodeFrame(encodeFrame(h, undefined, mark), mark);
        expect(none).toEqual({ header: h, body: undefined });
        const several = decodeFrame(encodeFrame(h, texts, mark), mark);
        expect(several?.header).toEqual(h);
        expect(textsOf(several?.body ?? "", texts.length)).toEqual(texts);
        const one = decodeFrame(encodeFrame(h, texts[0] ?? "", mark), mark);
        expect(one?.body).toBe(texts[0] ?? "");
      }),
    );
  });

  it("anything that is not a framed JSON object, or lacks the mark, decodes to undefined and never throws", () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom("", CONTROL_MARK), (s, mark) => {
        const decoded = decodeFrame(s, mark);
        if (decoded) expect(s.startsWith(mark)).toBe(true);
      }),
    );
    expect(decodeFrame("[1]")).toBeUndefined();
    expect(decodeFrame(`{"t":1}`, CONTROL_MARK)).toBeUndefined();
    expect(decodeFrame(`not json${NUL}{}`)).toBeUndefined();
  });

  it("a body holds exactly the count of texts its header names", () => {
    expect(textsOf("", 0)).toEqual([]);
    expect(textsOf("", 1)).toEqual([""]);
    expect(textsOf(`a${NUL}b`, 2)).toEqual(["a", "b"]);
    expect(textsOf(`a${NUL}b`, 1)).toBeUndefined();
    expect(textsOf("a", 0)).toBeUndefined();
  });

  it("the agent link, the edge link and the control socket write what they wrote before the shared framing", () => {
    const frame = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}`;
    // As agent-link-wire.ts wrote it: the header, then each moved text behind a NUL.
    expect(
      encodeLink({
        t: "batch",
        items: [
          { kind: "frame", epoch: 1, text: frame, seq: 7 },
          { kind: "gone", gwIds: [] },
        ],
      }),
    ).toBe(`{"t":"batch","items":[{"kind":"frame","epoch":1,"seq":7},{"kind":"gone","gwIds":[]}],"moved":[0]}${NUL}${frame}`);
    expect(encodeLink({ t: "batch", items: [{ kind: "gone", gwIds: [1] }] })).toBe(`{"t":"batch","items":[{"kind":"gone","gwIds":[1]}]}`);
    expect(encodeLink({ t: "ack" })).toBe(`{"t":"ack"}`);
    expect(encodeLink({ t: "toAgent", n: 3, frame: { type: "notification" } })).toBe(
      `{"t":"toAgent","n":3,"frame":{"type":"notification"}}`,
    );
    expect(encodeLink({ t: "sent", n: 3, delivered: true })).toBe(`{"t":"sent","n":3,"delivered":true}`);
    // As agent-edge-wire.ts wrote it: the mark, the header, a NUL, the body (a grant has none).
    expect(encodeControl({ t: "attributed", s: "s", c: 2, text: frame })).toBe(
      `${CONTROL_MARK}{"t":"attributed","s":"s","c":2}${NUL}${frame}`,
    );
    expect(encodeControl({ t: "handover", s: "s", c: 3, seqs: [4, 5], texts: ["a", "b"] })).toBe(
      `${CONTROL_MARK}{"t":"handover","s":"s","c":3,"seqs":[4,5]}${NUL}a${NUL}b`,
    );
    expect(encodeControl({ t: "handover", s: "s", c: 3, seqs: [], texts: [] })).toBe(
      `${CONTROL_MARK}{"t":"handover","s":"s","c":3,"seqs":[]}${NUL}`,
    );
    expect(encodeControl({ t: "request", s: "s", id: 9, text: frame })).toBe(`${CONTROL_MARK}{"t":"request","s":"s","id":9}${NUL}${frame}`);
    expect(encodeControl({ t: "grant", s: "s", c: 1, from: 10, to: 20, epoch: 2 })).toBe(
      `${CONTROL_MARK}{"t":"grant","s":"s","c":1,"from":10,"to":20,"epoch":2}`,
    );
  });
});
