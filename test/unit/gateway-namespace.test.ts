import { describe, expect, it } from "vitest";
import { isGatewayMethod, stripGatewayMarks } from "../../protocol/gateway-namespace";
import { type Message, parseFrame } from "../../protocol/jsonrpc";

const parse = (text: string): Message => {
  const parsed = parseFrame(text);
  if (!parsed.ok) throw new Error("not a message");
  return parsed.message;
};

describe("the gateway's namespace", () => {
  it("names _acp_gateway/* methods as the gateway's, and nothing else", () => {
    expect(isGatewayMethod("_acp_gateway/permission_resolved")).toBe(true);
    expect(isGatewayMethod("_acp_gatewayx/y")).toBe(false);
    expect(isGatewayMethod("session/update")).toBe(false);
  });

  it("removes acpGateway from params._meta, params.update._meta and result._meta, keeping the rest", () => {
    const m = parse(
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","_meta":{"acpGateway":1,"a":1},"update":{"_meta":{"acpGatew\\u0061y":2,"b":2}}}}',
    );
    expect(stripGatewayMarks(m)).toBe(true);
    expect(m).toEqual({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "s", _meta: { a: 1 }, update: { _meta: { b: 2 } } },
    });
    const r = parse('{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","_meta":{"acpGateway":{}}}}');
    expect(stripGatewayMarks(r)).toBe(true);
    expect(r).toEqual({ jsonrpc: "2.0", id: 1, result: { sessionId: "s", _meta: {} } });
  });

  it("leaves a frame without marks untouched and says so (so its original text is relayed)", () => {
    const text =
      '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","_meta":{"acpGatewayX":1},"update":{"text":"acpGateway"}}}';
    const m = parse(text);
    expect(stripGatewayMarks(m)).toBe(false);
    expect(JSON.stringify(m)).toBe(text);
  });
});
