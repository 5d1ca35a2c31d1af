// What the session machine (protocol/session-machine.ts) refuses before anything reaches the agent,
// and in which order: the client's role first, then the session's existence — a watch-only client
// gets the role's refusal whether or not the session was deleted, as the edge (client-connection.ts)
// refuses by role before it asks for the session; a client whose role may send it gets -32002 for a
// deleted session. The shell (durable-objects/session/session-object.ts `fromClient`) checks neither.

import { describe, expect, it } from "vitest";
import { type InflightRow, SessionMachine, type SessionPort, type SessionTable } from "../../protocol/session-machine";
import type { ToAgent } from "../../protocol/agent-relay";
import type { TurnState } from "../../protocol/turn-state";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { Role } from "../../core/principal";
import { type JsonRpcId, RpcError } from "../../protocol/jsonrpc";
import { AGENT_METHODS } from "../../protocol/methods";
import { ErrorCode } from "../../core/rpc-errors";
import { PROMPTS_IN_FLIGHT_LIMIT } from "../../protocol/prompt-queueing";
import { DECIDE_MODE_CHANGE, HOLD_MODE_CHANGE } from "../../protocol/people/mode-approval";

class Table implements SessionTable {
  meta: SessionTable["meta"] = { sessionId: "s1", agent: "a", deadlineMs: 60_000 };
  turn: TurnState = { state: "idle" };
  readonly hold = undefined;
  private lastId = 0;
  readonly inflight = new Map<number, InflightRow>();
  nextId(): number {
    return ++this.lastId;
  }
  lastSeq(): number {
    return 0;
  }
  addInflight(row: InflightRow): void {
    this.inflight.set(row.gwId, row);
  }
  takeInflight(gwId: number): InflightRow | undefined {
    const row = this.inflight.get(gwId);
    this.inflight.delete(gwId);
    return row;
  }
  inflightByClient(connId: string, clientId: JsonRpcId): InflightRow | undefined {
    return [...this.inflight.values()].find((r) => r.connId === connId && r.clientId === clientId);
  }
}

function session(): { machine: SessionMachine; table: Table; sent: ToAgent[] } {
  const table = new Table();
  const sent: ToAgent[] = [];
  const port: SessionPort = {
    table,
    channels: {
      edge: () => false,
      link: (frame) => {
        sent.push(frame);
        return true;
      },
      rpc: () => true,
    },
    now: () => 0,
    toConnection: () => undefined,
    notice: () => undefined,
    permissions: { cancelAll: () => undefined, turnEnded: () => undefined },
    promptStarted: () => undefined,
    promptJoined: () => undefined,
    promptEnded: () => undefined,
    turnEnded: () => undefined,
    configOptions: () => undefined,
    deleted: () => undefined,
    deadlinesChanged: () => undefined,
  };
  return { machine: new SessionMachine(port, 1), table, sent };
}

function client(role: Role): ClientAttachment {
  return {
    connId: `conn-${role}`,
    keyId: `k-${role}`,
    user: role,
    role,
    attachedAt: 0,
    caps: { readTextFile: false, writeTextFile: false, terminal: false },
  };
}

function refusal(run: () => void): RpcError {
  try {
    run();
  } catch (error) {
    if (error instanceof RpcError) return error;
    throw error;
  }
  throw new Error("the request was not refused");
}

const PROMPT = { sessionId: "s1", prompt: [{ type: "text", text: "hi" }] };

