// The actions of the model-based fuzz: what clients and the agent can do to a live session, each as a
// fast-check command that acts on the real system, updates the reference model the same way, and
// ends with `settle`, which reconciles every frame every peer received against the model.

import fc from "fast-check";
import { TOOL_KINDS } from "../../protocol/tool-calls";
import {
  type LiveSession,
  type SessionModel,
  agentReconnects,
  attach,
  countFault,
  detach,
  eligible,
  referenceReduce,
  toolCallSent,
  resolve,
  resolveAll,
  restart,
  settle,
} from "./fuzz-session";

// SAFETY: generated payloads are plain JSON.
type Json = Record<string, any>;
type Command = fc.AsyncCommand<SessionModel, LiveSession>;

const nth = <T>(items: Iterable<T>, i: number): T | undefined => {
  const all = [...items];
  return all.length === 0 ? undefined : all[i % all.length];
};

abstract class Step implements Command {
  abstract check(m: Readonly<SessionModel>): boolean;
  abstract act(m: SessionModel, r: LiveSession): Promise<string | undefined>;
  abstract toString(): string;
  async run(m: SessionModel, r: LiveSession): Promise<void> {
    r.counters.steps++;
    const actor = await this.act(m, r);
    await settle(m, r, actor);
  }
}

// ── the agent ───────────────────────────────────────────────────────────────────────────────────

export class AgentUpdate extends Step {
  constructor(readonly update: Json) {
    super();
  }
  check = () => true;
  async act(m: SessionModel, r: LiveSession) {
    const n = ++m.stream;
    r.agent.peer.notify("session/update", { sessionId: r.sessionId, update: this.update, _meta: { fuzzN: n } });
    if (this.update.sessionUpdate === "tool_call" || this.update.sessionUpdate === "tool_call_update")
      toolCallSent(m, this.update, () => referenceReduce(m.table, this.update));
    return undefined;
  }
  toString = () => `AgentUpdate(${JSON.stringify(this.update)})`;
}

export class AgentAsks extends Step {
  constructor(readonly toolCall: Json) {
    super();
  }
  check = () => true;
  async act(m: SessionModel, r: LiveSession) {
    const perm = m.nextPerm++;
    const agentReqId = `perm-${perm}`;
    r.agent.peer.send({
      jsonrpc: "2.0",
      id: agentReqId,
      method: "session/request_permission",
      params: { sessionId: r.sessionId, toolCall: this.toolCall, options: OPTIONS, _meta: { fuzzPerm: perm } },
    });
    toolCallSent(m, this.toolCall, () => referenceReduce(m.table, this.toolCall));
    // Nothing may be approved outside a running turn (TC-11): answered cancelled at once, nobody asked.
    const toolCallId = typeof this.toolCall.toolCallId === "string" ? this.toolCall.toolCallId : undefined;
    if (m.turn.state === "running") m.pending.set(perm, { agentReqId, ...(toolCallId ? { toolCallId } : {}) });
    else m.agentDue.set(agentReqId, { kind: "cancelled" });
    return undefined;
  }
  toString = () => `AgentAsks(${JSON.stringify(this.toolCall)})`;
}

export class AgentEndsTurn extends Step {
  constructor(readonly how: "end_turn" | "cancelled" | "error") {
    super();
  }
  check = (m: Readonly<SessionModel>) => m.turn.state !== "idle";
  async act(m: SessionModel, r: LiveSession) {
    if (m.turn.state === "idle" || r.agentPromptId === undefined) throw new Error("no turn to end");
    if (this.how === "error")
      r.agent.peer.send({ jsonrpc: "2.0", id: r.agentPromptId, error: { code: -32800, message: "Request cancelled" } });
    else r.agent.peer.respond(r.agentPromptId, { stopReason: this.how });
    m.clients.get(m.turn.prompter)?.awaiting.set(m.turn.clientReqId, "now");
    resolveAll(m, { kind: "cancelled" });
    m.turn = { state: "idle" };
    r.agentPromptId = undefined;
    return undefined;
  }
  toString = () => `AgentEndsTurn(${this.how})`;
}

export class AgentWithdraws extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check = (m: Readonly<SessionModel>) => m.pending.size > 0;
  async act(m: SessionModel, r: LiveSession) {
    const perm = nth(m.pending.keys(), this.pick);
    const pending = perm === undefined ? undefined : m.pending.get(perm);
    if (perm === undefined || !pending) throw new Error("nothing pending");
    r.agent.peer.notify("$/cancel_request", { requestId: pending.agentReqId });
    resolve(m, perm, { kind: "withdrawn" });
    return undefined;
  }
  toString = () => `AgentWithdraws(${this.pick})`;
}

