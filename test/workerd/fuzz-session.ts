// The model-based fuzz of a live session: a plain reference model of one session (turn, pending
// permission requests, tool-call table, the stream every client must see) and the real system
// (the Worker, the SessionObject, the AgentObject, D1) driven over real WebSockets by scripted
// clients and a scripted agent. Every step ends with `settle`: barriers through both directions of
// the relay, then every frame each peer received is reconciled against the model, so a lost, extra,
// duplicated or misrouted message fails the step that caused it.

import { operationHash } from "../../protocol/frozen-operation";
import { env, evictDurableObject } from "cloudflare:test";
import { expect } from "vitest";
import { type Peer, type ScriptedAgent, type SeededTenant, connect, dialInAgent, seedTenant } from "./helpers";
import type { JsonRpcId } from "../../protocol/jsonrpc";
import { objects } from "../../durable-objects/objects";

// SAFETY: frames are arbitrary JSON; the reconciler checks every field it reads.
type Json = Record<string, any>;

/** What a run counted; summed by scripts/reliability-summary.ts from the `RELIABILITY ` lines. */
export interface FuzzCounters {
  sequences: number;
  steps: number;
  invariantsChecked: number;
  faults: Record<string, number>;
  requestsAnswered: number;
  requestsLostOrTwice: number;
  stuckTurns: number;
}

export function newCounters(): FuzzCounters {
  return { sequences: 0, steps: 0, invariantsChecked: 0, faults: {}, requestsAnswered: 0, requestsLostOrTwice: 0, stuckTurns: 0 };
}

export function countFault(counters: FuzzCounters, kind: string): void {
  counters.faults[kind] = (counters.faults[kind] ?? 0) + 1;
}

// ── the reference model ─────────────────────────────────────────────────────────────────────────

/** An independent tool-call reducer (tool-calls-spec): omitted/null keep, arrays replace, upsert, new rows pending. */
export function referenceReduce(table: Map<string, Json>, patch: unknown): void {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return;
  const p = patch as Json;
  if (typeof p.toolCallId !== "string" || p.toolCallId === "") return;
  const row: Json = { ...(table.get(p.toolCallId) ?? { toolCallId: p.toolCallId, status: "pending" }) };
  for (const key of Object.keys(p)) {
    if (key !== "sessionUpdate" && p[key] !== null && p[key] !== undefined) row[key] = p[key];
  }
  table.set(p.toolCallId, row);
}

/**
 * The agent sent a tool call for `toolCallId` (an update, or another request naming it): a request
 * waiting on it whose operation changed is withdrawn and asked again as a new request (decision 0040),
 * so every client's standing on it (a refused or declined answer) starts afresh.
 */
export function toolCallSent(model: SessionModel, patch: unknown, apply: () => void): void {
  const id = typeof patch === "object" && patch !== null ? (patch as Json).toolCallId : undefined;
  const before = typeof id === "string" ? model.table.get(id) : undefined;
  apply();
  if (typeof id !== "string" || before === undefined) return;
  if (operationHash(before) === operationHash(model.table.get(id) ?? {})) return;
  for (const [perm, pending] of model.pending)
    if (pending.toolCallId === id) for (const c of model.clients.values()) c.standing.delete(perm);
}

type Expected = { kind: "selected"; optionIds: string[] } | { kind: "cancelled" } | { kind: "withdrawn" };

interface ClientModel {
  /** Per pending request: how often this client's answer was refused, or "declined" if it answered with an error. */
  standing: Map<number, number | "declined">;
  /** Responses this client awaits: its request id → "turn" (answered when the turn ends) or "now" (answered in this step). */
  awaiting: Map<number, "turn" | "now">;
  refusalsDue: number;
  resolvedNoticesDue: number;
}

export interface SessionModel {
  turn: { state: "idle" } | { state: "running" | "cancelling"; prompter: string; clientReqId: number };
  /** Pending permission requests by their fuzz number. */
  pending: Map<number, { agentReqId: string; toolCallId?: string }>;
  /** Answers the agent must receive in this step, by its request id. */
  agentDue: Map<string, Expected>;
  promptsDue: number;
  sessionCancelsDue: number;
  cancelRequestsDue: number;
  stream: number;
  table: Map<string, Json>;
  clients: Map<string, ClientModel>;
  nextPerm: number;
  nextClient: number;
}

// ── the real system ─────────────────────────────────────────────────────────────────────────────

