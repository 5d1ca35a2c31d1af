// Issue 35, "one operation, one meaning": a path rule judges every path the call names — its
// locations, its diffs and each file field of its input — and a read/edit/delete/move whose input
// names a file its locations do not, or carries a command, is answered by no allow and not remembered.
import { describe, expect, it } from "vitest";
import { type Rule, compileRules, decide, deriveRule, exactHash } from "../../protocol/rules";
import { describeOperation } from "../../protocol/operation";

const CWD = "/work/proj";
const OPTIONS = [
  { optionId: "ao", name: "Allow once", kind: "allow_once" },
  { optionId: "ro", name: "Reject once", kind: "reject_once" },
];
const SRC: Rule = {
  id: "src",
  decision: "allow",
  scope: { project: CWD },
  matcher: { type: "path", glob: `${CWD}/src/**`, kinds: ["edit", "read"] },
};
const judge = async (rules: Rule[], toolCall: Record<string, unknown>) =>
  decide(compileRules(rules), { toolCall, options: OPTIONS, cwd: CWD, agent: "a", now: 1, exactHash: await exactHash(toolCall) }).decision;
const shownSrc = { locations: [{ path: `${CWD}/src/a.ts` }] };
const edit = (rawInput: unknown, extra: Record<string, unknown> = shownSrc) => ({ toolCallId: "t", kind: "edit", rawInput, ...extra });

describe("issue 35: path rules judge every path the call names", () => {
  it("precondition: an edit of src/a.ts, by locations and by its input, is allowed by a rule on src/**", async () => {
    expect(await judge([SRC], edit({ file_path: `${CWD}/src/a.ts`, old_string: "a", new_string: "b" }))).toBe("allow");
    expect(await judge([SRC], edit({ file_path: "src/a.ts", old_string: "a", new_string: "b" }))).toBe("allow");
    expect(await judge([SRC], edit({ file_path: `${CWD}/src/a.ts` }, { _meta: { claudeCode: { toolName: "Write" } } }))).toBe("allow");
  });
  for (const file of ["~/.bashrc", "/etc/shadow", "package.json", "../other/src/a.ts", "$HOME/.profile"]) {
    it(`an edit whose rawInput.file_path is ${file} while locations say src/a.ts is not allowed by a rule on src/**`, async () => {
      const call = edit({ file_path: file, old_string: "a", new_string: "b" });
      expect(await judge([SRC], call)).toBeNull();
      expect(describeOperation(call, CWD).ambiguity).not.toBeNull();
      const claudeEdit = { ...call, _meta: { claudeCode: { toolName: "Edit" } } };
      expect(await judge([SRC], claudeEdit)).toBeNull();
    });
  }
  it("an edit whose rawInput is a shell command, or carries one, is not allowed by a rule on src/**", async () => {
    for (const rawInput of [
      "rm -rf ~",
      ["bash", "-c", "rm -rf ~"],
      { command: "rm -rf ~" },
      { file_path: `${CWD}/src/a.ts`, cmd: "rm -rf ~" },
    ]) {
      expect(await judge([SRC], edit(rawInput)), JSON.stringify(rawInput)).toBeNull();
      expect(describeOperation(edit(rawInput), CWD).ambiguity, JSON.stringify(rawInput)).not.toBeNull();
    }
  });
  it("a read whose input names /etc/shadow (absolute_path, filePath, paths) is not allowed by a rule on src/**", async () => {
    for (const rawInput of [
      { absolute_path: "/etc/shadow" },
      { filePath: "/etc/shadow" },
      { paths: [`${CWD}/src/a.ts`, "/etc/shadow"] },
      { notebook_path: "/etc/shadow" },
    ]) {
      expect(await judge([SRC], { toolCallId: "t", kind: "read", rawInput, ...shownSrc }), JSON.stringify(rawInput)).toBeNull();
    }
  });
  it("an input's file with no locations is the operation's path: judged by the rule like any other", async () => {
    expect(await judge([SRC], edit({ file_path: `${CWD}/src/b.ts`, content: "x" }, {}))).toBe("allow");
    expect(await judge([SRC], edit({ file_path: "/etc/shadow", content: "x" }, {}))).toBeNull();
    expect(describeOperation(edit({ file_path: "src/b.ts" }, {}), CWD).paths).toEqual([`${CWD}/src/b.ts`]);
  });
  it("a reject on /etc/** holds an edit that names /etc/shadow only in its input", async () => {
    const etc: Rule = { id: "etc", decision: "reject", matcher: { type: "path", glob: "/etc/**" } };
    expect(await judge([SRC, etc], edit({ file_path: "/etc/shadow", content: "x" }, {}))).toBe("reject");
  });
  it("a person's always on such an edit is not remembered, and says why", async () => {
    const call = edit({ file_path: "/etc/shadow", content: "x" });
    const result = deriveRule({
      toolCall: call,
      optionKind: "allow_always",
      optionName: "Always",
      cwd: CWD,
      agent: "a",
      exactHash: await exactHash(call),
    });
    expect(result).toMatchObject({ reason: expect.stringMatching(/Not remembered: its input names \/etc\/shadow/) });
  });
  it("codex's patch: every file it changes or moves to is judged", async () => {
    const changes = { [`${CWD}/src/a.ts`]: { type: "update", unified_diff: "", move_path: "/etc/cron.d/x" } };
    const call = { toolCallId: "p", kind: "edit", rawInput: { call_id: "p", turn_id: "0", changes, reason: null, grant_root: null } };
    expect(describeOperation(call, CWD).paths).toEqual([`${CWD}/src/a.ts`, "/etc/cron.d/x"]);
    expect(await judge([SRC], call)).toBeNull();
  });
});
