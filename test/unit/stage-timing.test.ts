import fc from "fast-check";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { STAGE_FLUSH, STAGE_LINE, STAGE_MARK, setStageSink, stage, stageTimingFrom } from "../../protocol/stage-timing";

const printed: string[] = [];
const lines = () => printed.flatMap((p) => p.split("\n"));
const logged = () => lines().map((l) => JSON.parse(l.slice(STAGE_LINE.length)) as { stage: string; marks: string[]; t: number });
/** The bench's last frame: every isolate it crosses prints what it recorded. */
const flush = () => stage("edge.out", `{"text":"${STAGE_FLUSH}"}`);

beforeEach(() => {
  stageTimingFrom({ STAGE_TIMING: "1" });
  flush(); // nothing left over from the test before
  printed.length = 0;
  setStageSink((text) => printed.push(text));
});

describe("stage timing (bench only)", () => {
  it("is off by default, and stays off for an env without STAGE_TIMING=1", async () => {
    // A fresh copy of the module, as a new isolate loads it.
    vi.resetModules();
    const fresh = await import("../../protocol/stage-timing");
    expect(fresh.stage).not.toBe(stage);
    fresh.setStageSink((text: string) => printed.push(text));
    fresh.stage("agent.in", `{"text":"${STAGE_MARK}1"}`);
    fresh.stage("agent.in", `{"text":"${STAGE_FLUSH}"}`);
    fresh.stageTimingFrom({});
    fresh.stage("agent.in", `{"text":"${STAGE_MARK}2"}`);
    fresh.stageTimingFrom({ STAGE_TIMING: "0" });
    fresh.stage("agent.in", `{"text":"${STAGE_MARK}3"}`);
    fresh.stageTimingFrom({ STAGE_TIMING: "1" });
    fresh.stage("agent.in", `{"text":"${STAGE_FLUSH}"}`);
    expect(printed).toEqual([]);
  });

  it("when enabled, records the stage, the probe's mark and the clock for a marked frame, and prints them at the flush frame", () => {
    const before = Date.now();
    stage("session.out", `{"params":{"update":{"content":{"text":"${STAGE_MARK}42"}}}}`);
    stage("session.out", `{"params":{"update":{"content":{"text":"an agent's words"}}}}`);
    stage("edge.in", `{"params":{"update":{"content":{"text":"${STAGE_MARK}42"}}}}`);
    expect(printed).toEqual([]); // held: printing on the measured path would be measured too
    flush();
    expect(lines().every((l) => l.startsWith(STAGE_LINE))).toBe(true);
    expect(logged().map((e) => [e.stage, e.marks])).toEqual([
      ["session.out", ["42"]],
      ["edge.in", ["42"]],
    ]);
    expect(logged()[0]?.t).toBeGreaterThanOrEqual(before);
    stageTimingFrom({});
    stage("session.out", `{"text":"${STAGE_MARK}43"}`);
    stageTimingFrom({ STAGE_TIMING: "1" });
    printed.length = 0;
    flush();
    expect(printed).toEqual([]); // nothing was recorded while off
  });

  it("finds the mark in a batch item's text and in a permission answer's optionId, and changes neither", () => {
    const batch = Object.freeze([Object.freeze({ kind: "frame", epoch: 1, text: `{"toolCallId":"${STAGE_MARK}7"}` })]);
    const answer = Object.freeze({
      type: "response",
      id: 3,
      result: Object.freeze({ outcome: Object.freeze({ outcome: "selected", optionId: `ok-${STAGE_MARK}8` }) }),
    });
    const copies = [JSON.stringify(batch), JSON.stringify(answer)];
    stage("session.in", batch);
    stage("agent.toAgent", answer);
    flush();
    expect(logged().map((e) => [e.stage, e.marks])).toEqual([
      ["session.in", ["7"]],
      ["agent.toAgent", ["8"]],
    ]);
    expect([JSON.stringify(batch), JSON.stringify(answer)]).toEqual(copies);
  });

  it("reports each probe mark in a frame once, and no mark that is not there", () => {
    const piece = fc.oneof(
      fc.nat({ max: 999 }).map((n) => ({ text: `${STAGE_MARK}${n}`, mark: String(n) })),
      fc.string().map((text) => ({ text: text.replaceAll("stage", "x"), mark: undefined })),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }), (pieces) => {
        printed.length = 0;
        // Pieces are joined with a space, so a mark's digits end where the piece does.
        stage("edge.in", pieces.map((p) => p.text).join(" "));
        flush();
        const expected = [...new Set(pieces.flatMap((p) => (p.mark === undefined ? [] : [p.mark])))];
        expect(printed.length === 0 ? [] : logged()[0]?.marks).toEqual(expected);
      }),
    );
  });
});
