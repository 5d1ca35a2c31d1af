// protocol/session-attach.ts (decision 0054): session/attach's params read and authorised, and the
// PR #533 updates built from the gateway's own frames.
import { describe, expect, it } from "vitest";
import { RpcError } from "../../protocol/jsonrpc";
import {
  type HistoryPolicy,
  MAX_HISTORY_PROMPTS,
  MAX_PROMPT_TEXT,
  attachCapability,
  attachResult,
  promptHistoryItem,
  attachNotFound,
  clientDisconnectedUpdate,
  detachResult,
  peerView,
  promptReceivedUpdate,
  readAttach,
  resolvedInPrShape,
  turnCompleteUpdate,
} from "../../protocol/session-attach";
import type { Role } from "../../core/principal";

const id = () => "given-by-gateway";

function refusal(params: unknown, role: Role | null): RpcError {
  try {
    readAttach(params, role, id);
  } catch (error) {
    if (error instanceof RpcError) return error;
    throw error;
  }
  throw new Error("readAttach accepted what it should refuse");
}

describe("readAttach: roles never raised by asking", () => {
  const cases: [Role | null, unknown, "controller" | "observer" | number, Role | null][] = [
    ["observer", undefined, "observer", "observer"],
    ["observer", "observer", "observer", "observer"],
    ["observer", "controller", -32002, null],
    [null, "controller", -32002, null],
    [null, undefined, "observer", "observer"],
    ["member", undefined, "controller", "member"],
    ["member", "observer", "observer", "observer"],
    ["approver", "controller", "controller", "approver"],
    ["owner", "observer", "observer", "observer"],
  ];
  for (const [key, asked, attachedAs, sessionRole] of cases) {
    it(`a ${key ?? "role-less"} key asking ${String(asked ?? "nothing")} ${typeof attachedAs === "number" ? `is refused ${attachedAs}` : `attaches as ${attachedAs} (${sessionRole} in the session)`}`, () => {
      const params = { sessionId: "s", ...(asked !== undefined ? { role: asked } : {}) };
      if (typeof attachedAs === "number") return expect(refusal(params, key).code).toBe(attachedAs);
      const ask = readAttach(params, key, id);
      expect(ask.role).toBe(attachedAs);
      expect(ask.sessionRole).toBe(sessionRole);
    });
  }

  it("offers each key only the roles it may take", () => {
    expect(attachCapability("observer").roles).toEqual(["observer"]);
    expect(attachCapability(null).roles).toEqual(["observer"]);
    expect(attachCapability("member").roles).toEqual(["controller", "observer"]);
  });
});

describe("readAttach: params", () => {
  it("defaults to full history and a clientId of the gateway's; after_message carries its afterMessageId to the session", () => {
    expect(readAttach({ sessionId: "s" }, "member", id)).toMatchObject({ historyPolicy: "full", as: { clientId: "given-by-gateway" } });
    expect(readAttach({ sessionId: "s", historyPolicy: "after_message", afterMessageId: "m" }, "member", id)).toMatchObject({
      historyPolicy: "after_message",
      afterMessageId: "m",
    });
    expect(readAttach({ sessionId: "s", afterMessageId: "m" }, "member", id)).not.toHaveProperty("afterMessageId");
    expect(readAttach({ sessionId: "s", clientId: "c", clientInfo: { name: "n", version: "1" } }, "member", id).as).toEqual({
      clientId: "c",
      name: "n",
      version: "1",
    });
  });

  it("refuses with -32602 what it cannot read: no sessionId, an unknown policy or role, a field too long or not a string", () => {
    for (const params of [
      undefined,
      {},
      { sessionId: 7 },
      { sessionId: "s", historyPolicy: "all" },
      { sessionId: "s", role: "admin" },
      { sessionId: "s", clientId: "x".repeat(65) },
      { sessionId: "s", clientId: 5 },
      { sessionId: "s", clientInfo: { name: "" } },
    ])
      expect(refusal(params, "owner").code).toBe(-32602);
  });
});