export class AgentReconnects extends Step {
  check = () => true;
  async act(m: SessionModel, r: LiveSession) {
    await agentReconnects(m, r);
    countFault(r.counters, "agent_drop_reconnect");
    return undefined;
  }
  toString = () => "AgentReconnects";
}

export class Restart extends Step {
  constructor(readonly which: "session" | "agent") {
    super();
  }
  check = () => true;
  async act(_m: SessionModel, r: LiveSession) {
    await restart(r, this.which);
    return undefined;
  }
  toString = () => `Restart(${this.which})`;
}

// ── clients ─────────────────────────────────────────────────────────────────────────────────────

const clientAt = (m: Readonly<SessionModel>, pick: number) => nth(m.clients.keys(), pick);

export class Prompt extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check = (m: Readonly<SessionModel>) => m.clients.size > 0;
  async act(m: SessionModel, r: LiveSession) {
    const name = clientAt(m, this.pick) ?? "";
    const client = r.clients.get(name);
    const cm = m.clients.get(name);
    if (!client || !cm) throw new Error("no client");
    const id = client.nextId++;
    client.peer.send({
      jsonrpc: "2.0",
      id,
      method: "session/prompt",
      params: { sessionId: r.sessionId, prompt: [{ type: "text", text: `p${id}` }] },
    });
    if (m.turn.state === "idle") {
      m.turn = { state: "running", prompter: name, clientReqId: id };
      cm.awaiting.set(id, "turn");
      m.promptsDue++;
    } else cm.awaiting.set(id, "now"); // refused: a turn is running
    return name;
  }
  toString = () => `Prompt(${this.pick})`;
}

export class SessionCancel extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check = (m: Readonly<SessionModel>) => m.clients.size > 0;
  async act(m: SessionModel, r: LiveSession) {
    const name = clientAt(m, this.pick) ?? "";
    r.clients.get(name)?.peer.notify("session/cancel", { sessionId: r.sessionId });
    resolveAll(m, { kind: "cancelled" });
    if (m.turn.state === "running") m.turn = { ...m.turn, state: "cancelling" };
    m.sessionCancelsDue++;
    return name;
  }
  toString = () => `SessionCancel(${this.pick})`;
}

export class ClientCancelsRequest extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check = (m: Readonly<SessionModel>) => m.clients.size > 0;
  async act(m: SessionModel, r: LiveSession) {
    const name = clientAt(m, this.pick) ?? "";
    const ownsTurn = m.turn.state !== "idle" && m.turn.prompter === name;
    const requestId = m.turn.state !== "idle" && ownsTurn ? m.turn.clientReqId : 999_999;
    r.clients.get(name)?.peer.notify("$/cancel_request", { requestId });
    if (ownsTurn) m.cancelRequestsDue++;
    return name;
  }
  toString = () => `ClientCancelsRequest(${this.pick})`;
}

export type AnswerHow = "allow" | "reject" | "bad_option" | "bad_outcome" | "declined" | "duplicate";

export class Answer extends Step {
  constructor(
    readonly pick: number,
    readonly permPick: number,
    readonly how: AnswerHow,
  ) {
    super();
  }
  check = (m: Readonly<SessionModel>) => [...m.clients.values()].some((c) => [...m.pending.keys()].some((p) => eligible(c, p)));
  async act(m: SessionModel, r: LiveSession) {
    const holders = [...m.clients].filter(([, c]) => [...m.pending.keys()].some((p) => eligible(c, p)));
    const [name, cm] = nth(holders, this.pick) ?? [];
    const perm = cm
      ? nth(
          [...m.pending.keys()].filter((p) => eligible(cm, p)),
          this.permPick,
        )
      : undefined;
    const client = r.clients.get(name ?? "");
    const copyId = perm === undefined ? undefined : client?.copies.get(perm);
    if (!name || !cm || perm === undefined || !client || copyId === undefined) throw new Error("no copy to answer");
    client.copies.delete(perm);
    client.answeredIds.add(copyId);
    const selected = (optionId: string) => ({ outcome: { outcome: "selected", optionId } });
    switch (this.how) {
      case "allow":
      case "reject":
        client.peer.respond(copyId, selected(this.how));
        resolve(m, perm, { kind: "selected", optionIds: [this.how] });
        break;
      case "duplicate":
        client.peer.respond(copyId, selected("reject"));
        client.peer.respond(copyId, selected("allow"));
        client.peer.respond(copyId, selected("reject"));
        resolve(m, perm, { kind: "selected", optionIds: ["reject"] });
        break;
      case "bad_option":
      case "bad_outcome":
        client.peer.respond(copyId, this.how === "bad_option" ? selected("yolo") : { outcome: { outcome: "approved", optionId: "allow" } });
        cm.standing.set(perm, (Number(cm.standing.get(perm)) || 0) + 1);
        cm.refusalsDue++;
        break;
      case "declined":
        client.peer.send({ jsonrpc: "2.0", id: copyId, error: { code: -32800, message: "dialog closed" } });
        cm.standing.set(perm, "declined");
        break;
    }
    return name;
  }
  toString = () => `Answer(${this.pick}, ${this.permPick}, ${this.how})`;
}

