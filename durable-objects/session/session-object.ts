// SessionObject: the Durable Object shell of one ACP session (one object per tenant + sessionId):
// each platform handler and RPC method restores what it needs and hands the event to the part that
// does the work (built in session-parts.ts): a socket joining to session-attach.ts, a client's frame
// (`fromClient`) to protocol/session-machine.ts (client requests, the turn, the order of everything
// sent to the agent) or protocol/permission-machine.ts (permission requests),
// the agent's batches to agent-link.ts, the alarm to session-deadlines.ts. All state is in SQLite
// (store.ts); every socket is hibernatable, so an evicted object comes back whole on the next event.
// The RPC argument and return types are in contract.ts.
//
// Traffic:  client ⇄ edge Worker ⇄ (WebSocket per connection) ⇄ SessionObject ⇄ (agent link: a WebSocket, or RPC) ⇄ AgentObject ⇄ agent

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../../core/env";
import type {
  ApprovalView,
  FromAgent,
  InitResult,
  LinkRefusal,
  ModeDecisionResultView,
  SessionContract,
  SessionInit,
  SessionRef,
  SessionSnapshot,
  WaitingRequest,
} from "./contract";
import { isEdgeLinkAttachment, isLinkAttachment } from "./agent-socket";
import { encodeLink, linkToSession } from "../../protocol/agent-link-wire";
import { clientOf, send, takeRing } from "./clients";
import { errorResponse, isRequest, isResponse, parseFrame, toRpcError } from "../../protocol/jsonrpc";
import { type ClientAttachment } from "../../protocol/session-wire";
import type { Answer } from "../../protocol/permission-machine";
import { permIdOfCopy } from "../../protocol/pending-permission";
import { DECIDE_MODE_CHANGE, HOLD_MODE_CHANGE } from "../../protocol/people/mode-approval";
import { sessionLog } from "./session-log";
import { splitName } from "../objects";
import { claim } from "./ownership";
import type { ResumedBy } from "./unasked-runs";
import type { ModeDecisionBy } from "./mode-approvals";
import type { Decision, ModeProposal } from "../../protocol/people/mode-approval";
import { sessionSnapshot, waitingRequests } from "./snapshot";
import { turnStateOf } from "./session-attach";
import { type SessionParts, sessionParts } from "./session-parts";
import type { SessionTesting } from "./session-testing";
import { stage, stageTimingFrom } from "../../protocol/stage-timing";
import { CLOSE, closeQuietly } from "../../core/close-codes";
import { testSeams } from "../../core/test-seam";
import type { Answerer } from "../../protocol/people/answering";
import type { StreamTurnState } from "../../protocol/turn-state";
import type { ReaderReport } from "../../protocol/unseen-lease";

const seams = testSeams<SessionObject, SessionTesting>("SessionObject");

/** A live instance's test seam (SessionTesting). */
export const sessionTesting = seams.of;