interface LiveClient {
  peer: Peer;
  /** Live copies this client holds: fuzz number → the id the client received. */
  copies: Map<number, number>;
  /** Every permission-request id it ever received, and those it answered (late answers use them). */
  seenIds: number[];
  answeredIds: Set<number>;
  /** The stream numbers it received, in order. */
  stream: number[];
  nextId: number;
}

export interface LiveSession {
  t: SeededTenant;
  agent: ScriptedAgent;
  sessionId: string;
  agentPromptId: JsonRpcId | undefined;
  clients: Map<string, LiveClient>;
  /** A second tenant whose agent and client must never see anything of this session. */
  stranger: { agent: ScriptedAgent; client: Peer };
  counters: FuzzCounters;
}

export interface Fuzz {
  model: SessionModel;
  real: LiveSession;
}

function newClientModel(): ClientModel {
  return { standing: new Map(), awaiting: new Map(), refusalsDue: 0, resolvedNoticesDue: 0 };
}

function newLiveClient(peer: Peer, firstId: number): LiveClient {
  return { peer, copies: new Map(), seenIds: [], answeredIds: new Set(), stream: [], nextId: firstId };
}

export async function startSession(counters: FuzzCounters): Promise<Fuzz> {
  // The model knows an unasked run as told (decision 0046); stopping the session on one (the default, decision 0056) is unasked-runs.test.ts's.
  const [t, other] = await Promise.all([seedTenant({ unaskedRuns: "tell" }), seedTenant()]);
  const agent = await dialInAgent(t);
  const client = await connect(`/acp?agent=${agent.name}`, t.clientKey);
  await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} }, 1);
  const created = client.request("session/new", { cwd: "/projects/demo", mcpServers: [] }, 2);
  const sessionId = await agent.acceptNewSession();
  expect((await created).result?.sessionId).toBe(sessionId);

  const strangerAgent = await dialInAgent(other);
  const strangerClient = await connect(`/acp?agent=${strangerAgent.name}`, other.clientKey);
  await strangerClient.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const load = await strangerClient.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
  expect(load.error, "another tenant loaded this session").toBeDefined();

  const model: SessionModel = {
    turn: { state: "idle" },
    pending: new Map(),
    agentDue: new Map(),
    promptsDue: 0,
    sessionCancelsDue: 0,
    cancelRequestsDue: 0,
    stream: 0,
    table: new Map(),
    clients: new Map([["c0", newClientModel()]]),
    nextPerm: 0,
    nextClient: 1,
  };
  const real: LiveSession = {
    t,
    agent,
    sessionId,
    agentPromptId: undefined,
    clients: new Map([["c0", newLiveClient(client, 10)]]),
    stranger: { agent: strangerAgent, client: strangerClient },
    counters,
  };
  return { model, real };
}

export async function attach(model: SessionModel, real: LiveSession, key: string): Promise<string> {
  const name = `c${model.nextClient++}`;
  const peer = await connect(`/acp?agent=${real.agent.name}`, key);
  await peer.request("initialize", { protocolVersion: 1, clientCapabilities: {} }, 1);
  const loaded = await peer.request("session/load", { sessionId: real.sessionId, cwd: "/projects/demo", mcpServers: [] }, 2);
  expect(loaded.error, `session/load failed: ${JSON.stringify(loaded.error)}`).toBeUndefined();
  model.clients.set(name, newClientModel());
  real.clients.set(name, newLiveClient(peer, 10));
  return name;
}

export async function detach(model: SessionModel, real: LiveSession, name: string): Promise<void> {
  const client = real.clients.get(name);
  if (!client) return;
  client.peer.close();
  await client.peer.closed;
  model.clients.delete(name);
  real.clients.delete(name);
}

/** The agent's connection drops; a new one dials in. Nothing it asked can be answered any more. */
export async function agentReconnects(model: SessionModel, real: LiveSession): Promise<void> {
  real.agent.peer.close();
  await real.agent.peer.closed;
  model.pending.clear();
  for (const c of model.clients.values()) c.standing.clear();
  if (model.turn.state !== "idle") {
    const prompter = model.clients.get(model.turn.prompter);
    if (prompter) prompter.awaiting.set(model.turn.clientReqId, "now");
    model.turn = { state: "idle" };
  }
  real.agentPromptId = undefined;
  real.agent = await dialInAgent(real.t, real.agent.name);
}

