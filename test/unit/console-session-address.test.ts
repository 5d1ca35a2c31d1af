// A session's address in the console (web/src/session-address.ts): the "waiting on you" link names the
// request's card, and the sessions page reads back the session and the card, whatever characters the
// agent put in its ids.

import { describe, expect, it } from "vitest";
import { parseSessionAddress, sessionAddress } from "../../web/src/session-address";

describe("a session's address", () => {
  it("names a session alone, or with the card of a tool call to focus", () => {
    expect(parseSessionAddress(sessionAddress("s1"))).toEqual({ sessionId: "s1", card: null });
    expect(parseSessionAddress(sessionAddress("s1", "toolu_01"))).toEqual({ sessionId: "s1", card: "toolu_01" });
  });

  it("an empty card means the first request waiting", () => {
    expect(sessionAddress("s1", "")).toBe("#/session/s1/request/");
    expect(parseSessionAddress("#/session/s1/request/")).toEqual({ sessionId: "s1", card: "" });
  });

  it("round-trips ids with slashes, spaces and the separator itself", () => {
    const sessionId = "a/request/b c";
    const card = "call/1 ?#";
    expect(parseSessionAddress(sessionAddress(sessionId, card))).toEqual({ sessionId, card });
  });

  it("names nothing for another page, an empty id or one that does not decode", () => {
    expect(parseSessionAddress("#/rules")).toBeNull();
    expect(parseSessionAddress("#/session/")).toBeNull();
    expect(parseSessionAddress("#/session/%E0%A4%A")).toBeNull();
  });
});