describe("the PR's updates", () => {
  /** The params of the gateway's `_acp_gateway/permission_resolved`, as the machine hands them beside the frame. */
  const resolved = (decidedBy: unknown, outcome: unknown = { outcome: "selected", optionId: "ok" }) => ({
    sessionId: "s",
    toolCallId: "t",
    outcome,
    decidedBy,
  });

  it("permission_resolved names the answering client by its attach identity, under both sessionUpdate and type", () => {
    const text = resolvedInPrShape(resolved({ type: "person", connectionId: "c1", user: "ada" }), (conn) =>
      conn === "c1" ? peerView({ user: "ada", attachedAs: { clientId: "phone-1", name: "phone", version: "2" } }) : undefined,
    );
    expect(JSON.parse(text ?? "null")).toEqual({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: "s",
        update: {
          sessionUpdate: "permission_resolved",
          type: "permission_resolved",
          toolCallId: "t",
          chosenOptionId: "ok",
          outcome: "selected",
          resolvedBy: { clientId: "phone-1", name: "phone", version: "2", user: "ada" },
        },
      },
    });
  });

  it("a client gone, a rule and a cancel each resolve by a name, and a cancel chose no option", () => {
    const gone = JSON.parse(resolvedInPrShape(resolved({ type: "person", connectionId: "c9", user: "bo" }), () => undefined) ?? "null");
    expect(gone.params.update.resolvedBy).toEqual({ name: "bo", user: "bo" });
    const rule = JSON.parse(
      resolvedInPrShape(resolved({ type: "rule", ruleId: "r1", description: "npm test" }), () => undefined) ?? "null",
    );
    expect(rule.params.update.resolvedBy).toEqual({ clientId: "rule:r1", name: "acp-gateway rule" });
    const cancel = JSON.parse(resolvedInPrShape(resolved({ type: "cancel" }, { outcome: "cancelled" }), () => undefined) ?? "null");
    expect(cancel.params.update).toMatchObject({ chosenOptionId: null, outcome: "cancelled", resolvedBy: { clientId: "gateway:cancel" } });
  });

  it("client_disconnected carries the client and an ISO timestamp", () => {
    const update = JSON.parse(clientDisconnectedUpdate("s", { clientId: "c", name: "n" }, 0)).params.update;
    expect(update).toEqual({
      sessionUpdate: "client_disconnected",
      type: "client_disconnected",
      client: { clientId: "c", name: "n" },
      timestamp: "1970-01-01T00:00:00.000Z",
    });
  });
});

// The RFD's own examples (docs/rfds/multi-client-session-attach.mdx, PR #533 at 98e098b7), as fixed cases.
describe("turn_complete for a turn without a stopReason", () => {
  const updateOf = (text: string) => JSON.parse(text).params.update;
  it("an error answer has stopReason null; a turn the gateway ended says its reason; no messageId when the agent named none", () => {
    expect(updateOf(turnCompleteUpdate("s", { by: "agent", result: undefined }, undefined))).toEqual({
      sessionUpdate: "turn_complete",
      type: "turn_complete",
      stopReason: null,
    });
    expect(updateOf(turnCompleteUpdate("s", { by: "gateway", reason: "turn_idle" }, "m"))).toEqual({
      sessionUpdate: "turn_complete",
      type: "turn_complete",
      stopReason: null,
      reason: "turn_idle",
      messageId: "m",
    });
  });

  it("prompt_received of a prompt that is not an array carries an empty one, never the client's other value", () => {
    expect(updateOf(promptReceivedUpdate("s", { evil: true }, { name: "x" })).prompt).toEqual([]);
  });
});

