// The gateway's own "always" options (protocol/gateway-options.ts): offered for a request a rule could
// cover, one per decision whose `*_once` the agent offered, named by the rule the gateway would store.

import { describe, expect, it } from "vitest";
import { GATEWAY_ALLOW_ALWAYS, GATEWAY_REJECT_ALWAYS, gatewayOptions, withGatewayOptions } from "../../protocol/gateway-options";
import { deriveRule } from "../../protocol/rules/derive";

const CLAUDE = [
  { kind: "allow_always", name: "Always Allow", optionId: "allow_always" },
  { kind: "allow_once", name: "Allow", optionId: "allow" },
  { kind: "reject_once", name: "Reject", optionId: "reject" },
];
const npmTest = { toolCallId: "t", kind: "execute", rawInput: { command: "npm test" } };

describe("the gateway's own always options", () => {
  it("for claude's options (no reject_always): an allow and a reject always, each named by the rule deriveRule would store", () => {
    const options = gatewayOptions(npmTest, CLAUDE, "/p", "claude");
    expect(options.map((o) => [o.optionId, o.kind])).toEqual([
      [GATEWAY_ALLOW_ALWAYS, "allow_always"],
      [GATEWAY_REJECT_ALWAYS, "reject_always"],
    ]);
    const rule = deriveRule({ toolCall: npmTest, optionKind: "reject_always", optionName: "", cwd: "/p", agent: "claude", exactHash: "" });
    expect(rule && "description" in rule ? options[1]?.name : null).toBe(
      `Always (gateway rule): ${rule && "description" in rule ? rule.description : ""}`,
    );
  });

  it("only where the agent offered the once of that decision (what the agent then gets)", () => {
    const allowOnly = CLAUDE.filter((o) => o.kind !== "reject_once");
    expect(gatewayOptions(npmTest, allowOnly, "/p", "claude").map((o) => o.optionId)).toEqual([GATEWAY_ALLOW_ALWAYS]);
  });

  it("none for a request no rule can cover: ambiguous, unidentifiable, or an agent spelling ids in the gateway's namespace", () => {
    expect(gatewayOptions({ kind: "execute", rawInput: { command: "ls", cmd: "rm -rf /" } }, CLAUDE, "/p", "a")).toEqual([]);
    expect(gatewayOptions({ kind: "execute" }, CLAUDE, "/p", "a")).toEqual([]);
    expect(gatewayOptions(npmTest, [...CLAUDE, { optionId: "_acp_gateway/x", name: "x", kind: "allow_once" }], "/p", "a")).toEqual([]);
  });

  it("the copy's options get them after the agent's; params without options stay as they are", () => {
    const extra = gatewayOptions(npmTest, CLAUDE, "/p", "claude");
    const text = withGatewayOptions(JSON.stringify({ sessionId: "s", options: CLAUDE }), extra);
    expect((JSON.parse(text) as { options: unknown[] }).options).toEqual([...CLAUDE, ...extra]);
    expect(withGatewayOptions('{"sessionId":"s"}', extra)).toBe('{"sessionId":"s"}');
    expect(withGatewayOptions("[1]", extra)).toBe("[1]");
  });
});
