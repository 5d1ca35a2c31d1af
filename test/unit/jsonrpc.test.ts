import { describe, expect, it } from "vitest";
import { parseFrame } from "../../protocol/jsonrpc";
import { judgeAnswer } from "../../protocol/people/answering";
import { ErrorCode } from "../../core/rpc-errors";

describe("parseFrame", () => {
  it("answers malformed JSON with a parse error and a null id", () => {
    const parsed = parseFrame("{not json");
    expect(parsed).toMatchObject({ ok: false, reply: { id: null, error: { code: ErrorCode.parseError } } });
  });
  it("refuses batches with invalid request", () => {
    const parsed = parseFrame('[{"jsonrpc":"2.0","id":1,"method":"initialize"}]');
    expect(parsed).toMatchObject({ ok: false, reply: { error: { code: ErrorCode.invalidRequest } } });
    if (!parsed.ok) expect(parsed.reply?.error?.message).toMatch(/batch/);
  });
  it("refuses a frame over the limit and keeps its id so the caller is answered", () => {
    const parsed = parseFrame(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "x", params: { pad: "y".repeat(200) } }), 100);
    expect(parsed).toMatchObject({ ok: false, reply: { id: 9, error: { code: ErrorCode.invalidRequest } } });
  });
  it("requires jsonrpc 2.0", () => {
    expect(parseFrame('{"id":1,"method":"x"}')).toMatchObject({ ok: false, reply: { id: 1, error: { code: ErrorCode.invalidRequest } } });
  });
  it("accepts requests, notifications and responses", () => {
    expect(parseFrame('{"jsonrpc":"2.0","id":"a","method":"m","params":{}}').ok).toBe(true);
    expect(parseFrame('{"jsonrpc":"2.0","method":"m"}').ok).toBe(true);
    expect(parseFrame('{"jsonrpc":"2.0","id":1,"result":null}').ok).toBe(true);
  });
});

describe("judging a permission answer", () => {
  const options = [
    { optionId: "a", name: "Allow", kind: "allow_once" },
    { optionId: "r", name: "Reject", kind: "reject_once" },
  ];
  it("TC-10: accepts only an offered optionId, or cancelled", () => {
    expect(judgeAnswer({ outcome: { outcome: "selected", optionId: "a" } }, options).ok).toBe(true);
    expect(judgeAnswer({ outcome: { outcome: "cancelled" } }, options).ok).toBe(true);
    expect(judgeAnswer({ outcome: { outcome: "selected", optionId: "nope" } }, options).ok).toBe(false);
  });
  it("TC-17: an outcome it does not recognise is never approval", () => {
    expect(judgeAnswer({ outcome: { outcome: "approved" } }, options).ok).toBe(false);
    expect(judgeAnswer({ outcome: "selected" }, options).ok).toBe(false);
    expect(judgeAnswer({}, options).ok).toBe(false);
    expect(judgeAnswer(null, options).ok).toBe(false);
  });
  it("TC-13: the option kind, not its name, is what the answer carries", () => {
    const judged = judgeAnswer({ outcome: { outcome: "selected", optionId: "r" } }, [
      { optionId: "r", name: "Allow (really)", kind: "reject_once" },
    ]);
    expect(judged.ok && judged.outcome.outcome === "selected" && judged.outcome.option.kind).toBe("reject_once");
  });
});
