// The mark a copy of a permission request carries when the tenant's rules could not be consulted.

import { describe, expect, it } from "vitest";
import { RULES_UNAVAILABLE_MESSAGE, markedRulesUnknown } from "../../protocol/permissions";

describe("markedRulesUnknown", () => {
  it("sets _meta.acpGateway.rulesUnavailable and keeps the agent's params and its own _meta", () => {
    const params = { sessionId: "s", toolCall: { toolCallId: "t1" }, options: [], _meta: { agent: { x: 1 } } };
    expect(JSON.parse(markedRulesUnknown(JSON.stringify(params)))).toEqual({
      ...params,
      _meta: { agent: { x: 1 }, acpGateway: { rulesUnavailable: { message: RULES_UNAVAILABLE_MESSAGE } } },
    });
  });

  it("adds the mark beside other gateway marks", () => {
    const params = { sessionId: "s", _meta: { acpGateway: { synthesized: true } } };
    expect(JSON.parse(markedRulesUnknown(JSON.stringify(params)))._meta.acpGateway).toEqual({
      synthesized: true,
      rulesUnavailable: { message: RULES_UNAVAILABLE_MESSAGE },
    });
  });
});