describe("the RFD's examples", () => {
  const rfdAttach = {
    jsonrpc: "2.0",
    id: 5,
    method: "session/attach",
    params: {
      sessionId: "sess_abc123def456",
      historyPolicy: "full",
      clientId: "d290f1ee-6c54-4b01-90e6-d701748f0851",
      clientInfo: { name: "notification-dashboard", version: "1.0.0" },
    },
  };

  it("its session/attach request is read as it says: full history, its clientId and clientInfo", () => {
    expect(readAttach(rfdAttach.params, "member", id)).toEqual({
      sessionId: "sess_abc123def456",
      role: "controller",
      historyPolicy: "full",
      sessionRole: "member",
      as: { clientId: "d290f1ee-6c54-4b01-90e6-d701748f0851", name: "notification-dashboard", version: "1.0.0" },
    });
  });

  it("its after_message request is read as it says: the policy and the message after which to replay", () => {
    const params = { ...rfdAttach.params, historyPolicy: "after_message", afterMessageId: "ea87d0e7-beb8-484a-a404-94a30b78a5a8" };
    expect(readAttach(params, "member", id)).toMatchObject({
      historyPolicy: "after_message",
      afterMessageId: "ea87d0e7-beb8-484a-a404-94a30b78a5a8",
    });
    expect(refusal({ ...params, afterMessageId: undefined }, "member").code).toBe(-32602);
  });

  it("its turn_complete fields come out as it shows them (messageId: the agent's last message of the turn)", () => {
    const update = JSON.parse(
      turnCompleteUpdate("sess_abc123def456", { by: "agent", result: { stopReason: "end_turn" } }, "ea87d0e7-beb8-484a-a404-94a30b78a5a8"),
    );
    expect(update).toEqual({
      jsonrpc: "2.0",
      method: "session/update",
      params: {
        sessionId: "sess_abc123def456",
        update: {
          sessionUpdate: "turn_complete",
          type: "turn_complete",
          stopReason: "end_turn",
          messageId: "ea87d0e7-beb8-484a-a404-94a30b78a5a8",
        },
      },
    });
  });

  it("its prompt_received fields come out as it shows them, but messageId (the agent makes message ids)", () => {
    const sentBy = { clientId: "a1b2c3d4-e5f6-7890-abcd-ef1234567890", name: "Claude Code", version: "1.0.0" };
    const prompt = [{ type: "text", text: "Add authentication to the API" }];
    expect(JSON.parse(promptReceivedUpdate("sess_abc123def456", prompt, sentBy))).toEqual({
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "sess_abc123def456", update: { sessionUpdate: "prompt_received", type: "prompt_received", prompt, sentBy } },
    });
  });

  it("its permission_resolved fields come out as it shows them (beside ACP's sessionUpdate)", () => {
    // The params of the gateway's `_acp_gateway/permission_resolved`.
    const gateways = {
      sessionId: "sess_abc123def456",
      toolCallId: "call_xyz",
      outcome: { outcome: "selected", optionId: "allow_once" },
      chosenOptionId: "allow_once",
      decidedBy: { type: "person", connectionId: "conn-1", user: "dev" },
    };
    const update = JSON.parse(
      resolvedInPrShape(gateways, () => ({
        clientId: "d290f1ee-6c54-4b01-90e6-d701748f0851",
        name: "notification-dashboard",
        version: "1.0.0",
        user: "dev",
      })) ?? "null",
    ).params.update;
    expect(update).toMatchObject({
      type: "permission_resolved",
      toolCallId: "call_xyz",
      chosenOptionId: "allow_once",
      resolvedBy: { clientId: "d290f1ee-6c54-4b01-90e6-d701748f0851", name: "notification-dashboard", version: "1.0.0" },
    });
  });

  it("its client_disconnected fields come out as it shows them", () => {
    const client = { clientId: "a1b2c3d4-e5f6-7890-abcd-ef1234567890", name: "Claude Code", version: "1.0.0" };
    const update = JSON.parse(clientDisconnectedUpdate("sess_abc123def456", client, Date.parse("2026-02-18T15:30:00Z"))).params;
    expect(update).toEqual({
      sessionId: "sess_abc123def456",
      update: { sessionUpdate: "client_disconnected", type: "client_disconnected", client, timestamp: "2026-02-18T15:30:00.000Z" },
    });
  });

  it("its error codes: not found -32001, not authorised -32002", () => {
    expect(attachNotFound("sess_abc123def456")).toMatchObject({
      code: -32001,
      message: "Session not found",
      data: { sessionId: "sess_abc123def456" },
    });
    expect(refusal({ sessionId: "sess_abc123def456", role: "controller" }, "observer").code).toBe(-32002);
  });

  it("its detach answer", () => {
    expect(detachResult("sess_abc123def456")).toEqual({ sessionId: "sess_abc123def456", status: "detached" });
  });

  it("its attach answer's history: the prompt item and the pending request as it shows them", () => {
    const result = attachResult({
      sessionId: "sess_abc123def456",
      as: { clientId: "d290f1ee-6c54-4b01-90e6-d701748f0851" },
      role: "controller",
      historyPolicy: "full",
      others: [{ clientId: "a1b2c3d4-e5f6-7890-abcd-ef1234567890", name: "Claude Code", version: "1.0.0" }],
      prompts: [{ blocks: [{ type: "text", text: "Add authentication to the API" }], at: Date.parse("2026-02-18T14:22:00Z") }],
      pending: [{ toolCallId: "call_abc" }],
      meta: {},
    });
    expect(result).toEqual({
      sessionId: "sess_abc123def456",
      clientId: "d290f1ee-6c54-4b01-90e6-d701748f0851",
      role: "controller",
      historyPolicy: "full",
      history: [
        { type: "prompt", content: "Add authentication to the API", timestamp: "2026-02-18T14:22:00.000Z" },
        { type: "permission_request", toolCallId: "call_abc", status: "pending" },
      ],
      connectedClients: [{ clientId: "a1b2c3d4-e5f6-7890-abcd-ef1234567890", name: "Claude Code", version: "1.0.0" }],
    });
  });
});

