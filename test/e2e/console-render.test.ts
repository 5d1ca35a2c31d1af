// The web console's pure parts, in Node: Markdown rendered safely (the agent's text is the only
// HTML the console inserts), edits shown as line diffs, and a session's transcript never leaving a
// cancelled turn's tool calls or requests pending, with who answered in words.

import { describe, expect, it } from "vitest";
import { lineDiff } from "../../protocol/line-diff";
import { renderMarkdown } from "../../web/src/markdown";
import {
  EMPTY,
  applyUpdate,
  notice,
  operationChanged,
  permissionRequested,
  unseenChanges,
  permissionResolved,
  permissionWithdrawn,
  resolutionText,
  authorOf,
  turnEnded,
} from "../../web/src/transcript";

describe("the console's Markdown", () => {
  it("renders Markdown and shows raw HTML as text, never as elements", () => {
    const html = renderMarkdown('**bold** <img src=x onerror="alert(1)"> <script>alert(2)</script>\n\n<div onclick="x()">block</div>');
    expect(html).toContain("<strong>bold</strong>");
    expect(html).not.toMatch(/<img|<script|<div/i);
    expect(html).toContain("&#60;img src=x onerror=&#34;alert(1)&#34;&#62;");
    expect(html).toContain("&#60;script&#62;");
  });

  it("keeps http(s), mailto and relative links; drops javascript: and data: targets; never loads images", () => {
    expect(renderMarkdown("[a](https://example.com/x)")).toContain('<a href="https://example.com/x"');
    expect(renderMarkdown("[rel](docs/x.md)")).toContain('<a href="docs/x.md"');
    for (const bad of ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>", "vbscript:x"]) {
      const html = renderMarkdown(`[click](${bad})`);
      expect(html, bad).not.toContain("<a ");
      expect(html, bad).toContain("click");
    }
    expect(renderMarkdown("![logo](https://example.com/logo.png)")).not.toContain("<img");
  });

  it("escapes quotes in link targets and titles", () => {
    const html = renderMarkdown('[x](https://e.com/"onmouseover="alert(1) "t\\"itle")');
    expect(html).not.toMatch(/"\s*onmouseover=/);
  });
});

describe("the console's diff", () => {
  it("shows removed, added and unchanged lines in order", () => {
    expect(lineDiff("# Demo\nA demo project.", "# Demo\nA demo project, edited.")).toEqual([
      { op: " ", text: "# Demo" },
      { op: "-", text: "A demo project." },
      { op: "+", text: "A demo project, edited." },
    ]);
    expect(lineDiff(null, "new")).toEqual([{ op: "+", text: "new" }]);
  });
});

describe("the console's transcript", () => {
  const call = { toolCallId: "c1", title: "Run the tests", kind: "execute", status: "pending", rawInput: { command: "npm test" } };
  const options = [
    { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
    { optionId: "reject-once", name: "Reject", kind: "reject_once" },
  ];

  it("a cancelled turn leaves no tool call pending and no request open", () => {
    let t = applyUpdate(EMPTY, { sessionUpdate: "tool_call", ...call }, undefined);
    t = applyUpdate(t, { sessionUpdate: "tool_call", toolCallId: "c2", kind: "read", status: "in_progress" }, undefined);
    t = permissionRequested(t, 7, { toolCall: call, options });
    t = turnEnded(t, "The turn was cancelled.");
    expect(Object.values(t.tools).map((c) => c.status)).toEqual(["cancelled", "cancelled"]);
    expect(t.permissions["tool:c1"]?.state).toBe("resolved");
    expect(t.items.at(-1)).toEqual({ type: "notice", text: "The turn was cancelled.", tone: "warn" });
  });

  it("says who answered, by name and option, never by id", () => {
    let t = permissionRequested(applyUpdate(EMPTY, { sessionUpdate: "tool_call", ...call }, undefined), 7, { toolCall: call, options });
    t = permissionWithdrawn(t, 7);
    expect(t.permissions["tool:c1"]?.state).toBe("withdrawn");
    t = permissionResolved(t, {
      toolCallId: "c1",
      outcome: { outcome: "selected", optionId: "allow-once" },
      decidedBy: { type: "person", user: "ana", connectionId: "x", keyId: "key_ana" },
    });
    const decided = t.permissions["tool:c1"]?.decided;
    expect(decided && resolutionText(decided, { keyId: "key_me", connectionId: "me" })).toBe("Answered by ana — “Allow once” (allow_once)");
    // Ana's own page says "you", by her key: another tab, a reload, a reconnect alike.
    expect(decided && resolutionText(decided, { keyId: "key_ana", connectionId: "other" })).toBe(
      "Answered by you (ana) — “Allow once” (allow_once)",
    );
  });

  it("a replayed resolution (session/load) makes the card from its request: the same words as live, with the person's reason", () => {
    const resolved = {
      toolCallId: "c1",
      outcome: { outcome: "selected", optionId: "reject-once" },
      decidedBy: { type: "person", user: "ana", keyId: "key_ana", reason: "Not on ⟨U+202E⟩Fridays" },
    };
    const me = { keyId: "key_bo", connectionId: "bo" };
    const live = permissionResolved(
      permissionRequested(applyUpdate(EMPTY, { sessionUpdate: "tool_call", ...call }, undefined), 7, { toolCall: call, options }),
      resolved,
    );
    const replayed = permissionResolved(applyUpdate(EMPTY, { sessionUpdate: "tool_call", ...call }, undefined), {
      ...resolved,
      replayed: true,
      request: { toolCall: call, options },
    });
    const [a, b] = [live.permissions["tool:c1"], replayed.permissions["tool:c1"]];
    expect(b?.state).toBe("resolved");
    expect(b?.decided && resolutionText(b.decided, me)).toBe("Answered by ana — “Reject” (reject_once)");
    expect(b?.decided).toEqual(a?.decided);
    expect(b?.decided?.reason).toBe("Not on ⟨U+202E⟩Fridays");
    expect(b?.options).toEqual(options);
  });

  it('a replayed prompt is "You" for the person who sent it (by key), and named for anyone else', () => {
    const echo = (keyId: string, user: string) =>
      applyUpdate(
        EMPTY,
        { sessionUpdate: "user_message_chunk", content: { type: "text", text: "hi" } },
        { acpGateway: { synthesized: true, user, keyId } },
      );
    const item = (t: ReturnType<typeof echo>) => t.items[0] as { by?: string | null; keyId?: string | null };
    expect(authorOf(item(echo("key_ana", "dev")), { keyId: "key_ana", connectionId: null })).toBe("You");
    expect(authorOf(item(echo("key_ana", "dev")), { keyId: "key_bo", connectionId: null })).toBe("dev");
    expect(authorOf({ by: null }, { keyId: "key_bo", connectionId: null })).toBe("You"); // sent from this page
  });

  it("a resolution with no card on screen (history) becomes a notice naming the operation", () => {
    const t = permissionResolved(applyUpdate(EMPTY, { sessionUpdate: "tool_call", ...call }, undefined), {
      toolCallId: "c1",
      outcome: { outcome: "selected", optionId: "allow-once" },
      decidedBy: { type: "rule", description: "Always allow `npm test …`" },
    });
    expect(t.items.at(-1)).toEqual({
      type: "notice",
      text: "Permission to execute `npm test`: Auto-answered by the team rule “Always allow `npm test …`” — “allow-once”",
      tone: "info",
    });
  });

  it("streams agent text into one message and keeps thoughts apart", () => {
    let t = EMPTY;
    for (const text of ["Hello ", "there"])
      t = applyUpdate(t, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } }, undefined);
    t = applyUpdate(t, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hmm" } }, undefined);
    expect(t.items).toEqual([
      { type: "message", role: "agent", text: "Hello there" },
      { type: "thought", text: "hmm" },
    ]);
  });
});

describe("the console's permission cards", () => {
  const options = [
    { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
    { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  ];
  it("keep which options the gateway says this person may choose (_meta.acpGateway.answerable), or null for all", () => {
    const params = {
      toolCall: { toolCallId: "t1", kind: "execute" },
      options,
      _meta: { acpGateway: { answerable: { optionIds: ["allow-once"], reason: "Four eyes: you prompted this turn" } } },
    };
    const t = permissionRequested(EMPTY, 4, params);
    expect(t.permissions["tool:t1"]?.answerable).toEqual({ optionIds: ["allow-once"], reason: "Four eyes: you prompted this turn" });
    const all = permissionRequested(EMPTY, 5, { toolCall: { toolCallId: "t1" }, options });
    expect(all.permissions["tool:t1"]?.answerable).toBeNull();
  });
});

const ONCE = [{ optionId: "once", name: "Allow once", kind: "allow_once" }];

// The card shows the operation as the gateway froze it (decision 0040), and says why a request is asked again.
describe("the console's card of a frozen operation", () => {
  it("shows the frozen git status, not the stream's later git push --force origin main", () => {
    let t = applyUpdate(
      EMPTY,
      { sessionUpdate: "tool_call", toolCallId: "c1", kind: "execute", rawInput: { command: "git status" } },
      undefined,
    );
    // The agent changed the row after the gateway froze the request; the copy carries the frozen one.
    t = applyUpdate(
      t,
      {
        sessionUpdate: "tool_call_update",
        toolCallId: "c1",
        rawInput: { command: "git push --force origin main" },
        locations: [{ path: "/x" }],
      },
      undefined,
    );
    const frozen = { toolCallId: "c1", kind: "execute", rawInput: { command: "git status" }, status: "pending" };
    t = permissionRequested(t, 7, { toolCall: frozen, options: ONCE, _meta: { acpGateway: { operation: { hash: "a".repeat(64) } } } });
    expect(t.permissions["tool:c1"]?.toolCall).toEqual(frozen);
  });

  it("from a gateway that sends no frozen operation, completes the request's call with the stream's", () => {
    let t = applyUpdate(EMPTY, { sessionUpdate: "tool_call", toolCallId: "c1", kind: "execute", rawInput: { command: "ls" } }, undefined);
    t = permissionRequested(t, 7, { toolCall: { toolCallId: "c1", title: "List" }, options: ONCE });
    expect(t.permissions["tool:c1"]?.toolCall).toMatchObject({ rawInput: { command: "ls" }, title: "List" });
  });

  it("says on the card that it replaces a changed request, and why it is always asked", () => {
    const t = permissionRequested(EMPTY, 8, {
      toolCall: { toolCallId: "c1", kind: "execute", rawInput: { command: "git push" } },
      options: ONCE,
      _meta: {
        acpGateway: {
          operation: { hash: "b".repeat(64), replaces: 7, changed: ["rawInput"], rawInputMissing: "the request carries no rawInput" },
        },
      },
    });
    expect(t.permissions["tool:c1"]?.note).toBe(
      "The agent changed this request (rawInput) after it was asked; this is the new one. Always asked: the request carries no rawInput.",
    );
    expect(permissionRequested(EMPTY, 9, { toolCall: { toolCallId: "c2" }, options: ONCE }).permissions["tool:c2"]?.note).toBeUndefined();
  });

  it("says why a command that may outlive its step is always asked (decision 0068)", () => {
    const t = permissionRequested(EMPTY, 10, {
      toolCall: { toolCallId: "c3", kind: "execute", rawInput: { command: "setsid -f make test" } },
      options: ONCE,
      _meta: {
        acpGateway: { operation: { hash: "c".repeat(64), outlivesItsStep: "`setsid` starts something that keeps running after the step" } },
      },
    });
    expect(t.permissions["tool:c3"]?.note).toBe(
      "Always asked: `setsid` starts something that keeps running after the step, and what it writes then cannot be known; no rule answers or remembers it.",
    );
  });

  it("says on the card of a request asked anyway what the agent changed unseen (_acp_gateway/unseen_changes)", () => {
    const message = "The agent changed /p/src/a.test.js since anyone looked, with no person asked; …";
    let t = permissionRequested(EMPTY, 11, {
      toolCall: { toolCallId: "c4", kind: "execute", rawInput: { command: "git status" } },
      options: ONCE,
    });
    t = unseenChanges(t, { toolCallId: "c4", unseen: { message, total: 1 } });
    expect(t.permissions["tool:c4"]?.note).toBe(message);
    expect(unseenChanges(t, { toolCallId: "nope", unseen: { message } })).toBe(t);
  });

  it("says why a rule did not answer: what the agent changed that nobody saw (decision 0046)", () => {
    const message = "The agent changed /p/package.json since anyone looked, with no person asked; …";
    const t = permissionRequested(EMPTY, 10, {
      toolCall: { toolCallId: "c3", kind: "execute", rawInput: { command: "npm test" } },
      options: ONCE,
      _meta: { acpGateway: { operation: { hash: "c".repeat(64) }, unseen: { message, total: 1, upTo: 3, changes: [], readers: [] } } },
    });
    expect(t.permissions["tool:c3"]?.note).toBe(message);
  });

  it("says why a request is asked again", () => {
    const message =
      "The agent changed this request's rawInput after it was asked: it was withdrawn and is asked again. Nothing was approved.";
    expect(operationChanged(EMPTY, { message })).toEqual(notice(EMPTY, message, "warn"));
  });
});
