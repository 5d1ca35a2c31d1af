import { describe, expect, it } from "vitest";
import { traceIdOf } from "../../connection/trace";

describe("traceIdOf: the trace id of _meta.traceparent", () => {
  it("reads a W3C traceparent", () => {
    expect(traceIdOf({ _meta: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" } })).toBe(
      "4bf92f3577b34da6a3ce929d0e0e4736",
    );
  });
  it("ignores a missing, malformed or all-zero traceparent", () => {
    expect(traceIdOf(undefined)).toBeUndefined();
    expect(traceIdOf({ _meta: {} })).toBeUndefined();
    expect(traceIdOf({ _meta: { traceparent: "not-a-trace" } })).toBeUndefined();
    expect(traceIdOf({ _meta: { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" } })).toBeUndefined();
  });
});