/** Two clients answer the same request in the same instant: exactly one wins, both are told. */
export class SameInstant extends Step {
  constructor(readonly permPick: number) {
    super();
  }
  private pair(m: Readonly<SessionModel>) {
    for (const perm of [...m.pending.keys()].slice(this.permPick % Math.max(1, m.pending.size)).concat([...m.pending.keys()])) {
      const holders = [...m.clients].filter(([, c]) => eligible(c, perm)).map(([name]) => name);
      if (holders.length >= 2) return { perm, a: holders[0] ?? "", b: holders[1] ?? "" };
    }
    return undefined;
  }
  check = (m: Readonly<SessionModel>) => this.pair(m) !== undefined;
  async act(m: SessionModel, r: LiveSession) {
    const pair = this.pair(m);
    const a = r.clients.get(pair?.a ?? "");
    const b = r.clients.get(pair?.b ?? "");
    const idA = pair ? a?.copies.get(pair.perm) : undefined;
    const idB = pair ? b?.copies.get(pair.perm) : undefined;
    if (!pair || !a || !b || idA === undefined || idB === undefined) throw new Error("no pair");
    a.peer.respond(idA, { outcome: { outcome: "selected", optionId: "allow" } });
    b.peer.respond(idB, { outcome: { outcome: "selected", optionId: "reject" } });
    for (const [c, id] of [
      [a, idA],
      [b, idB],
    ] as const) {
      c.copies.delete(pair.perm);
      c.answeredIds.add(id);
    }
    resolve(m, pair.perm, { kind: "selected", optionIds: ["allow", "reject"] });
    countFault(r.counters, "same_instant_answers");
    return pair.a;
  }
  toString = () => `SameInstant(${this.permPick})`;
}

/** An answer to an id this client no longer holds (answered, withdrawn) or never held (another client's). */
export class StrayAnswer extends Step {
  constructor(
    readonly pick: number,
    readonly idPick: number,
  ) {
    super();
  }
  private target(m: Readonly<SessionModel>, r: LiveSession) {
    const name = clientAt(m, this.pick);
    const client = r.clients.get(name ?? "");
    if (!name || !client) return undefined;
    const live = new Set(client.copies.values());
    const others = [...r.clients.values()].flatMap((c) => [...c.copies.values(), ...c.seenIds]);
    const ids = [...client.seenIds, ...others].filter((id) => !live.has(id));
    const id = nth(ids, this.idPick);
    return id === undefined ? undefined : { name, client, id };
  }
  check = (m: Readonly<SessionModel>) => m.clients.size > 0 && m.nextPerm > 0;
  async act(m: SessionModel, r: LiveSession) {
    const target = this.target(m, r);
    if (!target) return undefined;
    target.client.peer.respond(target.id, { outcome: { outcome: "selected", optionId: "allow" } });
    countFault(r.counters, "stray_answer");
    return target.name;
  }
  toString = () => `StrayAnswer(${this.pick}, ${this.idPick})`;
}

export class Attach extends Step {
  constructor(readonly second: boolean) {
    super();
  }
  check = (m: Readonly<SessionModel>) => m.clients.size < 4;
  async act(m: SessionModel, r: LiveSession) {
    return attach(m, r, this.second ? r.t.clientKey2 : r.t.clientKey);
  }
  toString = () => `Attach(${this.second ? "bob" : "alice"})`;
}

export class Detach extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check = (m: Readonly<SessionModel>) => m.clients.size > 0;
  async act(m: SessionModel, r: LiveSession) {
    await detach(m, r, clientAt(m, this.pick) ?? "");
    countFault(r.counters, "client_detach");
    return undefined;
  }
  toString = () => `Detach(${this.pick})`;
}

