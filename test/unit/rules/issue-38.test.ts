// Issue 38, item 3: the first "always" a new user made was dead. The demo agent edited
// /projects/demo/README.md in a session whose project was /home/me/project; the path rule derived
// from the answer was scoped to the project, so it could never cover that file, and it was stored
// anyway (used 0 times, for ever). A path rule that cannot match is refused with the reason instead.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deriveRule } from "../../../protocol/rules";
import { isWithin } from "../../../protocol/rules/paths";

const edit = (path: string) => ({ toolCallId: "t", kind: "edit", locations: [{ path }], rawInput: { path } });
const derive = (path: string, cwd: string, optionName = "Always allow this file") =>
  deriveRule({ toolCall: edit(path), optionKind: "allow_always", optionName, cwd, agent: "demo", exactHash: "h" });

describe("a path rule that could never match is not stored", () => {
  it("the reported case: an edit outside the session's project is refused with the reason", () => {
    expect(derive("/projects/demo/README.md", "/home/me/project")).toEqual({
      reason:
        "Not remembered: /projects/demo/README.md is outside this session's project /home/me/project, and a rule scoped to the project never covers it. You are asked each time.",
    });
  });

  it("a directory rule outside the project too", () => {
    expect(derive("/srv/other/a.ts", "/home/me/project", "Always allow all files in this directory")).toMatchObject({
      reason: expect.stringContaining("/srv/other is outside this session's project /home/me/project"),
    });
  });

  it("inside the project the rule is made as before", () => {
    expect(derive("/home/me/project/README.md", "/home/me/project")).toMatchObject({
      decision: "allow",
      matcher: { type: "path", glob: "/home/me/project/README.md" },
    });
  });

  it("every path rule derived covers something inside its project (property)", () => {
    const segment = fc.constantFrom("a", "b", "src", "..", "projects", "home", "me");
    const path = fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => `/${parts.join("/")}`);
    fc.assert(
      fc.property(path, path, fc.constantFrom("Always allow", "Always allow all files in this directory"), (file, cwd, name) => {
        const result = derive(file, cwd, name);
        if (!result || "reason" in result || result.matcher.type !== "path") return;
        const base = result.matcher.glob.replace(/\/\*\*$/, "");
        expect(result.scope.project).not.toBeNull();
        expect(isWithin(base, result.scope.project!)).toBe(true);
      }),
    );
  });
});
