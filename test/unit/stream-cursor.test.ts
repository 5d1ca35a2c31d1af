import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatCursor, newStreamToken, positionOf, withCursor } from "../../protocol/stream-cursor";

const random = (bytes: Uint8Array) => crypto.getRandomValues(bytes);

describe("stream cursors", () => {
  it("puts the cursor in params._meta of the RFD's own example, keeping every other byte", () => {
    const text =
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_abc123","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_7f3a","content":{"type":"text","text":"hi"}}}}';
    const out = withCursor(text, "1J8kQ2");
    expect(out).toBe(text.slice(0, -2) + ',"_meta":{"acp/cursor":"1J8kQ2"}}}');
    expect(JSON.parse(out).params._meta).toEqual({ "acp/cursor": "1J8kQ2" });
  });

  it("joins an existing params._meta, and replaces an acp/cursor already there (an agent's, or a session's relayed over HTTP) in place", () => {
    const text = '{"jsonrpc":"2.0","method":"x","params":{"_meta":{"acp/cursor":"forged","k":1},"a":[1,{"b":"}"}]}}';
    const out = withCursor(text, "T.5");
    expect(out).toBe(text.replace('"forged"', '"T.5"'));
    expect(JSON.parse(out).params._meta).toEqual({ "acp/cursor": "T.5", k: 1 });
    expect(withCursor(withCursor('{"method":"x","params":{}}', "a.1"), "b.2")).toBe(
      '{"method":"x","params":{"_meta":{"acp/cursor":"b.2"}}}',
    );
    expect(withCursor('{"method":"x","params":{"_meta":{}}}', "c")).toBe('{"method":"x","params":{"_meta":{"acp/cursor":"c"}}}');
  });

  it("puts it in the envelope of a response, leaving its result as the agent sent it, and where there are no params", () => {
    const answered = JSON.parse(withCursor('{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}', "c"));
    expect(answered).toEqual({ jsonrpc: "2.0", id: 3, result: { stopReason: "end_turn" }, _meta: { "acp/cursor": "c" } });
    const error = JSON.parse(withCursor('{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}', "c"));
    expect(error._meta).toEqual({ "acp/cursor": "c" });
    expect(error.error).toEqual({ code: -1, message: "m" });
    expect(JSON.parse(withCursor('{"jsonrpc":"2.0","id":3,"result":null}', "c"))._meta).toEqual({ "acp/cursor": "c" });
    expect(JSON.parse(withCursor('{"jsonrpc":"2.0","method":"m"}', "c"))._meta).toEqual({ "acp/cursor": "c" });
  });

  it("keeps numbers past 2^53 and escaped quotes exactly as sent", () => {
    const text = '{"jsonrpc":"2.0","id":12345678901234567890,"result":{"s":"a\\"}{\\\\","n":1.50}}';
    const out = withCursor(text, "c");
    expect(out).toContain("12345678901234567890");
    expect(out).toContain('"n":1.50');
    expect(JSON.parse(out).result.s).toBe('a"}{\\');
  });

  it("ends a string at the first quote after an even run of backslashes, however long the string", () => {
    const long = "x".repeat(100_000);
    const params = { a: `${long}\\`, b: '\\\\\\"}{"params":{', c: `${long}\\"` };
    const out = withCursor(JSON.stringify({ jsonrpc: "2.0", method: "m", params }), "c");
    expect(JSON.parse(out).params).toEqual({ ...params, _meta: { "acp/cursor": "c" } });
  });

  it("for any JSON object, the result parses, holds the cursor where the RFD reads it, and changes nothing else", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.option(fc.jsonValue()), (members, params) => {
        const message: Record<string, unknown> = { ...members, jsonrpc: "2.0", method: "m" };
        if (params !== null) message.params = params;
        const out = JSON.parse(withCursor(JSON.stringify(message), "tok.1")) as Record<string, unknown>;
        const holder = isPlainObject(message.params) ? (out.params as Record<string, unknown>) : out;
        expect((holder._meta as Record<string, unknown>)["acp/cursor"]).toBe("tok.1");
        const strip = (value: Record<string, unknown>, original: unknown) => {
          const copy = { ...value };
          if (isPlainObject(original) && isPlainObject(original._meta)) copy._meta = original._meta;
          else delete copy._meta;
          return copy;
        };
        if (holder === out) expect(strip(out, message)).toEqual(JSON.parse(JSON.stringify(message)));
        else {
          expect(strip(out.params as Record<string, unknown>, message.params)).toEqual(JSON.parse(JSON.stringify(message.params)));
        }
      }),
    );
  });

  it("a cursor names a position only on the stream whose token it carries; a foreign, forged or malformed one names none", () => {
    const token = newStreamToken(random);
    const other = newStreamToken(random);
    expect(token).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(token).not.toBe(other);
    expect(positionOf(formatCursor(token, 41), token)).toBe(41);
    expect(positionOf(formatCursor(other, 41), token)).toBeUndefined();
    for (const bad of ["41", `${token}.`, `${token}.-1`, `${token}.1.2`, `${token}.zzzzzzzzzzzz`, `${token}x.1`, ""]) {
      expect(positionOf(bad, token)).toBeUndefined();
    }
  });

  it("cursors of one stream are ordered as their positions, and differ from every other stream's", () => {
    const token = newStreamToken(random);
    const cursors = [1, 2, 35, 36, 1000].map((n) => formatCursor(token, n));
    expect(cursors.map((c) => positionOf(c, token))).toEqual([1, 2, 35, 36, 1000]);
    expect(new Set(cursors).size).toBe(cursors.length);
  });
});

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
