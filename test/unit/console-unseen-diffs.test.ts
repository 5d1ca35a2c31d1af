// What a permission card shows of the unseen changes it was asked with (web/src/unseen-diffs.ts,
// decision 0062): per change the diff of the tool call that made it in this session, a link to the
// other session's card, and what cannot be shown said as such — a command's writes (`*`) and a change
// whose diff this page never got.

import { describe, expect, it } from "vitest";
import { shownClaim, unseenShownOf, unseenViews } from "../../web/src/unseen-diffs";

const CWD = "/projects/demo";
/** A listed change as unseenShownOf reads it: no id and no diff sent unless given. */
const ref = (
  path: string,
  sessionId: string,
  toolCallId: string | null,
  more: { id?: number; diff?: { oldText: string | null; newText: string } } = {},
) => ({
  path,
  sessionId,
  toolCallId,
  id: more.id ?? null,
  diff: more.diff ?? null,
  command: null,
  cwd: null,
  ruleId: null,
  at: null,
  running: false,
});
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
    const { views } = unseenViews({ total: 1, listId: null, changes: [ref(`${CWD}/b.c`, "s-a", "e1")] }, here, tools);
    expect(views).toEqual([{ type: "diff", toolCallId: "e1", diff: { path: `${CWD}/b.c`, oldText: null, newText: "new" } }]);
  });

  it("matches a diff whose path the agent gave relative to the session's directory", () => {
    const { views } = unseenViews(
      { total: 1, listId: null, changes: [ref(`${CWD}/src/m.c`, "s-a", "e1")] },
      { sessionId: "s-a", cwd: `${CWD}/` },
      {
        e1: editCall("e1", "src/m.c", "a", "b"),
      },
    );
    expect(views[0]).toMatchObject({ type: "diff", diff: { path: "src/m.c" } });
  });

  it("links a change made in another session to that session's card, never showing another session's diff from this one", () => {
    const tools = { e9: editCall("e9", `${CWD}/a.c`, "x", "y") };
    const { views } = unseenViews({ total: 1, listId: null, changes: [ref(`${CWD}/a.c`, "s/b", "e9")] }, here, tools);
    expect(views).toEqual([{ type: "elsewhere", path: `${CWD}/a.c`, sessionId: "s/b", href: "#/session/s%2Fb/request/e9" }]);
  });

  it("says a command's writes cannot be shown, naming the command when this session ran it", () => {
    const tools = { c1: { toolCallId: "c1", kind: "execute", rawInput: { command: "cp notes.txt Makefile.sh" } } };
    const { views } = unseenViews(
      {
        total: 2,
        listId: null,
        changes: [ref("*", "s-a", "c1"), ref("*", "s-b", "c2")],
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
        listId: null,
        changes: [ref(`${CWD}/gone.c`, "s-a", "e7"), ref(`${CWD}/other.c`, "s-a", "e1")],
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
    const change = ref(`${CWD}/a.c`, "s-a", "e1");
    const { views, unlisted } = unseenViews({ total: 25, listId: null, changes: [change, change] }, here, {
      e1: editCall("e1", `${CWD}/a.c`, "x", "y"),
    });
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
    ).toEqual({ total: 3, listId: null, changes: [{ ...ref("/p/a", "s", null, { id: 1 }), ruleId: "r", at: 1 }] });
  });

  it("is null for what is not one, or lists nothing and counts nothing (a write held only for open readers)", () => {
    expect(unseenShownOf(undefined)).toBeNull();
    expect(unseenShownOf({ changes: "x" })).toBeNull();
    expect(unseenShownOf({ total: 0, changes: [], readers: [{ sessionId: "s", toolCallId: "m1" }] })).toBeNull();
  });
});

describe("what the gateway sent, and what the answer names (decision 0064)", () => {
  const sent = {
    total: 3,
    listId: "L1",
    changes: [
      { id: 4, path: `${CWD}/a.c`, sessionId: "s/b", toolCallId: "e9", diff: { oldText: "x", newText: "y" } },
      { id: 5, path: "*", sessionId: "s-a", toolCallId: "c1" },
      { id: 6, path: `${CWD}/b.c`, sessionId: "s-a", toolCallId: "e2" },
    ],
  };

  it("shows the diff the gateway sent, even of a change made in another session, in preference to the transcript's", () => {
    const shown = unseenShownOf(sent);
    if (!shown) throw new Error("read nothing");
    const tools = { e2: editCall("e2", `${CWD}/b.c`, "old", "new") };
    const { views } = unseenViews(shown, here, tools);
    expect(views[0]).toEqual({
      type: "diff",
      toolCallId: "e9",
      diff: { path: `${CWD}/a.c`, oldText: "x", newText: "y" },
      elsewhere: "#/session/s%2Fb/request/e9",
    });
    expect(views[1]).toMatchObject({ type: "anything" });
    expect(views[2]).toMatchObject({ type: "diff", diff: { newText: "new" } });
  });

  it("names the listed changes sent with a diff against the list's id, accepts only what the person ticked of those sent without one; nothing without a list id or ids", () => {
    expect(shownClaim(unseenShownOf(sent) ?? undefined)).toEqual({ list: "L1", changes: [4], accepted: [] });
    // Ticked: 5 and 6 (no diff sent), 4 (has one: not how it is seen), 99 (never listed).
    expect(shownClaim(unseenShownOf(sent) ?? undefined, [5, 4, 99])).toEqual({ list: "L1", changes: [4], accepted: [5] });
    expect(shownClaim(unseenShownOf(sent) ?? undefined, [6, 5])).toEqual({ list: "L1", changes: [4], accepted: [5, 6] });
    expect(shownClaim(unseenShownOf({ ...sent, listId: undefined }) ?? undefined)).toBeNull();
    expect(shownClaim(unseenShownOf({ total: 1, listId: "L1", changes: [{ path: "/p", sessionId: "s" }] }) ?? undefined)).toBeNull();
    expect(shownClaim(undefined)).toBeNull();
  });

  it("a change sent without a diff carries what is known of its step and can be accepted, unless it still ran when listed (decision 0068)", () => {
    const listed = {
      total: 2,
      listId: "L2",
      changes: [
        { id: 7, path: "*", sessionId: "s/b", toolCallId: "c7", ruleId: "rule_1", at: 1000, command: "make test &", cwd: `${CWD}/sub` },
        { id: 8, path: "*", sessionId: "s-a", toolCallId: "c8", ruleId: "rule_2", at: 2000, command: "npm test", running: true },
      ],
    };
    const shown = unseenShownOf(listed);
    if (!shown) throw new Error("read nothing");
    const { views } = unseenViews(shown, here, {});
    expect(views[0]).toMatchObject({
      type: "anything",
      command: "make test &",
      accept: { id: 7, cwd: `${CWD}/sub`, ruleId: "rule_1", at: 1000, running: false },
    });
    expect(views[1]).toMatchObject({ type: "anything", command: "npm test", accept: { id: 8, cwd: null, running: true } });
    expect(shownClaim(shown, [7, 8])).toEqual({ list: "L2", changes: [], accepted: [7] });
    expect(shownClaim(shown, [])).toBeNull();
  });
});
