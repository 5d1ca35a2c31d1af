// protocol/stream-resume.ts (decision 0050): `stream/resume`'s params are read and bounded before any
// session is asked; what is wrong is said in words, and nothing half-read is resumed.
import { describe, expect, it } from "vitest";
import { resumeRequest } from "../../protocol/stream-resume";

const CONNECTION = "0b7f4c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e";

describe("resumeRequest", () => {
  it("reads the dropped connection's id and each session's cursor", () => {
    expect(resumeRequest({ connectionId: CONNECTION, streams: { s1: "tok.3", s2: "tok.9" } })).toEqual({
      connectionId: CONNECTION,
      streams: { s1: "tok.3", s2: "tok.9" },
    });
  });

  it("refuses a connectionId that is not a connection's UUID, naming the header it comes from", () => {
    for (const connectionId of [undefined, 7, "", "not-a-uuid", CONNECTION.toUpperCase(), `${CONNECTION}x`])
      expect(resumeRequest({ connectionId, streams: { s1: "tok.1" } })).toMatch(/params\.connectionId.*Acp-Connection-Id/);
  });

  it("refuses no sessions, more than 64, or streams that are not an object", () => {
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`s${i}`, "tok.1"]));
    for (const streams of [undefined, {}, [], "s1", many])
      expect(resumeRequest({ connectionId: CONNECTION, streams })).toMatch(/params\.streams.*1 to 64 sessions/);
    const sixtyFour = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`s${i}`, "tok.1"]));
    expect(resumeRequest({ connectionId: CONNECTION, streams: sixtyFour })).toMatchObject({ connectionId: CONNECTION });
  });

  it("refuses a cursor that is not a string, naming its session", () => {
    expect(resumeRequest({ connectionId: CONNECTION, streams: { s1: "tok.1", s2: 5 } })).toMatch(/cursor of session s2 must be a string/);
  });
});
