// protocol/gateway-notices.ts: the ACP `notice` updates the gateway sends for what it does on its own
// (decision 0063). Fixed cases: the draft's own example (docs/protocol/v1/draft/prompt-turn.mdx,
// "Session Notices", and the RFD), and the pinned SDK's schema (1.23) for the shape and the capability.
import schema from "@agentclientprotocol/sdk/schema/v1/schema.json";
import { describe, expect, it } from "vitest";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { answeredByGateway, noticeUpdate } from "../../protocol/answered-by-gateway";
import {
  answerRefusedNotice,
  approvalRecordedNotice,
  heldNoticeOnAttach,
  modeChangeDecidedNotice,
  modeChangeWaitingNotice,
  noticeFrame,
  noticeOfNotification,
  ruleAnsweredNotice,
  ruleCreatedNotice,
} from "../../protocol/gateway-notices";
import { heldMessage } from "../../protocol/unasked-runs";

const SESSION = "sess_abc123def456";

type Update = Record<string, unknown>;
const updateOf = (frame: string | undefined): Update => (JSON.parse(frame ?? "null") as { params: { update: Update } }).params.update;

/** What the pinned schema allows in a `notice` update: its `Notice` properties, and which are required. */
const NOTICE = schema.$defs.Notice;

/** The update is the schema's Notice: every required field, no field it does not know, a non-empty title. */
function expectSchemaNotice(update: Update): void {
  const { sessionUpdate, ...fields } = update;
  expect(sessionUpdate).toBe("notice");
  for (const field of NOTICE.required as string[]) expect(fields).toHaveProperty(field);
  for (const field of Object.keys(fields)) expect(Object.keys(NOTICE.properties)).toContain(field);
  expect(["info", "warning", "error"]).toContain(fields.severity);
  expect(typeof fields.title === "string" && fields.title.length > 0).toBe(true);
  if ("description" in fields) expect(typeof fields.description).toBe("string");
}

describe("the notice frame", () => {
  it("is the draft's own example, byte for byte in meaning", () => {
    const frame = noticeFrame(SESSION, { severity: "warning", title: "MCP server unavailable", description: "Continuing without it." });
    expect(JSON.parse(frame)).toEqual({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: "sess_abc123def456",
        update: {
          sessionUpdate: "notice",
          severity: "warning",
          title: "MCP server unavailable",
          description: "Continuing without it.",
        },
      },
    });
    expectSchemaNotice(updateOf(frame));
  });

  it("leaves description out when there is none, and never sends an empty title (the schema: non-empty)", () => {
    expect(updateOf(noticeFrame(SESSION, { severity: "info", title: "Only a title" }))).toEqual({
      sessionUpdate: "notice",
      severity: "info",
      title: "Only a title",
    });
    expect(updateOf(noticeFrame(SESSION, { severity: "info", title: "" })).title).toBe("Notice");
  });

  it("the capability the gateway reads is the one the pinned schema names: clientCapabilities.session.notices", () => {
    expect(Object.keys(schema.$defs.ClientSessionCapabilities.properties)).toContain("notices");
    expect(JSON.stringify(NOTICE)).toMatch(/session\.notices/);
  });

  it("the answered-after-cancel notice keeps its shape (built on the same frame)", () => {
    const report = answeredByGateway(
      SESSION,
      { toolCallId: "t1", kind: "execute", rawInput: { command: "npm test" } },
      "/p",
      "after_cancel",
      {
        outcome: { outcome: "cancelled" },
      },
    );
    const update = updateOf(noticeUpdate(report));
    expect(update).toMatchObject({ severity: "warning", title: "A request after cancel was refused" });
    expectSchemaNotice(update);
  });
});