// ── generators ──────────────────────────────────────────────────────────────────────────────────

const OPTIONS = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/** A field that is omitted, null or a value: the three shapes the reducer must tell apart. */
const field = <T>(value: fc.Arbitrary<T>) => fc.oneof(fc.constant(undefined), fc.constant(null), value);
const json = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.integer({ min: 0, max: 9 }),
  fc.boolean(),
  fc.constant([1, "a"]),
  fc.record({ command: fc.constantFrom("ls", "rm -rf /", "git push") }),
);
const toolCallFields = {
  toolCallId: fc.oneof({ weight: 12, arbitrary: fc.constantFrom("t1", "t2", "t3") }, fc.constantFrom("", undefined)),
  title: field(fc.constantFrom("Edit a.ts", "Run ls", "")),
  name: field(fc.constantFrom("edit", "bash")),
  kind: field(fc.constantFrom(...TOOL_KINDS, "frobnicate")),
  status: field(fc.constantFrom("pending", "in_progress", "completed", "failed", "paused")),
  content: field(
    fc.array(
      fc.oneof(
        fc.record({ type: fc.constant("content"), content: fc.record({ type: fc.constant("text"), text: fc.string({ maxLength: 5 }) }) }),
        fc.record({
          type: fc.constant("diff"),
          path: fc.constant("/p/a.ts"),
          oldText: fc.constant(null),
          newText: fc.string({ maxLength: 5 }),
        }),
      ),
      { maxLength: 2 },
    ),
  ),
  locations: field(fc.array(fc.record({ path: fc.constantFrom("/p/a.ts", "/p/b.ts"), line: fc.nat(99) }), { maxLength: 2 })),
  rawInput: field(json),
  rawOutput: field(json),
  _meta: field(fc.record({ by: fc.constantFrom("x", "y") })),
};
const withoutUndefined = (o: Json): Json => JSON.parse(JSON.stringify(o)) as Json;
const toolCall = fc.record(toolCallFields, { requiredKeys: ["toolCallId"] }).map(withoutUndefined);
// Keep explicit nulls (JSON.stringify keeps them) but drop undefined keys.
const update = fc.oneof(
  { weight: 4, arbitrary: toolCall.map((c) => ({ sessionUpdate: "tool_call_update", ...c })) },
  { weight: 3, arbitrary: toolCall.map((c) => ({ sessionUpdate: "tool_call", ...c })) },
  { weight: 1, arbitrary: fc.constant({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } }) },
  { weight: 1, arbitrary: toolCall.map((c) => ({ sessionUpdate: "future_kind_from_v3", ...c })) },
);

const pick = fc.nat(7);
const answer = fc
  .tuple(pick, pick, fc.constantFrom<AnswerHow>("allow", "reject", "bad_option", "bad_outcome", "declined", "duplicate"))
  .map(([a, b, h]) => new Answer(a, b, h) as Command);
const asks = toolCall.map((c) => new AgentAsks(c) as Command);
const prompt = pick.map((p) => new Prompt(p) as Command);
/** fc.commands picks uniformly: the common actions are listed more than once to weigh them. */
export const commands = [
  answer,
  answer,
  asks,
  prompt,
  update.map((u) => new AgentUpdate(u) as Command),
  toolCall.map((c) => new AgentAsks(c) as Command),
  fc.constantFrom("end_turn", "cancelled", "error").map((h) => new AgentEndsTurn(h as "end_turn") as Command),
  pick.map((p) => new AgentWithdraws(p) as Command),
  fc.constant(new AgentReconnects() as Command),
  fc.constantFrom("session", "agent").map((w) => new Restart(w as "session") as Command),
  pick.map((p) => new Prompt(p) as Command),
  pick.map((p) => new SessionCancel(p) as Command),
  pick.map((p) => new ClientCancelsRequest(p) as Command),
  fc
    .tuple(pick, pick, fc.constantFrom<AnswerHow>("allow", "reject", "bad_option", "bad_outcome", "declined", "duplicate"))
    .map(([a, b, h]) => new Answer(a, b, h) as Command),
  pick.map((p) => new SameInstant(p) as Command),
  fc.tuple(pick, pick).map(([a, b]) => new StrayAnswer(a, b) as Command),
  fc.boolean().map((b) => new Attach(b) as Command),
  pick.map((p) => new Detach(p) as Command),
];
