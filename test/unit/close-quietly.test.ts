import { describe, expect, it } from "vitest";
import { CLOSE, closeQuietly } from "../../core/close-codes";

describe("closeQuietly: the one way a socket that may be closing already is closed", () => {
  it("closes with the code and reason given", () => {
    const calls: [number, string][] = [];
    closeQuietly({ close: (code, reason) => void calls.push([code, reason]) }, CLOSE.sessionDeleted, "the session was deleted");
    expect(calls).toEqual([[CLOSE.sessionDeleted, "the session was deleted"]]);
  });

  it("does not throw when the socket's close throws (it was closing or closed already)", () => {
    const closed = {
      close: () => {
        throw new TypeError("WebSocket already closed");
      },
    };
    expect(() => closeQuietly(closed, CLOSE.normal, "closed")).not.toThrow();
  });
});