describe("session machine: a request refused before it reaches the agent", () => {
  it("a watch-only client's prompt to a deleted session is refused for its role, not as not found", () => {
    const { machine, table, sent } = session();
    table.meta = undefined; // session/delete went ahead while the client's socket was still closing
    const error = refusal(() => machine.request(client("observer"), 1, AGENT_METHODS.sessionPrompt, PROMPT));
    expect(error.code).toBe(ErrorCode.notPermitted);
    expect(error.message).toMatch(/Your role \(observer\) may not send session\/prompt/);
    expect(sent).toEqual([]);
  });

  it("a watch-only client's prompt to a live session is refused for its role, and no turn starts", () => {
    const { machine, table, sent } = session();
    const error = refusal(() => machine.request(client("observer"), 1, AGENT_METHODS.sessionPrompt, PROMPT));
    expect(error.code).toBe(ErrorCode.notPermitted);
    expect(table.turn).toEqual({ state: "idle" });
    expect(sent).toEqual([]);
  });

  it("a client that may prompt gets -32002 naming the session when it was deleted", () => {
    const { machine, table, sent } = session();
    table.meta = undefined;
    const error = refusal(() => machine.request(client("approver"), 1, AGENT_METHODS.sessionPrompt, PROMPT));
    expect(error.code).toBe(ErrorCode.resourceNotFound);
    expect(error.message).toContain("s1");
    expect(sent).toEqual([]);
  });

  it("a watch-only client's session/cancel is dropped (no id to answer), a driver's reaches the agent", () => {
    const { machine, sent } = session();
    machine.notification(client("observer"), AGENT_METHODS.sessionCancel, { sessionId: "s1" });
    expect(sent).toEqual([]);
    machine.notification(client("approver"), AGENT_METHODS.sessionCancel, { sessionId: "s1" });
    expect(sent).toEqual([{ type: "notification", method: AGENT_METHODS.sessionCancel, params: { sessionId: "s1" } }]);
  });

  // The requests the gateway keeps (a held mode change, decision 0061) are admitted by the same method:
  // the shell (session-object.ts `fromClient`) asks `admit` before it hands them to mode-approvals.ts.
  it.each([HOLD_MODE_CHANGE, DECIDE_MODE_CHANGE])("%s: a watch-only client is refused for its role even in a deleted session", (method) => {
    const { machine, table, sent } = session();
    table.meta = undefined;
    const error = refusal(() => machine.admit(client("observer"), method, { sessionId: "s1" }));
    expect(error.code).toBe(ErrorCode.notPermitted);
    expect(sent).toEqual([]);
  });

  it.each([HOLD_MODE_CHANGE, DECIDE_MODE_CHANGE])("%s: a client whose role may send it gets -32002 in a deleted session", (method) => {
    const { machine, table } = session();
    const live = machine.admit(client("approver"), method, { sessionId: "s1" });
    expect(live.sessionId).toBe("s1");
    table.meta = undefined;
    const error = refusal(() => machine.admit(client("approver"), method, { sessionId: "s1" }));
    expect(error.code).toBe(ErrorCode.resourceNotFound);
    expect(error.message).toContain("s1");
  });

  // Decision 0067: a prompt while a turn runs is relayed only to an agent that queues prompts, up to the bound.
  it("an agent that does not queue prompts: a second prompt is refused turn_in_progress, as before, naming who started the turn", () => {
    const { machine, sent } = session();
    machine.request(client("approver"), 1, AGENT_METHODS.sessionPrompt, PROMPT);
    const error = refusal(() => machine.request(client("member"), 1, AGENT_METHODS.sessionPrompt, PROMPT));
    expect(error.code).toBe(ErrorCode.invalidRequest);
    expect(error.message).toBe(
      "A turn is already running in session s1 (started by approver); wait for it to end or send session/cancel. Prompts are not queued.",
    );
    expect(error.data).toEqual({ reason: "turn_in_progress" });
    expect(sent.filter((f) => f.type === "request")).toHaveLength(1);
  });

  it(`an agent that queues prompts: up to ${PROMPTS_IN_FLIGHT_LIMIT} in flight are relayed, the next is refused prompt_queue_full naming the bound`, () => {
    const { machine, table, sent } = session();
    table.meta = { sessionId: "s1", agent: "a", deadlineMs: 60_000, promptQueueing: true };
    for (let id = 1; id <= PROMPTS_IN_FLIGHT_LIMIT; id++)
      machine.request(client(id % 2 ? "approver" : "member"), id, AGENT_METHODS.sessionPrompt, PROMPT);
    expect(sent.filter((f) => f.type === "request")).toHaveLength(PROMPTS_IN_FLIGHT_LIMIT);
    expect(table.turn).toMatchObject({ state: "running", gwId: 1, prompts: [1, 2, 3, 4, 5], alsoPrompted: ["key:k-member"] });
    const error = refusal(() => machine.request(client("approver"), 9, AGENT_METHODS.sessionPrompt, PROMPT));
    expect(error.code).toBe(ErrorCode.invalidRequest);
    expect(error.message).toBe(
      `Session s1 has 5 prompts in flight, the most the gateway lets one session have (${PROMPTS_IN_FLIGHT_LIMIT}); wait for one to be answered, or send session/cancel.`,
    );
    expect(error.data).toEqual({ reason: "prompt_queue_full", limit: PROMPTS_IN_FLIGHT_LIMIT, inFlight: 5 });
    expect(sent.filter((f) => f.type === "request")).toHaveLength(PROMPTS_IN_FLIGHT_LIMIT);
  });

  it("an agent that queues prompts: a prompt while the turn is being cancelled is refused turn_in_progress, saying why", () => {
    const { machine, table, sent } = session();
    table.meta = { sessionId: "s1", agent: "a", deadlineMs: 60_000, promptQueueing: true };
    machine.request(client("approver"), 1, AGENT_METHODS.sessionPrompt, PROMPT);
    machine.notification(client("approver"), AGENT_METHODS.sessionCancel, { sessionId: "s1" });
    const error = refusal(() => machine.request(client("approver"), 2, AGENT_METHODS.sessionPrompt, PROMPT));
    expect(error.data).toEqual({ reason: "turn_in_progress" });
    expect(error.message).toMatch(/being cancelled, and a prompt joins a turn only while it runs/);
    expect(sent.filter((f) => f.type === "request")).toHaveLength(1);
  });
});