describe("what the gateway does on its own, as notices", () => {
  const ruleResolved = {
    sessionId: SESSION,
    toolCallId: "call_abc",
    outcome: { outcome: "selected", optionId: "allow" },
    chosenOptionId: "allow",
    decidedBy: { type: "rule", ruleId: "r-42", description: "allow `npm test` in /projects/demo" },
  };

  it("a request answered by a rule names the rule by its description and id, and what it chose", () => {
    const notice = ruleAnsweredNotice(ruleResolved);
    expect(notice).toEqual({
      severity: "info",
      title: "Answered by a rule",
      description:
        'The tenant\'s rule "allow `npm test` in /projects/demo" (r-42) answered the agent\'s permission request for tool call call_abc: it chose option "allow". Nobody was asked.',
    });
    expect(ruleAnsweredNotice({ ...ruleResolved, decidedBy: { type: "person", connectionId: "c" } })).toBeUndefined();
  });

  it("agent-made text in a notice is shown safely: a bidi override becomes a visible symbol", () => {
    const hostile = {
      ...ruleResolved,
      toolCallId: "call\u202eabc",
      decidedBy: { type: "rule", ruleId: "r", description: "allow \u001b[2K ls" },
    };
    const text = ruleAnsweredNotice(hostile)?.description ?? "";
    expect(text.includes("\u202e") || text.includes("\u001b")).toBe(false);
    expect(text).toContain("⟨U+202E⟩");
  });

  it("a first approval of two says the request waits for a second person", () => {
    const notice = approvalRecordedNotice({
      sessionId: SESSION,
      toolCallId: "c1",
      approvedBy: { user: "bea", role: "approver" },
      needed: 2,
    });
    expect(notice).toMatchObject({ severity: "info", title: "Waiting for a second approval" });
    expect(notice.description).toBe(
      "bea approved tool call c1. Four eyes: it reaches the agent only when a second person approves it too.",
    );
  });

  it("a refused answer is a warning carrying the refusal's own words", () => {
    const message = "Your answer to permission request 3 was refused: observers may watch but not answer. The request is still pending.";
    expect(answerRefusedNotice(message)).toEqual({ severity: "warning", title: "Your answer was refused", description: message });
  });

  it("a held mode change, and each way it is decided", () => {
    const held = {
      sessionId: SESSION,
      setting: "mode",
      value: "bypassPermissions",
      proposedBy: "ada",
      message: "ada proposes switching mode to bypassPermissions; it waits.",
    };
    expect(modeChangeWaitingNotice(held)).toEqual({
      severity: "info",
      title: "Mode change waiting for a second person",
      description: held.message,
    });
    const decided = (outcome: string, by: string | null) =>
      modeChangeDecidedNotice({ sessionId: SESSION, setting: "mode", value: "bypassPermissions", outcome, by });
    expect(decided("approved", "bob")).toEqual({
      severity: "info",
      title: "Mode change approved",
      description: "mode → bypassPermissions was approved by bob; it goes to the agent.",
    });
    expect(decided("refused", "bob")).toMatchObject({ severity: "warning", title: "Mode change refused" });
    expect(decided("expired", null)).toMatchObject({ severity: "warning", title: "Mode change expired" });
    expect(decided("withdrawn", "bob")).toMatchObject({
      severity: "warning",
      title: "Mode change withdrawn",
      description: expect.stringContaining("withdrawn by bob"),
    });
  });
});

