// An agent's answer the gateway refuses (too large, too deep: protocol/limits.ts) must not leave the
// request it answers waiting: refusedAnswer stands in for it with an error under the request's id
// (protocol/refused-answer.ts). Only a refused *answer* with a numeric id (the agent-side ids the
// gateway gives) gets one; a refused request or notification is answered to the agent instead.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseFrame } from "../../protocol/jsonrpc";
import { MAX_FRAME_BYTES, MAX_JSON_DEPTH } from "../../protocol/limits";
import { refusedAnswer } from "../../protocol/refused-answer";

describe("the answer the gateway stands in for a refused one", () => {
  it("an answer too large: an error under the id it answered", () => {
    const text = JSON.stringify({ jsonrpc: "2.0", id: 41, result: { content: "x".repeat(MAX_FRAME_BYTES) } });
    const parsed = parseFrame(text);
    expect(parsed.ok).toBe(false);
    const stand = refusedAnswer(parsed.ok ? null : parsed.reply);
    expect(stand).toMatchObject({ jsonrpc: "2.0", id: 41, error: { code: -32603 } });
    expect(stand?.error?.message).toMatch(/refused by the gateway/);
  });

  it("an answer too deep: an error under the id it answered", () => {
    const deep = "[".repeat(MAX_JSON_DEPTH + 2) + "]".repeat(MAX_JSON_DEPTH + 2);
    const parsed = parseFrame(`{"jsonrpc":"2.0","id":7,"result":${deep}}`);
    expect(refusedAnswer(parsed.ok ? null : parsed.reply)).toMatchObject({ id: 7, error: { code: -32603 } });
  });

  it("nothing for a refused request or notification (the agent is answered), nor for a frame that is not JSON", () => {
    const big = "x".repeat(MAX_FRAME_BYTES);
    for (const text of [
      JSON.stringify({ jsonrpc: "2.0", id: 3, method: "session/request_permission", params: { big } }),
      JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { big } }),
      "{not json",
      "[]",
    ]) {
      const parsed = parseFrame(text);
      expect(parsed.ok).toBe(false);
      expect(refusedAnswer(parsed.ok ? null : parsed.reply), text.slice(0, 40)).toBeUndefined();
    }
    expect(refusedAnswer(null)).toBeUndefined();
    // A refusal sent to the agent under its own request's id is never taken for a refused answer.
    expect(refusedAnswer({ jsonrpc: "2.0", id: 3, error: { code: -32600, message: "too large", data: { requestId: 3 } } })).toBeUndefined();
  });

  it("nothing for an answer whose id is not a number (never one the gateway gave)", () => {
    const parsed = parseFrame(JSON.stringify({ jsonrpc: "2.0", id: "a", result: "x".repeat(MAX_FRAME_BYTES) }));
    expect(refusedAnswer(parsed.ok ? null : parsed.reply)).toBeUndefined();
  });

  it("never throws, and answers only a reply with a null id that names a numeric requestId", () => {
    fc.assert(
      fc.property(
        fc.option(fc.oneof(fc.integer(), fc.string()), { nil: null }),
        fc.oneof(fc.jsonValue(), fc.record({ requestId: fc.oneof(fc.integer(), fc.string(), fc.constant(null)) })),
        (id, data) => {
          const reply = { jsonrpc: "2.0" as const, id, error: { code: -32600, message: "m", data } };
          const stand = refusedAnswer(reply);
          const requestId =
            typeof data === "object" && data !== null && !Array.isArray(data) ? (data as Record<string, unknown>).requestId : undefined;
          if (id === null && typeof requestId === "number") expect(stand).toMatchObject({ id: requestId, error: { code: -32603 } });
          else expect(stand).toBeUndefined();
        },
      ),
    );
  });
});
