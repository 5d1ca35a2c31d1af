// A person's reason for an answer (protocol/answer-reason.ts, decision 0048) and what replay makes of
// a session's log (protocol/replayed-history.ts): pure, in Node.

import { describe, expect, it } from "vitest";
import { answerForAgent, readReason, reasonOfAnswer } from "../../protocol/answer-reason";
import { replayedFrames } from "../../protocol/replayed-history";

const ALLOW = { outcome: { outcome: "selected", optionId: "allow" } };

describe("a reason with an answer", () => {
  it("is optional, trimmed, display-safe and at most 500 code points", () => {
    expect(reasonOfAnswer(ALLOW)).toEqual({ ok: true, reason: null });
    expect(readReason("   ")).toEqual({ ok: true, reason: null });
    expect(readReason(" ok \u001b[2K\u202e ")).toEqual({ ok: true, reason: "ok ␛[2K⟨U+202E⟩" });
    expect(readReason("😀".repeat(500))).toEqual({ ok: true, reason: "😀".repeat(500) });
    expect(readReason("x".repeat(501))).toMatchObject({ ok: false, why: expect.stringContaining("at most 500") });
    expect(readReason(["no"])).toMatchObject({ ok: false, why: expect.stringContaining("must be a string") });
  });

  it("reaches the agent under the gateway's _meta; a client's own acpGateway never does; no reason, no change", () => {
    expect(answerForAgent(ALLOW, null)).toBe(ALLOW);
    expect(answerForAgent({ ...ALLOW, _meta: { a: 1 } }, null)).toEqual({ ...ALLOW, _meta: { a: 1 } });
    expect(answerForAgent({ ...ALLOW, _meta: { a: 1, acpGateway: { reason: "forged" } } }, null)).toEqual({ ...ALLOW, _meta: { a: 1 } });
    expect(answerForAgent({ ...ALLOW, _meta: { acpGateway: { x: 1 } } }, "why")).toEqual({
      ...ALLOW,
      _meta: { acpGateway: { reason: "why" } },
    });
  });
});

describe("replayed history", () => {
  const notice = (method: string) => JSON.stringify({ jsonrpc: "2.0", method, params: { sessionId: "s" } });
  const request = JSON.stringify({
    jsonrpc: "2.0",
    id: 3,
    method: "session/request_permission",
    params: { sessionId: "s", toolCall: { toolCallId: "t1" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] },
  });
  const resolved = JSON.stringify({
    jsonrpc: "2.0",
    method: "_acp_gateway/permission_resolved",
    params: {
      sessionId: "s",
      toolCallId: "t1",
      outcome: { outcome: "selected", optionId: "a" },
      decidedBy: { type: "person", user: "ana" },
    },
  });

  it("keeps updates and extensions, the notices that are history, and each resolution with its request; drops the rest", () => {
    const frames = [
      ...replayedFrames([
        { kind: "update", body: "u1", resolved: null },
        { kind: "permission", body: request, resolved },
        { kind: "permission", body: request, resolved: null }, // still pending: sent as a copy after the history
        { kind: "permission", body: request, resolved: JSON.stringify({ permId: 2, decidedBy: { type: "agent_withdrew" } }) },
        { kind: "notice", body: notice("_acp_gateway/rule_created"), resolved: null },
        { kind: "notice", body: notice("_acp_gateway/four_eyes_unsatisfiable"), resolved: null },
        { kind: "notice", body: notice("_acp_gateway/limit_reached"), resolved: null },
        { kind: "ext", body: "e1", resolved: null },
        { kind: "turn_end", body: "{}", resolved: null },
      ]),
    ];
    expect(frames).toHaveLength(4);
    expect(frames[0]).toBe("u1");
    expect(JSON.parse(frames[1]!)).toEqual({
      jsonrpc: "2.0",
      method: "_acp_gateway/permission_resolved",
      params: {
        ...JSON.parse(resolved).params,
        replayed: true,
        request: { toolCall: { toolCallId: "t1" }, options: [{ optionId: "a", name: "A", kind: "allow_once" }] },
      },
    });
    expect(frames.slice(2)).toEqual([notice("_acp_gateway/rule_created"), "e1"]);
  });
});