describe("which frames and notifications get a notice beside them", () => {
  it("every gateway notification a person can act on gets one; the three left out get none (decision 0063)", () => {
    const params = {
      sessionId: SESSION,
      toolCallId: "c1",
      approvedBy: { user: "bea" },
      setting: "mode",
      value: "plan",
      outcome: "approved",
      by: "bob",
      rule: { id: "r-1", decision: "allow", description: "allow `npm test`" },
      createdBy: "ada",
      reason: "why",
      message: "what happened",
      unseen: { message: "what is unseen" },
    };
    const leftOut: string[] = [
      GATEWAY_NOTIFICATIONS.answeredByGateway, // builds its own (answered-by-gateway.ts)
      GATEWAY_NOTIFICATIONS.permissionResolved, // a rule's: beside the machine's frame; a person's: not the gateway's doing
      GATEWAY_NOTIFICATIONS.historyCompacted, // the form of one client's replay, for its code
    ];
    for (const method of Object.values(GATEWAY_NOTIFICATIONS)) {
      const frame = noticeOfNotification(method, params);
      if (leftOut.includes(method)) {
        expect(frame, method).toBeUndefined();
        continue;
      }
      expect(JSON.parse(frame ?? "null").params.sessionId, method).toBe(SESSION);
      expectSchemaNotice(updateOf(frame));
    }
    expect(noticeOfNotification(GATEWAY_NOTIFICATIONS.approvalRecorded, { toolCallId: "no session" })).toBeUndefined();
    expect(noticeOfNotification(GATEWAY_NOTIFICATIONS.turnEnded, { message: "no session" })).toBeUndefined();
    expect(noticeOfNotification("_acp_gateway/not_a_notification", params)).toBeUndefined();
  });

  it("each says what the notification already says, under a title a person can act on", () => {
    const said = (method: string, p: Record<string, unknown>) => updateOf(noticeOfNotification(method, { sessionId: SESSION, ...p }));
    const cases: [string, Record<string, unknown>, string, string, string][] = [
      [
        GATEWAY_NOTIFICATIONS.fourEyesUnsatisfiable,
        { reason: "waits for an approver to attach" },
        "warning",
        "Nobody here can give the second approval",
        "waits for an approver to attach",
      ],
      [
        GATEWAY_NOTIFICATIONS.rulesUnavailable,
        { message: "rules could not be consulted" },
        "warning",
        "Rules unavailable: people are asked",
        "rules could not be consulted",
      ],
      [
        GATEWAY_NOTIFICATIONS.operationChanged,
        { message: "command changed" },
        "warning",
        "A request changed and is asked again",
        "command changed",
      ],
      [
        GATEWAY_NOTIFICATIONS.ruleNotCreated,
        { reason: "observers may not make rules" },
        "info",
        "Not remembered as a rule",
        "observers may not make rules",
      ],
      [
        GATEWAY_NOTIFICATIONS.turnEnded,
        { reason: "deadline", message: "the turn ran out of time" },
        "warning",
        "The gateway ended the turn",
        "the turn ran out of time",
      ],
      [
        GATEWAY_NOTIFICATIONS.ranUnasked,
        { message: "ran rm unasked" },
        "warning",
        "The agent ran a tool call without asking",
        "ran rm unasked",
      ],
      [
        GATEWAY_NOTIFICATIONS.unseenChanges,
        { unseen: { message: "2 files changed unseen", total: 2 } },
        "warning",
        "This request may read unseen changes",
        "2 files changed unseen",
      ],
      [
        GATEWAY_NOTIFICATIONS.sessionHeld,
        { message: "held until a person resumes it" },
        "error",
        "Session held: it takes no prompts",
        "held until a person resumes it",
      ],
      [GATEWAY_NOTIFICATIONS.sessionResumed, { message: "ada resumed it" }, "info", "Session resumed", "ada resumed it"],
      [
        GATEWAY_NOTIFICATIONS.agentModeChanged,
        { message: "switched to bypassPermissions" },
        "warning",
        "The agent switched its mode by itself",
        "switched to bypassPermissions",
      ],
      [
        GATEWAY_NOTIFICATIONS.limitReached,
        { code: -32029, message: "too many waiting", data: { limit: "x" } },
        "warning",
        "A limit was reached",
        "too many waiting",
      ],
      [GATEWAY_NOTIFICATIONS.sessionDeleted, { message: "deleted by ada" }, "warning", "Session deleted", "deleted by ada"],
    ];
    for (const [method, p, severity, title, description] of cases)
      expect(said(method, p), method).toEqual({ sessionUpdate: "notice", severity, title, description });
    // Without its sentence: the title alone, never an empty or invented description.
    expect(said(GATEWAY_NOTIFICATIONS.turnEnded, { reason: "deadline" })).toEqual({
      sessionUpdate: "notice",
      severity: "warning",
      title: "The gateway ended the turn",
    });
  });

  it("a rule made from a person's answer: who, the rule by description and id, what it will do unasked", () => {
    expect(
      ruleCreatedNotice({
        toolCallId: "c1",
        createdBy: "ada",
        rule: { id: "r-9", decision: "reject", description: "reject `rm -rf` in /p" },
      }),
    ).toEqual({
      severity: "info",
      title: "A rule was remembered",
      description:
        "ada's answer to tool call c1 became the tenant's rule \"reject `rm -rf` in /p\" (r-9): from now on it will reject matching requests without asking anyone. An admin can revoke it.",
    });
  });

  it("a client attaching to a held session: an error notice with the hold's own words (how to resume it)", () => {
    const hold = { reason: "mode_forbidden" as const, mode: "bypassPermissions", at: 0 };
    expect(updateOf(heldNoticeOnAttach(SESSION, hold))).toEqual({
      sessionUpdate: "notice",
      severity: "error",
      title: "Session held: it takes no prompts",
      description: heldMessage(SESSION, hold),
    });
    expect(heldMessage(SESSION, hold)).toContain(`DELETE /v1/sessions/${SESSION}/hold`);
  });

  it("their sentences are shown safely and cut: a bidi override or escape becomes visible, 2,000 characters at most", () => {
    const hostile = updateOf(
      noticeOfNotification(GATEWAY_NOTIFICATIONS.ranUnasked, { sessionId: SESSION, message: "ran \u202e\u001b[2K ls" }),
    );
    expect(String(hostile.description).includes("\u202e") || String(hostile.description).includes("\u001b")).toBe(false);
    expect(hostile.description).toContain("⟨U+202E⟩");
    const long = updateOf(noticeOfNotification(GATEWAY_NOTIFICATIONS.turnEnded, { sessionId: SESSION, message: "x".repeat(5000) }));
    expect(long.description).toBe(`${"x".repeat(2000)}…`);
  });

  it("the machine's two: a rule's resolution and a refused answer, from what the machine writes in those frames", () => {
    // The machine hands these beside the frames, and only these (permission-machine.test.ts checks which frames).
    expect(updateOf(noticeFrame(SESSION, ruleAnsweredNotice(ruleResolvedParams())!))).toMatchObject({ title: "Answered by a rule" });
    const byPerson = { ...ruleResolvedParams(), decidedBy: { type: "person", connectionId: "c1", user: "ada", keyId: "k" } };
    expect(ruleAnsweredNotice(byPerson)).toBeUndefined();

    const refused = noticeFrame(SESSION, answerRefusedNotice("Your answer to permission request 7 was refused: why."));
    expect(JSON.parse(refused).params.sessionId).toBe(SESSION);
    expect(updateOf(refused)).toEqual({
      sessionUpdate: "notice",
      severity: "warning",
      title: "Your answer was refused",
      description: "Your answer to permission request 7 was refused: why.",
    });
  });

  function ruleResolvedParams() {
    return {
      sessionId: SESSION,
      toolCallId: "call_abc",
      outcome: { outcome: "selected", optionId: "allow" },
      chosenOptionId: "allow",
      decidedBy: { type: "rule", ruleId: "r-42", description: "allow `npm test`" },
    };
  }
});