describe("the attach answer's prompt items (decision 0063)", () => {
  const base = {
    sessionId: "s1",
    as: { clientId: "c" },
    role: "controller" as const,
    others: [],
    prompts: [{ blocks: [{ type: "text", text: "first" }], at: 0 }],
    pending: [{ toolCallId: "t1" }],
    meta: {},
  };
  const historyOf = (historyPolicy: HistoryPolicy) => attachResult({ ...base, historyPolicy }).history as { type: string }[] | undefined;

  it("full and after_message list the prompts the replay carried; pending_only only what is pending; none no history", () => {
    expect(historyOf("full")?.map((h) => h.type)).toEqual(["prompt", "permission_request"]);
    expect(historyOf("after_message")?.map((h) => h.type)).toEqual(["prompt", "permission_request"]);
    expect(historyOf("pending_only")?.map((h) => h.type)).toEqual(["permission_request"]);
    expect(historyOf("none")).toBeUndefined();
  });

  it("names blocks that are not text, cuts a long text, and lists only the newest prompts", () => {
    const item = promptHistoryItem({
      blocks: [
        { type: "text", text: "see" },
        { type: "resource_link", uri: "file:///p/a.ts", name: "a.ts" },
        { type: "resource", resource: { uri: "file:///p/b.ts", text: "…" } },
        { type: "image", data: "AAAA", mimeType: "image/png" },
      ],
      at: 0,
    });
    expect(item.content).toBe("see\n[resource_link: file:///p/a.ts]\n[resource: file:///p/b.ts]\n[image]");
    const long = promptHistoryItem({ blocks: [{ type: "text", text: "x".repeat(MAX_PROMPT_TEXT + 10) }], at: 0 });
    expect(long.content).toHaveLength(MAX_PROMPT_TEXT + 1);
    expect(long.content.endsWith("…")).toBe(true);
    const many = Array.from({ length: MAX_HISTORY_PROMPTS + 2 }, (_, i) => ({ blocks: [{ type: "text", text: `p${i}` }], at: i }));
    const listed = attachResult({ ...base, historyPolicy: "full", prompts: many, pending: [] }).history as { content: string }[];
    expect(listed).toHaveLength(MAX_HISTORY_PROMPTS);
    expect(listed[0]?.content).toBe("p2");
  });
});
