// The session's record of the agent's modes (protocol/people/session-modes.ts, decision 0061): each
// advertised mode is marked governed exactly as the edge judges a client's switch to it.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { modeChangesOf } from "../../../protocol/people/modes";
import { agentSwitched, sessionModesOf, withModesMarked } from "../../../protocol/people/session-modes";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const modeId = fc.oneof(
  fc.constantFrom("default", "plan", "Read_Only", "acceptEdits", "bypassPermissions", "yolo", "code", "ask"),
  fc.string(),
);

describe("the session's record of the agent's modes", () => {
  it("marks every advertised mode as a client's session/set_mode to it is judged, and leaves out what it cannot read", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            modeId.map((id) => ({ id, name: id })),
            fc.constant({ name: "no id" }),
            fc.constant(7),
          ),
        ),
        modeId,
        (list, current) => {
          const got = sessionModesOf({ sessionId: "s", modes: { currentModeId: current, availableModes: list } });
          const readable = list.filter((m): m is { id: string; name: string } => typeof m === "object" && "id" in m);
          expect(got?.available.map((m) => m.id)).toEqual(readable.slice(0, 100).map((m) => m.id));
          for (const m of got?.available ?? []) {
            expect(m.governed).toBe(modeChangesOf("session/set_mode", { sessionId: "s", modeId: m.id }).some((c) => c.governed));
          }
          expect(got?.currentGoverned).toBe(modeChangesOf("session/set_mode", { sessionId: "s", modeId: current }).some((c) => c.governed));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("is null when the agent advertised no modes", () => {
    expect(sessionModesOf({ sessionId: "s" })).toBeNull();
    expect(sessionModesOf(undefined)).toBeNull();
  });

  it("tells of an agent's switch only into a governed mode, and only when it changed", () => {
    expect(agentSwitched("s", "default", "bypassPermissions")).toMatchObject({ from: "default", to: "bypassPermissions" });
    expect(agentSwitched("s", "default", "plan")).toBeNull();
    expect(agentSwitched("s", "yolo", "yolo")).toBeNull();
    expect(agentSwitched("s", null, "somethingNew")?.message).toMatch(/switched this session's mode to somethingNew/);
  });

  it("marks the answer's modes under _meta.acpGateway, keeping the agent's own _meta; an answer without modes is unchanged", () => {
    const answer = { sessionId: "s", modes: { currentModeId: "yolo", availableModes: [{ id: "yolo" }] }, _meta: { agent: 1 } };
    expect(withModesMarked(answer)._meta).toEqual({
      agent: 1,
      acpGateway: { modes: { currentModeId: "yolo", currentGoverned: true, available: [{ id: "yolo", name: null, governed: true }] } },
    });
    const plain = { sessionId: "s" };
    expect(withModesMarked(plain)).toBe(plain);
  });
});