export async function restart(real: LiveSession, which: "session" | "agent"): Promise<void> {
  const stub =
    which === "session" ? objects.session(env, real.t.tenantId, real.sessionId) : objects.agent(env, real.t.tenantId, real.agent.name);
  await evictDurableObject(stub).catch((error: unknown) => {
    if (!String(error).includes("not currently running")) throw error; // not running: as good as restarted
  });
  countFault(real.counters, `${which}_restart`);
}

// ── model transitions shared by several commands ────────────────────────────────────────────────

/** A request resolved through the session's resolvePermission: every attached client is told. */
export function resolve(model: SessionModel, perm: number, expected: Expected): void {
  const pending = model.pending.get(perm);
  if (!pending) return;
  model.pending.delete(perm);
  model.agentDue.set(pending.agentReqId, expected);
  for (const c of model.clients.values()) {
    c.standing.delete(perm);
    if (expected.kind !== "withdrawn") c.resolvedNoticesDue++;
  }
}

export function resolveAll(model: SessionModel, expected: Expected): void {
  for (const perm of [...model.pending.keys()]) resolve(model, perm, expected);
}

/** Whether a client is expected to hold a live copy of a pending request. */
export function eligible(c: ClientModel, perm: number): boolean {
  const standing = c.standing.get(perm) ?? 0;
  return standing !== "declined" && standing < 4;
}

// ── settle: barriers, then reconcile everything every peer received ─────────────────────────────

async function barrierThrough(real: LiveSession, client: LiveClient): Promise<void> {
  const marker = crypto.randomUUID();
  client.peer.notify("_test/barrier", { sessionId: real.sessionId, marker });
  await real.agent.peer.next((m) => m.method === "_test/barrier" && m.params?.marker === marker);
}

/**
 * A round trip agent → session → agent that nobody can serve (no client is attached): the session
 * refuses it at once, and since it handles the agent's frames in order, everything the agent sent
 * before it has been applied when the refusal arrives.
 */
async function agentBarrier(real: LiveSession): Promise<void> {
  const id = `barrier-${crypto.randomUUID()}`;
  real.agent.peer.send({ jsonrpc: "2.0", id, method: "fs/read_text_file", params: { sessionId: real.sessionId, path: "/barrier" } });
  await real.agent.peer.next((m) => m.id === id && "error" in m);
}

export async function settle(model: SessionModel, real: LiveSession, actor?: string): Promise<void> {
  // With nobody attached, an observer attaches for the check and leaves again (it sees history too).
  let observer: string | undefined;
  if (real.clients.size === 0) {
    // What the agent sent last (a turn's end, a permission request) must reach the session before
    // the observer attaches, or the observer sees a resolution the model placed before its attach.
    await agentBarrier(real);
    observer = await attach(model, real, real.t.clientKey);
  }
  const first = real.clients.get(actor ?? "") ?? [...real.clients.values()][0];
  if (!first) throw new Error("no client to send a barrier");
  await barrierThrough(real, first);
  const n = ++model.stream;
  real.agent.peer.notify("_test/mark", { sessionId: real.sessionId, _meta: { fuzzN: n } });
  await Promise.all([...real.clients.values()].map((c) => c.peer.next((m) => m.method === "_test/mark" && m.params?._meta?.fuzzN === n)));
  await barrierThrough(real, first);

  for (const [name, client] of real.clients) await reconcileClient(model, real, name, client, n);
  await reconcileAgent(model, real);
  await checkSnapshot(model, real);
  expect(real.stranger.agent.peer.unclaimed(), "the other tenant's agent saw something").toEqual([]);
  expect(real.stranger.client.unclaimed(), "the other tenant's client saw something").toEqual([]);
  real.counters.invariantsChecked += 2;
  if (observer) await detach(model, real, observer);
}

async function drain(peer: Peer): Promise<Json[]> {
  const all = peer.unclaimed();
  for (let i = 0; i < all.length; i++) await peer.next();
  return all;
}

