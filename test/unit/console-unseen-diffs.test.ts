// What a permission card shows of the unseen changes it was asked with (web/src/unseen-diffs.ts,
// decision 0062): per change the diff of the tool call that made it in this session, a link to the
// other session's card, and what cannot be shown said as such — a command's writes (`*`) and a change
// whose diff this page never got.

import { describe, expect, it } from "vitest";
import { unseenShownOf, unseenViews } from "../../web/src/unseen-diffs";

const CWD = "/projects/demo";
const here = { sessionId: "s-a", cwd: CWD };
const editCall = (toolCallId: string, path: string, oldText: string | null, newText: string) => ({
  toolCallId,
  kind: "edit",
  content: [{ type: "diff", path, oldText, newText }],
});

describe("unseenViews", () => {
  it("shows a change made in this session as the diff of the tool call that made it, matched by path", () => {
    const tools = {
      e1: {
        toolCallId: "e1",
        kind: "edit",
        content: [
          { type: "diff", path: `${CWD}/a.c`, oldText: "x", newText: "y" },
          { type: "diff", path: `${CWD}/b.c`, oldText: null, newText: "new" },
        ],
      },
    };
    const { views } = unseenViews({ total: 1, changes: [{ path: `${CWD}/b.c`, sessionId: "s-a", toolCallId: "e1" }] }, here, tools);
    expect(views).toEqual([{ type: "diff", toolCallId: "e1", diff: { path: `${CWD}/b.c`, oldText: null, newText: "new" } }]);
  });

  it("matches a diff whose path the agent gave relative to the session's directory", () => {
    const { views } = unseenViews(
      { total: 1, changes: [{ path: `${CWD}/src/m.c`, sessionId: "s-a", toolCallId: "e1" }] },
      { sessionId: "s-a", cwd: `${CWD}/` },
      {
        e1: editCall("e1", "src/m.c", "a", "b"),
      },
    );
    expect(views[0]).toMatchObject({ type: "diff", diff: { path: "src/m.c" } });
  });

  it("links a change made in another session to that session's card, never showing another session's diff from this one", () => {
    const tools = { e9: editCall("e9", `${CWD}/a.c`, "x", "y") };
    const { views } = unseenViews({ total: 1, changes: [{ path: `${CWD}/a.c`, sessionId: "s/b", toolCallId: "e9" }] }, here, tools);
    expect(views).toEqual([{ type: "elsewhere", path: `${CWD}/a.c`, sessionId: "s/b", href: "#/session/s%2Fb/request/e9" }]);
  });

  it("says a command's writes cannot be shown, naming the command when this session ran it", () => {
    const tools = { c1: { toolCallId: "c1", kind: "execute", rawInput: { command: "cp notes.txt Makefile.sh" } } };
    const { views } = unseenViews(
      {
        total: 2,
        changes: [
          { path: "*", sessionId: "s-a", toolCallId: "c1" },
          { path: "*", sessionId: "s-b", toolCallId: "c2" },
        ],
      },
      here,
      tools,
    );
    expect(views).toEqual([
      {
        type: "anything",
        sessionId: "s-a",
        toolCallId: "c1",
        command: "cp notes.txt Makefile.sh",
        here: true,
        href: "#/session/s-a/request/c1",
      },
      { type: "anything", sessionId: "s-b", toolCallId: "c2", command: null, here: false, href: "#/session/s-b/request/c2" },
    ]);
  });

  it("says a change of this session cannot be shown when the transcript has no diff of it (no tool call, or none for that path)", () => {
    const { views } = unseenViews(
      {
        total: 2,
        changes: [
          { path: `${CWD}/gone.c`, sessionId: "s-a", toolCallId: "e7" },
          { path: `${CWD}/other.c`, sessionId: "s-a", toolCallId: "e1" },
        ],
      },
      here,
      { e1: editCall("e1", `${CWD}/a.c`, "x", "y") },
    );
    expect(views).toEqual([
      { type: "missing", path: `${CWD}/gone.c`, toolCallId: "e7" },
      { type: "missing", path: `${CWD}/other.c`, toolCallId: "e1" },
    ]);
  });

  it("shows a change listed twice once, and counts the changes the gateway did not list", () => {
    const change = { path: `${CWD}/a.c`, sessionId: "s-a", toolCallId: "e1" };
    const { views, unlisted } = unseenViews({ total: 25, changes: [change, change] }, here, { e1: editCall("e1", `${CWD}/a.c`, "x", "y") });
    expect(views).toHaveLength(1);
    expect(unlisted).toBe(23);
  });
});

describe("unseenShownOf", () => {
  it("reads the gateway's unseen object, dropping entries that name no path or session", () => {
    expect(
      unseenShownOf({
        message: "…",
        total: 3,
        upTo: 9,
        changes: [{ id: 1, path: "/p/a", sessionId: "s", toolCallId: null, ruleId: "r", at: 1 }, { path: 5 }, "x"],
        readers: [],
      }),
    ).toEqual({ total: 3, changes: [{ path: "/p/a", sessionId: "s", toolCallId: null }] });
  });

  it("is null for what is not one, or lists nothing and counts nothing (a write held only for open readers)", () => {
    expect(unseenShownOf(undefined)).toBeNull();
    expect(unseenShownOf({ changes: "x" })).toBeNull();
    expect(unseenShownOf({ total: 0, changes: [], readers: [{ sessionId: "s", toolCallId: "m1" }] })).toBeNull();
  });
});
