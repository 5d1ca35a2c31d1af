// The console's settings form (web/src/settings-form.ts, decision 0062): a save sends only what
// changed (PATCH replaces each given setting, and one left at its default stays unset), numbers as
// typed so the API names what is wrong, and the API's issues placed beside the field they name.

import { describe, expect, it } from "vitest";
import { defaultSettings, effectiveSettings } from "../../protocol/effective-settings";
import { changedSettings, draftOf, durationText, issuesAt, issuesElsewhere } from "../../web/src/settings-form";

const defaults = defaultSettings(600_000);

describe("changedSettings", () => {
  it("sends nothing when nothing changed, also for a tenant with settings of its own", () => {
    expect(changedSettings(draftOf(defaults), defaults)).toEqual({});
    const applied = effectiveSettings(
      { roles: { groups: { eng: "member", ops: "approver" } }, fourEyes: { operations: [{ program: "git", prefix: ["git", "push"] }] } },
      defaults,
    );
    expect(changedSettings(draftOf(applied), applied)).toEqual({});
  });

  it("sends only the settings changed, each whole", () => {
    const draft = { ...draftOf(defaults), unaskedRuns: "tell" as const, keysApprove: true };
    expect(changedSettings(draft, defaults)).toEqual({ unaskedRuns: "tell", fourEyes: { operations: [], keysApprove: true } });
  });

  it("sends a number as a number, and what is not one as typed (the API names the field)", () => {
    expect(changedSettings({ ...draftOf(defaults), permissionDeadlineMs: " 90000 " }, defaults)).toEqual({ permissionDeadlineMs: 90_000 });
    expect(changedSettings({ ...draftOf(defaults), notifyAfterMs: "soon" }, defaults)).toEqual({ notifyAfterMs: "soon" });
  });

  it("leaves out a group without a name and an operation's empty parts, splits the prefix into words and forbidden modes into lines", () => {
    const draft = {
      ...draftOf(defaults),
      groups: [
        { group: " eng ", role: "member" as const },
        { group: "", role: "admin" as const },
      ],
      operations: [{ kind: "", program: "", prefix: " git   push ", path: "", require: "two_approvals" as const }],
      forbid: "bypassPermissions\n\n  yolo \n",
    };
    expect(changedSettings(draft, defaults)).toEqual({
      roles: { groups: { eng: "member" }, defaultPersonRole: "observer" },
      fourEyes: { operations: [{ prefix: ["git", "push"], require: "two_approvals" }], keysApprove: false },
      modes: { forbid: ["bypassPermissions", "yolo"], forbidLessOversight: false },
    });
  });
});

describe("issues beside their field", () => {
  const issues = [
    { path: "permissionDeadlineMs", message: "Too small: expected number to be >=1000" },
    { path: "fourEyes.operations.1", message: "name at least one of kind, program, prefix, path" },
    { path: "fourEyes.operations.0.path", message: 'Invalid string: must start with "/"' },
    { path: "legacyBearerSubprotocol", message: "Unrecognized key" },
  ];

  it("gives each field its own issues and those inside it, saying which row", () => {
    expect(issuesAt(issues, "permissionDeadlineMs")).toEqual(["Too small: expected number to be >=1000"]);
    expect(issuesAt(issues, "fourEyes.operations")).toEqual([
      "row 2: name at least one of kind, program, prefix, path",
      'row 1 (path): Invalid string: must start with "/"',
    ]);
    expect(issuesAt(issues, "fourEyes.keysApprove")).toEqual([]);
    // A field whose name begins another's is not given the other's issues.
    expect(issuesAt([{ path: "notifyAfterMsX", message: "x" }], "notifyAfterMs")).toEqual([]);
  });

  it("keeps the issues no field shows for the top of the form", () => {
    expect(issuesElsewhere(issues, ["permissionDeadlineMs", "fourEyes.operations"])).toEqual([issues[3]]);
  });
});

describe("durationText", () => {
  it("reads milliseconds as people do", () => {
    expect(durationText(600_000)).toBe("10 min");
    expect(durationText(60_000)).toBe("1 min");
    expect(durationText(5_400_000)).toBe("1 h 30 min");
    expect(durationText(7 * 24 * 3600 * 1000)).toBe("7 d");
    expect(durationText(45_000)).toBe("45 s");
    expect(durationText(0)).toBe("0 s");
    expect(durationText(250)).toBe("250 ms");
  });
});