async function reconcileClient(model: SessionModel, real: LiveSession, name: string, client: LiveClient, mark: number): Promise<void> {
  const cm = model.clients.get(name);
  if (!cm) throw new Error(`client ${name} is not in the model`);
  const check = (ok: boolean, what: string, m?: Json) => {
    real.counters.invariantsChecked++;
    if (!ok) throw new Error(`${name}: ${what}${m ? `: ${JSON.stringify(m).slice(0, 600)}` : ""}`);
  };
  for (const m of await drain(client.peer)) {
    if (m.method === "session/update") {
      if (m.params?._meta?.acpGateway?.synthesized) continue; // another client's prompt, echoed
      const n = m.params?._meta?.fuzzN;
      check(typeof n === "number", "an update nobody sent", m);
      client.stream.push(n);
    } else if (m.method === "_test/mark") {
      client.stream.push(m.params._meta.fuzzN);
    } else if (m.method === "session/request_permission") {
      const perm = m.params?._meta?.fuzzPerm;
      check(typeof perm === "number" && perm < model.nextPerm, "a permission request the agent never sent", m);
      check(!client.copies.has(perm), `a second live copy of permission request ${perm}`, m);
      client.copies.set(perm, m.id);
      client.seenIds.push(m.id);
    } else if (m.method === "$/cancel_request") {
      const entry = [...client.copies].find(([, id]) => id === m.params?.requestId);
      check(entry !== undefined, "a withdrawal of a request it does not hold", m);
      if (entry) client.copies.delete(entry[0]);
    } else if (m.method === "_acp_gateway/permission_resolved") {
      // A replayed one (session/load) is history, a request resolved before this client attached
      // (decision 0048): it carries the request it resolved, and is no live notice.
      if (m.params?.replayed === true) check(Array.isArray(m.params?.request?.options), "a replayed resolution without its request", m);
      else cm.resolvedNoticesDue--;
    } else if (m.method === "_acp_gateway/answered_by_gateway") {
      // A request outside a turn, answered `cancelled` by the gateway, is told to every client (decision 0042).
      check(
        m.params?.agentGot?.outcome?.outcome === "cancelled" && ["outside_turn", "after_cancel"].includes(m.params?.reason),
        "a report of a request the gateway did not answer cancelled by itself",
        m,
      );
    } else if (m.method === "_acp_gateway/operation_changed") {
      // The agent changed a waiting request's operation (an update of its tool call): its copies were
      // withdrawn above and it is asked again under the same request (decision 0040).
      check(
        typeof m.params?.toolCallId === "string" && Array.isArray(m.params?.changed) && m.params.changed.length > 0,
        "a change of operation that names no tool call or no field",
        m,
      );
    } else if (m.method === "_acp_gateway/ran_unasked") {
      // A tool call the agent reported finished without asking (decision 0046): told to every client.
      check(
        typeof m.params?.toolCallId === "string" && Array.isArray(m.params?.changes) && m.params.changes.length > 0,
        "a report of a tool call run unasked that names no tool call or no change",
        m,
      );
      // Judged on the kind the report names, the one the gateway saw when the run was reported: the
      // agent may re-kind the call later (to `read`), which un-runs nothing (stop 46's counterexample).
      check(!["read", "search", "think"].includes(m.params?.kind), "a read-only tool call reported as a change", m);
    } else if (m.method === "_acp_gateway/unseen_changes") {
      // What the agent changed unseen, told beside a request people are asked (decision 0046).
      check(typeof m.params?.unseen?.message === "string" && m.params.unseen.total > 0, "an empty report of unseen changes", m);
    } else if (m.method === "_acp_gateway/turn_ended") {
      // Announced when the gateway ends a turn (agent gone, deadline); the prompt's answer is checked below.
    } else if (!("method" in m) && m.id === null) {
      check(cm.refusalsDue > 0 && m.error?.code === -32602, "an error nobody provoked", m);
      cm.refusalsDue--;
    } else if (!("method" in m)) {
      const due = cm.awaiting.get(m.id);
      check(
        due === "now",
        due === "turn" ? "an answer to a prompt whose turn has not ended" : "an answer to no request or a second answer",
        m,
      );
      cm.awaiting.delete(m.id);
      real.counters.requestsAnswered++;
    } else {
      check(false, "an unexpected message", m);
    }
  }
  client.stream.push(mark); // claimed by settle's wait, after everything drained above
  // Copies arrive after the rules were consulted (asynchronously): wait for those still due.
  for (const perm of model.pending.keys()) {
    if (!eligible(cm, perm) || client.copies.has(perm)) continue;
    const copy = await client.peer.next((m) => m.method === "session/request_permission" && m.params?._meta?.fuzzPerm === perm);
    client.copies.set(perm, copy.id);
    client.seenIds.push(copy.id);
  }
  for (const perm of client.copies.keys())
    check(model.pending.has(perm) && eligible(cm, perm), `holds a copy of ${perm}, resolved or refused`);
  check(
    [...cm.awaiting.values()].every((d) => d === "turn"),
    `requests left unanswered: ${JSON.stringify([...cm.awaiting])}`,
  );
  check(cm.refusalsDue === 0, `refusals not received: ${cm.refusalsDue}`);
  check(cm.resolvedNoticesDue === 0, `permission_resolved notices off by ${cm.resolvedNoticesDue}`);
  const expected = Array.from({ length: model.stream }, (_, i) => i + 1);
  check(JSON.stringify(client.stream) === JSON.stringify(expected), `stream has a gap or a duplicate: ${client.stream.join(",")}`);
}