export class SessionObject extends DurableObject<Env> implements SessionContract {
  private readonly testing: SessionTesting;
  private readonly p: SessionParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    stageTimingFrom(env);
    this.p = sessionParts(ctx, env, () => this.testing);
    const { store, audits, turnWatch, machine, live, clients } = this.p;
    this.testing = {
      store,
      audits,
      idleAt: () => turnWatch.idleAt(store),
      heldAfterEdgeAnswer: () => machine.heldAfterEdgeAnswer,
      attached: () => clients.list().map((c) => c.connId),
    };
    seams.attach(this, this.testing);
    // What an earlier instance owed the index (it ended inside the window, or its write failed) is owed still.
    if (store.meta) live.resume();
  }

  // ── set-up (called by the AgentObject when the agent created or loaded the session) ──────────
  /** A session belongs to the agent that created it (ownership.ts): a session/new never re-initialises one, a session/load only its own. */
  init(meta: SessionInit, opening: "new" | "load" = "load"): InitResult {
    const ref = this.ref();
    // Only a stub made by name calls init, so the name is there; without it there is no one to be.
    if (!ref) return { ok: false, message: "the session object has no name" };
    return claim(this.p.store, ref, meta, opening);
  }

  exists(): boolean {
    return this.p.store.meta !== undefined;
  }

  /** Lifts the hold of a session stopped after its agent ran a tool call unasked (decision 0056); null: no such session. */
  resumeHeld(by: ResumedBy): { resumed: boolean } | null {
    if (!this.p.store.meta) return null;
    return { resumed: this.p.unasked.resume(by) };
  }

  /** A person decides a held mode change (mode-approvals.ts, decision 0061); null: no such session. */
  async decideModeChange(by: ModeDecisionBy, proposalId: string, decision: Decision): Promise<ModeDecisionResultView | null> {
    if (!this.p.store.meta) return null;
    const result = await this.p.modes.decide(by, proposalId, decision);
    if (result.ok) return result;
    const { code, message, data } = result.error;
    return { ok: false, code, message, gone: typeof data === "object" && data !== null && "gone" in data };
  }

  modeChangesWaiting(): ModeProposal[] | null {
    return this.p.store.meta ? this.p.modes.waiting() : null;
  }

  // ── a client attaches, or a link opens (session-attach.ts) ──────────────────────────────────
  override async fetch(request: Request): Promise<Response> {
    return this.p.attach.upgrade(request);
  }

  /** A message on the agent link: a batch of the agent's traffic (acked once applied), or the answer to a frame sent on it. */
  private onLinkMessage(ws: WebSocket, data: string | ArrayBuffer, ack = true): void {
    const message = typeof data === "string" ? linkToSession(data) : undefined;
    if (!message) return;
    if (message.t !== "batch") return this.p.agentSocket.answered(message);
    // SAFETY: batches come only from the AgentObject and the edge's agent connection, which send FromAgent items.
    this.fromAgentBatch(message.items as FromAgent[]);
    // Held by the output gate until what the batch wrote commits, exactly as an RPC's return.
    if (ack) ws.send(encodeLink({ t: "ack", n: message.n }));
  }

  // ── messages from a client (through the edge Worker, which already checked the frame) ────────
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const attached: unknown = ws.deserializeAttachment();
    const client = clientOf(attached);
    if (!client) {
      if (!isLinkAttachment(attached) && !isEdgeLinkAttachment(attached)) return;
      const hook = this.testing.onLinkMessage;
      if (hook) hook(ws, data, (ack) => this.onLinkMessage(ws, data, ack));
      else this.onLinkMessage(ws, data);
      return;
    }
    this.fromClient(ws, client, data);
  }

  /**
   * A client's frame, parsed once more (it arrives as text on a socket): a request or notification for
   * the agent to the session machine, an answer to a permission request's copy to the permission
   * machine, an answer to a routed fs/terminal request back to the agent, a held mode change (decision
   * 0061: held by the gateway, decided by a person, never sent as it is) to mode-approvals.ts once the
   * machine admits it. A request that fails is answered with its error, never dropped.
   */
  private fromClient(ws: WebSocket, client: ClientAttachment, data: string | ArrayBuffer): void {
    stage("session.answer", data);
    if (typeof data !== "string") return;
    const parsed = parseFrame(data);
    if (!parsed.ok) return void (parsed.reply && send(ws, JSON.stringify(parsed.reply)));
    const message = parsed.message;
    const { machine, permissions, agentRequests, modes } = this.p;
    try {
      if (isResponse(message)) {
        if (typeof message.id !== "number") return;
        const permId = permIdOfCopy(message.id);
        if (permId !== undefined) return permissions.answer(ws, client, permId, message as Answer);
        return agentRequests.answered(message.id, message as Answer);
      }
      if (!isRequest(message)) return machine.notification(client, message.method, "params" in message ? message.params : undefined);
      const { id, method, params } = message;
      if (method !== HOLD_MODE_CHANGE && method !== DECIDE_MODE_CHANGE) return machine.request(client, id, method, params);
      machine.admit(client, method, params);
      if (method === HOLD_MODE_CHANGE) modes.propose(client, id, params);
      else void modes.decideFor(ws, client, id, params);
    } catch (error) {
      if (isRequest(message))
        send(ws, JSON.stringify(errorResponse(message.id, toRpcError(error, "session", "Internal error in the session"))));
      else
        sessionLog(this.p.store).error(
          "session.client_message_failed",
          "a client's notification failed in the session",
          { unexpected: true },
          error,
        );
    }
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    this.socketGone(ws, code === CLOSE.detached);
    closeQuietly(ws, code === CLOSE.noStatus ? CLOSE.normal : code, "closed");
  }

  override webSocketError(ws: WebSocket): void {
    this.socketGone(ws);
  }

  /**
   * A client's socket gone detaches it, its stream kept for a resume (decision 0050), unless a resume
   * took it over on another socket; the agent link's gone fails what awaits an answer on it.
   */
  private socketGone(ws: WebSocket, letGo = false): void {
    const attached: unknown = ws.deserializeAttachment();
    const client = clientOf(attached);
    if (client) {
      if (this.p.attach.takenOver(ws)) return;
      const ring = takeRing(ws);
      // A client that let go on purpose (session/detach, decision 0054) has nothing to resume.
      const kept = ring !== undefined && !letGo;
      if (kept) this.p.clients.retained.retain(client, ring);
      this.detach(client.connId);
      // Kept: announced gone only when its stream lapses unresumed (decision 0060), by the alarm.
      if (this.p.store.meta) this.p.clients.departed(ws, client, this.p.store.meta.sessionId, kept);
      if (kept) this.p.deadlines.schedule();
    } else if (isLinkAttachment(attached)) this.p.agentSocket.lost(ws);
  }

  /** A client that leaves loses nothing: its copies go, the requests stay pending for the others. */
  private detach(connId: string): void {
    this.p.notifier.onDetach(this.p.clients.list().filter((c) => c.connId !== connId).length);
    this.p.agentRequests.clientGone(connId);
    this.p.permissions.clientsChanged(connId);
  }

  // The RPC methods below take no SessionRef: a stub reaches this object only by its name
  // `${tenantId}/${sessionId}`, so every call is for this tenant's session, and a call for another
  // tenant's is impossible by construction (it names another object). What stays checked is that the
  // session exists: without its meta (never initialised, or deleted) each method refuses to act.

  // ── the agent's traffic (agent-link.ts), delivered by the AgentObject ─────────────────────────
  fromAgentBatch(items: FromAgent[]): void {
    stage("session.in", items);
    this.p.agent.fromBatch(items);
  }

  // ── the tenant's rules (tenant-rules.ts), called by the session's rules shard ────────────────────
  /**
   * The rules changed (told after the change's fence, while requests wait on people; decision 0031):
   * drop older ones (tenant-rules.ts) and re-decide the waiting requests (a new rule may answer them).
   * True while requests wait: the shard keeps telling this session.
   */
  rulesChanged(generation: number): boolean {
    if (!this.p.store.meta) return false;
    const subscribed = this.p.rules.rulesChanged(generation);
    if (this.p.store.hasAsking()) this.p.permissions.reconsider();
    return subscribed;
  }

  /** The tenant's root revokes this session's clean leases (decision 0058): the answer is its open readers. */
  unseenRevoke(leaseId: number): ReaderReport {
    return this.p.rules.unseenRevoke(leaseId);
  }

  // ── approval links (worker/routes/approve.tsx; the link's token was checked at the edge) ──────
  approvalView(permId: number, linkId: string): Promise<ApprovalView> {
    return this.p.notifier.links.checkedView(permId, linkId);
  }

  answerFromLink(
    permId: number,
    linkId: string,
    optionId: string,
    reason?: string | null,
  ): Promise<LinkRefusal | { state: "answered_by_you" }> {
    return this.p.notifier.links.answer(permId, linkId, optionId, reason, (pending, option, by) =>
      this.p.permissions.answerFromLink(pending, option, by),
    );
  }

  // ── reads ─────────────────────────────────────────────────────────────────────────────────────
  snapshot(): SessionSnapshot | null {
    const meta = this.p.store.meta;
    return meta ? sessionSnapshot(meta, this.p.store, this.p.clients) : null;
  }

  /** The turn's state for a client resuming its stream: `promptRequestId` is its own id of the prompt, if it sent it. */
  turnState(connId: string): StreamTurnState | null {
    return turnStateOf(this.p.store, this.p.requests, connId);
  }

  /**
   * The requests people are asked here that wait on this person now ("waiting on you"): from the
   * session itself, so a request answered, withdrawn or lost with an agent is never listed, whatever
   * the index still says (asking wakes the object, which then publishes what the index is owed).
   */
  waitingOn(answerer: Answerer): { title: string | null; requests: WaitingRequest[] } | null {
    const meta = this.p.store.meta;
    if (!meta) return null;
    return { title: meta.title ?? null, requests: waitingRequests(meta, this.p.permissions.waitingOn(answerer)) };
  }

  /**
   * Who this session is: its name `${tenantId}/${sessionId}` (objects.ts `objectNames`, `splitName`), or, when workerd lost
   * the name (an alarm after a runtime restart), its stored meta.
   */
  private ref(): SessionRef | undefined {
    const named = splitName(this.ctx.id.name);
    if (named) return { tenantId: named.tenantId, sessionId: named.rest };
    const meta = this.p.store.meta;
    return meta ? { tenantId: meta.tenantId, sessionId: meta.sessionId } : undefined;
  }

  // ── the alarm (session-deadlines.ts) ──────────────────────────────────────────────────────────
  override async alarm(): Promise<void> {
    await this.p.deadlines.fire();
  }
}
