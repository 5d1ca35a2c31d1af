// protocol/version-negotiation.ts (decision 0060): a client asking a newer ACP version than the
// gateway serves is told, in words, that it is answered v1.
import { describe, expect, it } from "vitest";
import { versionNote } from "../../protocol/version-negotiation";

describe("versionNote", () => {
  it("says v1 is served, and what v1 means, to a client that asked v2", () => {
    const note = versionNote({ protocolVersion: 2, capabilities: {}, info: { name: "v2-client", version: "1" } });
    expect(note).toMatchObject({ requested: 2, served: 1 });
    expect(note?.message).toMatch(/serves ACP v1 only/);
    expect(note?.message).toMatch(/session\/load/);
  });

  it("says nothing to a client that asked v1, an older version, or nothing readable", () => {
    for (const params of [{ protocolVersion: 1 }, { protocolVersion: 0 }, {}, { protocolVersion: "2" }, { protocolVersion: 2.5 }, null])
      expect(versionNote(params)).toBeUndefined();
  });
});