async function reconcileAgent(model: SessionModel, real: LiveSession): Promise<void> {
  const check = (ok: boolean, what: string, m?: Json) => {
    real.counters.invariantsChecked++;
    if (!ok) {
      if (what.includes("answer")) real.counters.requestsLostOrTwice++;
      throw new Error(`agent: ${what}${m ? `: ${JSON.stringify(m).slice(0, 600)}` : ""}`);
    }
  };
  const all = await drain(real.agent.peer);
  for (const m of all) {
    if (m.method === "session/prompt") {
      check(model.promptsDue > 0, "a prompt nobody sent", m);
      model.promptsDue--;
      real.agentPromptId = m.id;
    } else if (m.method === "session/cancel") {
      check(model.sessionCancelsDue > 0, "a session/cancel nobody sent", m);
      model.sessionCancelsDue--;
    } else if (m.method === "$/cancel_request") {
      check(model.cancelRequestsDue > 0 && m.params?.requestId === real.agentPromptId, "a $/cancel_request nobody sent", m);
      model.cancelRequestsDue--;
    } else if (!("method" in m)) {
      const due = model.agentDue.get(m.id);
      check(due !== undefined, "an answer to a request that is not due one (answered twice?)", m);
      model.agentDue.delete(m.id);
      real.counters.requestsAnswered++;
      if (due?.kind === "selected") {
        check(m.result?.outcome?.outcome === "selected" && due.optionIds.includes(m.result.outcome.optionId), `answer ${due.optionIds}`, m);
      } else if (due?.kind === "cancelled") {
        check(JSON.stringify(m.result) === JSON.stringify({ outcome: { outcome: "cancelled" } }), "answer cancelled", m);
      } else {
        check(m.error?.code === -32800, "answer -32800 to a withdrawn request", m);
      }
    } else {
      check(false, "an unexpected message", m);
    }
  }
  check(model.agentDue.size === 0, `requests lost, never answered: ${[...model.agentDue.keys()].join(", ")}`);
  check(model.promptsDue === 0 && model.sessionCancelsDue === 0 && model.cancelRequestsDue === 0, "messages to the agent lost");
}

async function checkSnapshot(model: SessionModel, real: LiveSession): Promise<void> {
  const stub = objects.session(env, real.t.tenantId, real.sessionId);
  const snapshot = await stub.snapshot();
  const table = Object.fromEntries((snapshot?.toolCalls ?? []).map((row) => [(row as Json).toolCallId, row]));
  expect(table, "tool-call table differs from the reference reducer").toEqual(Object.fromEntries(model.table));
  expect(snapshot?.pendingPermissions.length, "pending requests").toBe(model.pending.size);
  expect(snapshot?.turn.state, "turn state").toBe(model.turn.state);
  real.counters.invariantsChecked += 3;
}

/** Ends the run: the turn is finished, nothing may be left waiting, no turn stuck. */
export async function finish(model: SessionModel, real: LiveSession): Promise<void> {
  if (model.turn.state !== "idle" && real.agentPromptId !== undefined) {
    const prompter = model.clients.get(model.turn.prompter);
    if (prompter) prompter.awaiting.set(model.turn.clientReqId, "now");
    resolveAll(model, { kind: "cancelled" });
    model.turn = { state: "idle" };
    real.agent.peer.respond(real.agentPromptId, { stopReason: "end_turn" });
    await settle(model, real);
  }
  const stub = objects.session(env, real.t.tenantId, real.sessionId);
  const snapshot = await stub.snapshot();
  if (snapshot?.turn.state !== "idle") real.counters.stuckTurns++;
  expect(snapshot?.turn.state, "a turn is stuck").toBe("idle");
  for (const c of real.clients.values()) c.peer.close();
  real.agent.peer.close();
  real.stranger.agent.peer.close();
  real.stranger.client.close();
}
