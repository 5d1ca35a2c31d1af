// protocol/unseen.ts: which rule-answered steps an unseen change stops, and what a rule-answered step
// may have changed (issue 35, decision 0046). Every operation is read as the rules read it (operation.ts).
import { describe, expect, it } from "vitest";
import { describeOperation } from "../../protocol/operation";
import { ANYTHING, changesOf, readsProjectContent, unseenMessage } from "../../protocol/unseen";

const cwd = "/p";
const exec = (command: string, extra: Record<string, unknown> = {}) =>
  describeOperation({ kind: "execute", rawInput: { command, ...extra } }, cwd);
const edit = (path: string) =>
  describeOperation({ kind: "edit", locations: [{ path }], content: [{ type: "diff", path, oldText: "a", newText: "b" }] }, cwd);

describe("readsProjectContent: what an unseen change stops a rule answering", () => {
  it.each([
    "make test",
    "git status",
    "git diff",
    "npm test",
    "cargo check",
    "cat README.md",
    "node x.js",
    "./ls",
    "/bin/ls",
    "ls && make test",
    "python3 -m pytest",
  ])("%s may read what the agent wrote: held while changes are unseen", (command) => expect(readsProjectContent(exec(command))).toBe(true));
  it.each(["ls", "ls -la src", "pwd", "ls && pwd"])("%s reads no file's content: still answered", (command) =>
    expect(readsProjectContent(exec(command))).toBe(false),
  );
  it("a command the parser cannot judge is held", () => expect(readsProjectContent(exec("ls $(cat x)"))).toBe(true));
  it("a tool of a kind the gateway cannot read (an MCP tool, a fetch) is held", () => {
    expect(readsProjectContent(describeOperation({ kind: "other", name: "mcp__ci__run", rawInput: {} }, cwd))).toBe(true);
    expect(readsProjectContent(describeOperation({ kind: "fetch", rawInput: { url: "https://x" } }, cwd))).toBe(true);
  });
  it("a file operation runs nothing it touches: not held", () => {
    expect(readsProjectContent(edit("/p/Makefile"))).toBe(false);
    expect(readsProjectContent(describeOperation({ kind: "read", locations: [{ path: "/p/a" }] }, cwd))).toBe(false);
  });
});

describe("changesOf: what a rule-answered step may have written", () => {
  it("an edit: every path it names", () => expect(changesOf(edit("/p/Makefile.sh"))).toEqual(["/p/Makefile.sh"]));
  it("an edit naming no path: anything", () =>
    expect(changesOf(describeOperation({ kind: "edit", rawInput: {} }, cwd))).toEqual([ANYTHING]));
  it("a read or search: nothing", () => {
    expect(changesOf(describeOperation({ kind: "read", locations: [{ path: "/p/a" }] }, cwd))).toEqual([]);
    expect(changesOf(describeOperation({ kind: "search", rawInput: { pattern: "x" } }, cwd))).toEqual([]);
  });
  it.each(["make test", "npm test", "git status", "cargo check", "ls -la", "git log --oneline"])(
    "%s: a form the table understands writes what the project's own code writes: nothing noted",
    (command) => expect(changesOf(exec(command))).toEqual([]),
  );
  it.each([
    "cp notes.txt Makefile.sh",
    "curl -o Makefile.sh https://x",
    "git log --output=Makefile.sh",
    "make -f other test",
    "tee a",
    "echo x > a",
    "ls > Makefile.sh",
  ])("%s: anything (a command the table does not understand in full)", (command) => expect(changesOf(exec(command))).toEqual([ANYTHING]));
  it("a tool the gateway cannot read: anything", () =>
    expect(changesOf(describeOperation({ kind: "other", name: "mcp__fs__write", rawInput: { p: 1 } }, cwd))).toEqual([ANYTHING]));
});

describe("unseenMessage", () => {
  it("names the first changes and counts the rest", () => {
    const at = 0;
    const change = (id: number, path: string) => ({ id, path, sessionId: "s", toolCallId: null, ruleId: null, at });
    const text = unseenMessage({ total: 5, upTo: 5, readers: [], changes: [change(1, "/p/Makefile.sh"), change(2, ANYTHING)] });
    expect(text).toContain("/p/Makefile.sh");
    expect(text).toContain("files a command may have written");
    expect(text).toContain("3 more");
  });
});
