// What a tenant does with an agent that runs a tool call nobody was asked about (protocol/unasked-runs.ts,
// decision 0056): stop unless the tenant chose tell; the hold names what ran; a held session's prompt is
// refused with a reason a client can act on.

import { describe, expect, it } from "vitest";
import { RpcError } from "../../protocol/jsonrpc";
import { heldMessage, holdOf, refusePromptWhileHeld, unaskedRunsOf } from "../../protocol/unasked-runs";

describe("unasked runs", () => {
  it("stops unless the tenant chose tell: absent, unknown or mistyped is stop", () => {
    expect(unaskedRunsOf(undefined)).toBe("stop");
    expect(unaskedRunsOf({})).toBe("stop");
    expect(unaskedRunsOf({ unaskedRuns: "TELL" })).toBe("stop");
    expect(unaskedRunsOf({ unaskedRuns: true })).toBe("stop");
    expect(unaskedRunsOf({ unaskedRuns: "tell" })).toBe("tell");
  });

  it("holds what the notice named, and nothing from a notice without a tool call", () => {
    const notice = { toolCallId: "u1", kind: "execute", command: "make deploy", changes: ["/p/a", 3] };
    expect(holdOf(notice, 5)).toEqual({
      reason: "ran_unasked",
      toolCallId: "u1",
      kind: "execute",
      command: "make deploy",
      changes: ["/p/a"],
      at: 5,
    });
    expect(holdOf({ kind: "edit" }, 5)).toBeNull();
  });

  it("refuses a held session's prompt with session_held, naming what ran and how to resume; lets an unheld one through", () => {
    const hold = holdOf({ toolCallId: "u1", kind: "edit", changes: ["/p/src/main.c"] }, 1);
    expect(() => refusePromptWhileHeld("s1", undefined)).not.toThrow();
    let refused: unknown;
    try {
      refusePromptWhileHeld("s1", hold ?? undefined);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RpcError);
    expect(refused).toMatchObject({ code: -32600, data: { reason: "session_held", hold } });
    expect((refused as Error).message).toMatch(/edit: \/p\/src\/main\.c.*DELETE \/v1\/sessions\/s1\/hold/);
    if (hold) expect(heldMessage("s1", hold)).toMatch(/settings\.unaskedRuns is "stop"/);
  });
});
