// SessionObject: the authority for one ACP session (one object per tenant + sessionId).
// It owns the tool-call table, the event log, the pending permission requests with their deadlines,
// the turn state and the attached clients. All of it is in SQLite (store.ts), and every socket is
// hibernatable, so an evicted object comes back whole on the next event.
//
// Traffic:  client ⇄ edge Worker ⇄ (WebSocket per connection) ⇄ SessionObject ⇄ (RPC) ⇄ AgentObject ⇄ agent

import type { AuditEntry } from "../../db/queries/audit";
import { touchSession } from "../../db/queries/sessions";
import { DurableObject } from "cloudflare:workers";
import {
  type JsonRpcId,
  type Message,
  RpcError,
  errorResponse,
  isObject,
  isRequest,
  isResponse,
  parseFrame,
  resultResponse,
  toRpcError,
} from "../../protocol/jsonrpc";
import { AGENT_METHODS, CANCEL_REQUEST, CLIENT_METHODS, GATEWAY_NOTIFICATIONS } from "../../protocol/methods";
import { CANCELLED_RESULT, type PermissionOption, judgeAnswer, offeredOptions } from "../../protocol/permissions";
import { randomId } from "../../protocol/ids";
import { operationSummary } from "../../protocol/operation";
import type { RulesObject } from "../rules/rules-object";
import { type DecideRequest, type DecideResult, RULE_NOT_CREATED } from "../rules/types";
import { isToolCallUpdate } from "../../protocol/tool-calls";
import type { Env } from "../../worker/env";
import type { FromAgent, SessionRef, ToAgent } from "./agent-link";
import { AgentDelivery } from "./agent-delivery";
import { AuditOutbox } from "./audit-outbox";
import { TurnWatch } from "./turn-watch";
import { LIMIT_REACHED_NOTICE, type LimitError, limitsOf, pendingLimitError } from "../../protocol/tenant-limits";
import {
  ATTACH_HEADER,
  AttachedClients,
  type AttachRequest,
  type ClientAttachment,
  attachmentOf,
  connTag,
  send,
  sendPacked,
  sendRewritable,
} from "./clients";
import { type PendingRow, SessionStore, type SessionMeta } from "./store";
import { CompactionTally, appendUpdate, maybeFold } from "./compaction";
import { RulesCache } from "./rules-cache";
import { agentRequestTarget } from "./agent-request-routing";
import { claimRefusal } from "./ownership";
import { type ApprovalView, type LinkDecidedBy, type LinkRefusal, Notifier } from "./notify";
import type { ToolCallRow } from "../../protocol/tool-calls";

/** How many times a client that answered a permission request wrongly is asked again. */
const MAX_RESENDS = 3;

/** Who or what resolved a permission request; sent to clients and kept in the log. */
export type DecidedBy =
  | { type: "person"; connectionId: string; user: string | null; keyId: string }
  | { type: "rule"; ruleId: string; description: string }
  | { type: "cancel"; connectionId?: string; user?: string | null }
  | { type: "deadline" }
  | { type: "turn_end" }
  | { type: "agent_disconnected"; reason: string }
  | { type: "agent_withdrew" }
  | LinkDecidedBy;

export interface SessionSnapshot {
  sessionId: string;
  agent: string;
  cwd: string;
  title: string | null;
  createdAt: number;
  turn: { state: string; startedAt?: number; user?: string | null };
  toolCalls: object[];
  pendingPermissions: {
    requestId: number;
    toolCallId: string | null;
    toolCall: object | null;
    options: object | null;
    createdAt: number;
    deadlineAt: number;
  }[];
  clients: { connectionId: string; user: string | null; attachedAt: number }[];
  lastSeq: number;
}

export class SessionObject extends DurableObject<Env> {
  private readonly store: SessionStore;
  private readonly clients: AttachedClients;
  private readonly notifier: Notifier;
  private readonly rulesCache = new RulesCache(
    () => this.rules(),
    () => this.store.meta?.tenantId ?? "",
    () => this.store.meta?.sessionId ?? "",
  );

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new SessionStore(ctx.storage.sql);
    this.clients = new AttachedClients(ctx);
    this.delivery = new AgentDelivery(ctx.storage.sql);
    this.audits = new AuditOutbox(ctx.storage.sql, env.DB);
    this.turnWatch = new TurnWatch(ctx.storage.sql);
    this.notifier = new Notifier(ctx, env, this.store, () => this.scheduleDeadline());
  }
  private readonly delivery: AgentDelivery;
  private readonly audits: AuditOutbox;
  private readonly turnWatch: TurnWatch;

  // ── set-up (called by the AgentObject when the agent created or loaded the session) ──────────
  /**
   * A session belongs to the agent that created it: `claimRefusal` says why an agent's session/new
   * (never allowed to re-initialise a session) or session/load (only of its own) is refused, and
   * then nothing here changes.
   */
  init(
    ref: SessionRef,
    meta: Omit<SessionMeta, "tenantId" | "sessionId" | "createdAt">,
    opening: "new" | "load" = "load",
  ): { ok: true } | { ok: false; message: string } {
    const existing = this.store.meta;
    const refusal = claimRefusal(existing, ref, meta.agent, opening);
    if (refusal) return { ok: false, message: refusal };
    this.store.meta = {
      ...existing,
      ...meta,
      tenantId: ref.tenantId,
      sessionId: ref.sessionId,
      createdAt: existing?.createdAt ?? Date.now(),
    };
    return { ok: true };
  }

  exists(): boolean {
    return this.store.meta !== undefined;
  }

  // ── a client attaches: history, then (for session/load) the answer, then pending requests, then live ──
  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("Upgrade") !== "websocket") return new Response("expected a WebSocket", { status: 426 });
    const attach = JSON.parse(request.headers.get(ATTACH_HEADER) ?? "null") as AttachRequest | null;
    const meta = this.store.meta;
    if (!attach || !meta || meta.tenantId !== attach.tenantId || meta.sessionId !== attach.sessionId) {
      return new Response("session not found", { status: 404 });
    }
    const pair = new WebSocketPair();
    const [edge, server] = [pair[0], pair[1]];
    // Everything below is synchronous: no other event can run between reading the log and joining
    // the live fan-out, so the client sees no gap and no duplicate.
    this.ctx.acceptWebSocket(server, [connTag(attach.client.connId)]);
    server.serializeAttachment(attach.client);
    if (attach.mode !== "live") {
      const tally = new CompactionTally();
      sendPacked(server, tally.count(replayBodies(this.store.replayable())));
      if (tally.compacted) send(server, tally.notice(meta.sessionId));
    }
    if (attach.mode === "load" && attach.loadRequestId !== undefined) {
      send(server, JSON.stringify(resultResponse(attach.loadRequestId, this.loadResult(meta))));
    }
    for (const pending of this.store.pending()) {
      if (pending.asking) this.sendCopy(server, attach.client.connId, pending);
    }
    return new Response(null, { status: 101, webSocket: edge });
  }

  // ── messages from a client (through the edge Worker, which already checked the frame) ────────
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const client = attachmentOf(ws);
    if (!client || typeof data !== "string") return;
    const parsed = parseFrame(data);
    if (!parsed.ok) {
      if (parsed.reply) send(ws, JSON.stringify(parsed.reply));
      return;
    }
    const message = parsed.message;
    try {
      if (isResponse(message)) return this.onClientResponse(ws, message);
      if (isRequest(message)) return this.onClientRequest(ws, message.id, message.method, message.params);
      return this.onClientNotification(ws, message.method, "params" in message ? message.params : undefined);
    } catch (error) {
      if (isRequest(message))
        send(ws, JSON.stringify(errorResponse(message.id, toRpcError(error, "session", "Internal error in the session"))));
      else console.error("session: client message failed", error);
    }
  }

  override webSocketClose(ws: WebSocket, code: number): void {
    const client = attachmentOf(ws);
    if (client) this.detach(client.connId);
    try {
      ws.close(code === 1005 ? 1000 : code, "closed");
    } catch {
      // already closed
    }
  }

  override webSocketError(ws: WebSocket): void {
    const client = attachmentOf(ws);
    if (client) this.detach(client.connId);
  }

  /** A client that leaves loses nothing: its copies go, the requests stay pending for the others. */
  private detach(connId: string): void {
    this.store.removeCopiesOfConnection(connId);
    this.notifier.onDetach(this.clients.list().filter((c) => c.connId !== connId).length);
    // The last client gone and nothing waiting on people: rule changes need not wake this session.
    if (this.clients.all().every((ws) => attachmentOf(ws)?.connId === connId) && !this.store.hasAsking()) this.watchRules(false);
    // Agent requests that only this client could serve are answered with an error: nobody else has them.
    for (const r of this.store.agentRequests({ connId })) {
      this.store.takeAgentRequest(r.outId);
      this.toAgent({
        type: "response",
        epoch: r.agentEpoch,
        id: r.agentReqId,
        error: { code: -32603, message: `The client serving ${r.method} disconnected` },
      });
    }
  }

  private onClientRequest(ws: WebSocket, id: JsonRpcId, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    const meta = this.store.meta;
    if (!client || !meta) return;
    if (method === AGENT_METHODS.sessionPrompt) {
      const turn = this.store.turn;
      if (turn.state !== "idle") {
        throw new RpcError(
          -32600,
          `A turn is already running in session ${meta.sessionId}${turn.user ? ` (started by ${turn.user})` : ""}; wait for it to end or send session/cancel. Prompts are not queued.`,
          { reason: "turn_in_progress" },
        );
      }
      const gwId = this.store.nextId();
      this.store.turn = { state: "running", gwId, connId: client.connId, user: client.user, startedAt: Date.now() };
      this.store.addInflight({ gwId, connId: client.connId, clientId: id, method, createdAt: Date.now() });
      this.recordPrompt(client.connId, client.user, params);
      this.toAgent({ type: "request", gwId, method, params });
      this.scheduleDeadline(); // the turn's idle timer
      return;
    }
    const gwId = this.store.nextId();
    this.store.addInflight({ gwId, connId: client.connId, clientId: id, method, createdAt: Date.now() });
    this.toAgent({ type: "request", gwId, method, params });
  }

  private onClientNotification(ws: WebSocket, method: string, params: unknown): void {
    const client = attachmentOf(ws);
    if (!client) return;
    if (method === AGENT_METHODS.sessionCancel) {
      this.cancelTurn({ type: "cancel", connectionId: client.connId, user: client.user });
      this.toAgent({ type: "notification", method, params });
      return;
    }
    if (method === CANCEL_REQUEST) {
      const requestId = isObject(params) ? params.requestId : undefined;
      if (typeof requestId !== "string" && typeof requestId !== "number") return;
      const inflight = this.store.inflightByClient(client.connId, requestId);
      if (inflight) this.toAgent({ type: "cancel_request", gwId: inflight.gwId });
      return;
    }
    this.toAgent({ type: "notification", method, params });
  }

  private onClientResponse(ws: WebSocket, message: Message & { id: JsonRpcId | null }): void {
    const client = attachmentOf(ws);
    if (!client || typeof message.id !== "number") return;
    const copy = this.store.copy(message.id);
    if (copy) return this.onPermissionAnswer(ws, copy.outId, copy.permId, copy.resends, message);
    const forwarded = this.store.takeAgentRequest(message.id);
    if (forwarded) {
      const response = message as { result?: unknown; error?: unknown };
      this.toAgent({
        type: "response",
        epoch: forwarded.agentEpoch,
        id: forwarded.agentReqId,
        result: response.result,
        error: response.error,
      });
    }
  }

  // ── permission requests ───────────────────────────────────────────────────────────────────────
  private onPermissionAnswer(ws: WebSocket, outId: number, permId: number, resends: number, message: Message): void {
    const client = attachmentOf(ws);
    const pending = this.store.pendingById(permId);
    if (!client || !pending) return;
    const response = message as { result?: unknown; error?: unknown };
    if (response.error !== undefined) {
      // The client declined to answer (closed its dialog, or cancelled its copy): others still may.
      this.store.removeCopy(outId);
      return;
    }
    const judged = judgeAnswer(response.result, offeredOptions(JSON.parse(pending.params)));
    if (!judged.ok) {
      // Never approval (TC-10, TC-17): tell this client, keep the request pending, and ask it again.
      this.store.removeCopy(outId);
      sendRewritable(
        ws,
        JSON.stringify(
          errorResponse(
            null,
            RpcError.invalidParams(
              `Your answer to permission request ${outId} was refused: ${judged.reason}. The request is still pending.`,
              { requestId: outId, sessionId: this.store.meta?.sessionId, toolCallId: pending.toolCallId },
            ),
          ),
        ),
      );
      if (resends < MAX_RESENDS) this.sendCopy(ws, client.connId, pending, resends + 1);
      return;
    }
    const by: DecidedBy = { type: "person", connectionId: client.connId, user: client.user, keyId: client.keyId };
    const outcome = judged.outcome;
    if (outcome.outcome === "selected" && (outcome.option.kind === "allow_always" || outcome.option.kind === "reject_always")) {
      // The gateway is the single authority for what the tenant remembers: it stores the rule and,
      // unless the tenant says otherwise, tells the agent only "once", so a revoked rule really stops.
      this.remember(pending, outcome.option, client);
      const forwarded = this.store.meta?.relayAlwaysAsMade
        ? undefined
        : onceOf(outcome.option.kind, offeredOptions(JSON.parse(pending.params)));
      if (forwarded) {
        const result = { ...(response.result as object), outcome: { outcome: "selected", optionId: forwarded.optionId } };
        this.resolvePermission(pending, result, by, outcome.option);
        return;
      }
    }
    this.resolvePermission(pending, response.result, by);
  }

  private remember(pending: PendingRow, chosen: PermissionOption, client: ClientAttachment): void {
    const request = this.decideRequest(pending.permId);
    if (!request) return;
    const remembered = this.rules()
      .remember(request.tenantId, {
        ...request.request,
        user: client.user,
        chosen: { optionId: chosen.optionId, name: chosen.name, kind: chosen.kind },
        keyId: client.keyId,
        toolCallId: pending.toolCallId,
      })
      .then((rule) => {
        if (!rule) return;
        if ("reason" in rule) {
          // Nothing remembered: the person is told why, and will be asked again next time.
          const notice = { sessionId: request.request.sessionId, toolCallId: pending.toolCallId, reason: rule.reason };
          const text = JSON.stringify({ jsonrpc: "2.0", method: RULE_NOT_CREATED, params: notice });
          this.store.append("notice", text);
          this.clients.broadcast(text);
          return;
        }
        const text = JSON.stringify({
          jsonrpc: "2.0",
          method: GATEWAY_NOTIFICATIONS.ruleCreated,
          params: { sessionId: request.request.sessionId, toolCallId: pending.toolCallId, rule, createdBy: client.user },
        });
        this.store.append("notice", text);
        this.clients.broadcast(text);
      })
      .catch((error: unknown) => console.error("session: remembering the decision failed", error));
    this.ctx.waitUntil(remembered);
  }

  /** Sends this client its own copy of a pending request, under a fresh id of the session's. */
  private sendCopy(ws: WebSocket, connId: string, pending: PendingRow, resends = 0): void {
    const outId = this.store.nextId();
    this.store.addCopy(outId, pending.permId, connId, resends);
    sendRewritable(ws, `{"jsonrpc":"2.0","id":${outId},"method":"${CLIENT_METHODS.sessionRequestPermission}","params":${pending.params}}`);
  }

  /** The first valid answer wins: it goes to the agent, every other copy is withdrawn. */
  private resolvePermission(pending: PendingRow, result: unknown, by: DecidedBy, chosen?: PermissionOption): void {
    const copies = this.store.removePending(pending.permId);
    this.withdrawCopies(copies);
    if (pending.asking && !this.store.hasAsking()) this.watchRules(false);
    this.turnWatch.touch(); // a person's answer is progress: the idle clock starts again
    this.scheduleDeadline();
    // Announced only once the agent has the answer: one that cannot reach it is no resolution.
    this.toAgent({ type: "response", epoch: pending.agentEpoch, id: pending.agentReqId, result }, (delivered, threw) =>
      delivered ? this.announceResolution(pending, result, by, chosen) : this.answerUndelivered(pending, by, threw),
    );
  }

  /**
   * The answer did not reach the agent. If the hand-off failed while the turn runs, the request is
   * pending again and people are asked again (a person's answer, or a rule's, is never assumed to have
   * arrived). If the agent's connection is gone, nothing can answer it: audited as withdrawn.
   */
  private answerUndelivered(pending: PendingRow, by: DecidedBy, threw: boolean): void {
    if (threw && this.store.turn.state === "running" && (by.type === "person" || by.type === "rule")) {
      const { permId: _old, asking: _asking, ...request } = pending;
      const permId = this.store.addPending(request);
      this.store.markAsking(permId);
      const again = this.store.pendingById(permId);
      for (const ws of this.clients.all()) {
        const client = attachmentOf(ws);
        if (client && again) this.sendCopy(ws, client.connId, again);
      }
      this.watchRules(true);
      this.scheduleDeadline();
      return;
    }
    this.audit(pending, { outcome: "withdrawn" }, { type: "agent_disconnected", reason: "the answer could not be delivered to the agent" });
  }

  private announceResolution(pending: PendingRow, result: unknown, by: DecidedBy, chosen?: PermissionOption): void {
    const meta = this.store.meta;
    const outcome = isObject(result) ? result.outcome : undefined;
    const notice = {
      jsonrpc: "2.0",
      method: GATEWAY_NOTIFICATIONS.permissionResolved,
      params: {
        sessionId: meta?.sessionId,
        toolCallId: pending.toolCallId,
        outcome,
        ...(chosen ? { chosenOptionId: chosen.optionId } : {}),
        decidedBy: by,
      },
    };
    const text = JSON.stringify(notice);
    this.store.append("resolution", text);
    this.clients.broadcast(text);
    this.audit(pending, outcome, by, chosen);
  }

  /** Every resolution is written to the tenant's decision audit in D1, off the hot path. */
  private audit(pending: PendingRow, outcome: unknown, by: DecidedBy, chosen?: PermissionOption): void {
    const meta = this.store.meta;
    if (!meta) return;
    const row = pending.toolCallId ? this.store.toolCall(pending.toolCallId) : undefined;
    const options = offeredOptions(JSON.parse(pending.params));
    const selected = isObject(outcome) && outcome.outcome === "selected" ? String(outcome.optionId) : null;
    const option = chosen ?? options.find((o) => o.optionId === selected);
    this.audits.add(auditEntry(meta, pending, row, outcome, option, by));
    this.ctx.waitUntil(this.flushAudit());
  }

  /** Kept in the session until D1 takes it (audit-outbox.ts); a failure is retried by the alarm. */
  private async flushAudit(): Promise<void> {
    if (!(await this.audits.flush())) this.scheduleDeadline();
  }

  private withdrawCopies(copies: { outId: number; connId: string }[]): void {
    for (const copy of copies) {
      const ws = this.clients.byConnection(copy.connId);
      if (ws) sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: copy.outId } }));
    }
  }

  /** Answers every pending request `cancelled` (TC-12) and ends the turn's waiting. */
  private cancelTurn(by: DecidedBy): void {
    for (const pending of this.store.pending()) this.resolvePermission(pending, CANCELLED_RESULT, by);
    const turn = this.store.turn;
    if (turn.state === "running") this.store.turn = { ...turn, state: "cancelling" };
  }

  // ── messages from the agent (through the AgentObject) ───────────────────────────────────────────
  /** A batch, handled as one event: one storage commit for all of it. */
  fromAgentBatch(ref: SessionRef, items: FromAgent[]): void {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    this.turnWatch.touch();
    for (const item of items) {
      if (!this.delivery.take(item)) continue; // re-sent after an AgentObject restart: applied already
      // One frame that fails to apply must not take the rest of the batch with it.
      try {
        if (item.kind === "frame") this.fromAgent(ref, item.epoch, item.text);
        else if (item.kind === "response") this.fromAgentResponse(ref, item.gwId, item.text);
        else this.agentGone(ref, item);
      } catch (error) {
        console.error("session: an agent frame failed to apply", error);
      }
    }
  }

  fromAgent(ref: SessionRef, epoch: number, text: string): void {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    const parsed = parseFrame(text);
    if (!parsed.ok) return;
    const message = parsed.message;
    if (isResponse(message)) return;
    const params = "params" in message ? message.params : undefined;
    if (!isRequest(message)) {
      if (message.method === CLIENT_METHODS.sessionUpdate) return this.onSessionUpdate(text, params);
      if (message.method === CANCEL_REQUEST) return this.onAgentCancelRequest(epoch, params);
      const seq = this.store.append("ext", text);
      void seq;
      this.clients.broadcast(text);
      return;
    }
    if (message.method === CLIENT_METHODS.sessionRequestPermission) {
      return this.onPermissionRequest(epoch, message.id, text, params);
    }
    this.routeAgentRequest(epoch, message.id, message.method, params);
  }

  private onSessionUpdate(text: string, params: unknown): void {
    const update = isObject(params) ? params.update : undefined;
    const seq = appendUpdate(this.store, text);
    maybeFold(this.store, seq);
    if (isToolCallUpdate(update)) this.store.applyToolCall(update, seq);
    else if (isObject(update) && update.sessionUpdate === "session_info_update" && typeof update.title === "string") {
      this.setTitle(update.title);
    } else if (isObject(update) && update.sessionUpdate === "current_mode_update" && typeof update.currentModeId === "string") {
      this.setCurrentMode(update.currentModeId);
    } else if (isObject(update) && update.sessionUpdate === "config_option_update" && Array.isArray(update.configOptions)) {
      this.setConfigOptions(update.configOptions);
    }
    this.clients.broadcast(text);
  }

  private onPermissionRequest(epoch: number, agentReqId: JsonRpcId, text: string, params: unknown): void {
    const meta = this.store.meta;
    if (!meta) return;
    const seq = this.store.append("permission", text);
    const toolCall = isObject(params) ? params.toolCall : undefined;
    this.store.applyToolCall(toolCall, seq);
    const now = Date.now();
    const request = {
      agentReqId,
      agentEpoch: epoch,
      toolCallId: isObject(toolCall) && typeof toolCall.toolCallId === "string" ? toolCall.toolCallId : null,
      params: JSON.stringify(params),
      createdAt: now,
      deadlineAt: now + meta.deadlineMs,
    };
    // Nothing may be approved outside a running turn: no rule answers, no client is asked (TC-11).
    if (this.store.turn.state !== "running") return this.refuseOutsideTurn({ ...request, permId: 0, asking: 0 });
    const limit = limitsOf(meta.limits).pendingPermissionsPerSession;
    if (this.store.pending().length >= limit) return this.refuseOverLimit(epoch, agentReqId, pendingLimitError(meta.sessionId, limit));
    const permId = this.store.addPending(request);
    this.scheduleDeadline();
    this.ctx.waitUntil(this.consultRulesThenAsk(permId));
  }

  /** A permission request beyond the session's bound: the agent gets an error saying why, the clients a notice. */
  private refuseOverLimit(epoch: number, agentReqId: JsonRpcId, error: LimitError): void {
    this.toAgent({ type: "response", epoch, id: agentReqId, error });
    const text = JSON.stringify({
      jsonrpc: "2.0",
      method: LIMIT_REACHED_NOTICE,
      params: { sessionId: this.store.meta?.sessionId, ...error },
    });
    this.store.append("notice", text);
    this.clients.broadcast(text);
  }

  /** A permission request while no turn runs, or after the turn was cancelled: `cancelled` at once, audited. */
  private refuseOutsideTurn(request: PendingRow): void {
    const by: DecidedBy = this.store.turn.state === "idle" ? { type: "turn_end" } : { type: "cancel" };
    this.toAgent({ type: "response", epoch: request.agentEpoch, id: request.agentReqId, result: CANCELLED_RESULT });
    this.store.append("resolution", JSON.stringify({ agentReqId: request.agentReqId, outcome: CANCELLED_RESULT.outcome, decidedBy: by }));
    this.audit(request, CANCELLED_RESULT.outcome, by);
  }

  /**
   * The tenant's remembered decisions answer first; only if none applies are people asked. Until
   * then the request is pending but not shown, so an attaching client never sees a request that a
   * rule is about to answer. A failure to consult the rules means asking people, never approval.
   */
  private async consultRulesThenAsk(permId: number): Promise<void> {
    const decided = await this.consultRules(permId).catch((error: unknown) => {
      console.error("session: consulting the rules failed; asking people", error);
      return null;
    });
    const pending = this.store.pendingById(permId);
    if (!pending) return; // cancelled or withdrawn meanwhile
    if (decided?.decision && decided.optionId && decided.ruleId) {
      const result = { outcome: { outcome: "selected", optionId: decided.optionId } };
      this.resolvePermission(pending, result, { type: "rule", ruleId: decided.ruleId, description: decided.description ?? "" });
      return;
    }
    if (pending.asking) return;
    this.store.markAsking(permId);
    for (const ws of this.clients.all()) {
      const client = attachmentOf(ws);
      if (client) this.sendCopy(ws, client.connId, pending);
    }
    this.watchRules(true);
    this.ctx.waitUntil(this.notifier.track(permId).catch((e: unknown) => console.error("session: tracking for notification failed", e)));
  }

  /** The tenant's rules, compiled in this session and kept current by the RulesObject (rules-cache.ts). */
  private async consultRules(permId: number): Promise<DecideResult | null> {
    if (this.rulesCache.knownEmpty) return null;
    const request = this.decideRequest(permId);
    if (!request) return null;
    return this.rulesCache.decide(request.request);
  }

  /** The tenant's rules changed: drop older ones before the change's API answers. True while rules are held. */
  rulesChanged(ref: SessionRef, generation: number): boolean {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return false;
    return this.rulesCache.changed(generation);
  }

  private decideRequest(permId: number): { tenantId: string; request: DecideRequest } | undefined {
    const meta = this.store.meta;
    const pending = this.store.pendingById(permId);
    if (!meta || !pending) return undefined;
    const params = JSON.parse(pending.params) as Record<string, unknown>;
    const row = pending.toolCallId ? this.store.toolCall(pending.toolCallId) : undefined;
    const toolCall = (row ?? (isObject(params.toolCall) ? params.toolCall : {})) as DecideRequest["toolCall"];
    const turn = this.store.turn;
    return {
      tenantId: meta.tenantId,
      request: {
        sessionId: meta.sessionId,
        agent: meta.agent,
        cwd: meta.cwd,
        user: turn.state !== "idle" ? (turn.user ?? null) : (meta.createdBy ?? null),
        toolCall,
        options: offeredOptions(params).map((o) => ({ optionId: o.optionId, name: o.name, kind: o.kind })),
      },
    };
  }

  /** Called by the tenant's RulesObject when a rule was created: waiting requests it matches resolve now. */
  async reconsider(ref: SessionRef): Promise<void> {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    for (const pending of this.store.pending()) {
      if (!pending.asking) continue;
      const decided = await this.consultRules(pending.permId).catch(() => null);
      const still = this.store.pendingById(pending.permId);
      if (still && decided?.decision && decided.optionId && decided.ruleId) {
        const result = { outcome: { outcome: "selected", optionId: decided.optionId } };
        this.resolvePermission(still, result, { type: "rule", ruleId: decided.ruleId, description: decided.description ?? "" });
      }
    }
  }

  /** Sessions with requests waiting on people are registered with the tenant's rules object. */
  private watchRules(waiting: boolean): void {
    const meta = this.store.meta;
    if (!meta) return;
    const rules = this.rules();
    const call = waiting ? rules.watch(meta.tenantId, meta.sessionId) : rules.unwatch(meta.tenantId, meta.sessionId);
    this.ctx.waitUntil(Promise.resolve(call).catch((e: unknown) => console.error("session: rules watch failed", e)));
  }

  private rulesStub?: DurableObjectStub<RulesObject>;
  private rules(): DurableObjectStub<RulesObject> {
    const meta = this.store.meta;
    this.rulesStub ??= this.env.RULES.get(this.env.RULES.idFromName(meta?.tenantId ?? ""));
    return this.rulesStub;
  }

  /** The agent withdrew one of its requests: withdraw the clients' copies and confirm with -32800. */
  private onAgentCancelRequest(epoch: number, params: unknown): void {
    const requestId = isObject(params) ? params.requestId : undefined;
    if (typeof requestId !== "string" && typeof requestId !== "number") return;
    const pending = this.store.pendingByAgentId(requestId, epoch);
    if (pending) {
      this.withdrawCopies(this.store.removePending(pending.permId));
      this.audit(pending, { outcome: "withdrawn" }, { type: "agent_withdrew" });
      this.toAgent({ type: "response", epoch, id: requestId, error: { code: -32800, message: "Request cancelled" } });
      this.store.append("resolution", JSON.stringify({ permId: pending.permId, decidedBy: { type: "agent_withdrew" } }));
      if (pending.asking && !this.store.hasAsking()) this.watchRules(false);
      this.scheduleDeadline();
      return;
    }
    for (const r of this.store.agentRequests({ agentReqId: requestId, epoch })) {
      const ws = this.clients.byConnection(r.connId);
      if (ws) sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: r.outId } }));
    }
  }

  /** fs/*, terminal/*, elicitation/* and extension requests: only to the client whose prompt is running. */
  private routeAgentRequest(epoch: number, agentReqId: JsonRpcId, method: string, params: unknown): void {
    const turn = this.store.turn;
    const ws = turn.state !== "idle" ? this.clients.byConnection(turn.connId) : undefined;
    const target = agentRequestTarget(turn, this.store.meta?.sessionId ?? "", method, params, ws ? attachmentOf(ws) : undefined);
    if (!ws || !target.ok) {
      const error = target.ok ? new RpcError(-32603, `The client serving ${method} is gone`) : target.error;
      this.toAgent({ type: "response", epoch, id: agentReqId, error: errorResponse(agentReqId, error).error });
      return;
    }
    const outId = this.store.nextId();
    this.store.addAgentRequest({ outId, agentReqId, agentEpoch: epoch, connId: target.connId, method });
    sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", id: outId, method, params }));
  }

  /** The agent answered a client request that the session forwarded under gwId. */
  fromAgentResponse(ref: SessionRef, gwId: number, text: string): void {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    const inflight = this.store.takeInflight(gwId);
    if (!inflight) return;
    const response = JSON.parse(text) as Record<string, unknown>;
    if (inflight.method === AGENT_METHODS.sessionPrompt) this.endTurn(gwId, response.result);
    // Whoever set an option, a client attaching later gets the current set in its session/load answer.
    if (
      inflight.method === AGENT_METHODS.sessionSetConfigOption &&
      isObject(response.result) &&
      Array.isArray(response.result.configOptions)
    ) {
      this.setConfigOptions(response.result.configOptions);
    }
    const ws = this.clients.byConnection(inflight.connId);
    if (ws) send(ws, JSON.stringify({ ...response, id: inflight.clientId }));
  }

  private endTurn(gwId: number, result: unknown): void {
    const turn = this.store.turn;
    if (turn.state === "idle" || turn.gwId !== gwId) return;
    // Requests still open when the turn ends can no longer be acted on: answer them cancelled (TC-12).
    for (const pending of this.store.pending()) this.resolvePermission(pending, CANCELLED_RESULT, { type: "turn_end" });
    this.store.turn = { state: "idle" };
    this.store.append("turn_end", JSON.stringify({ result }));
    this.touchIndex();
  }

  /** The agent's connection is gone: nothing it asked can be answered, nothing it was asked will be. */
  agentGone(ref: SessionRef, info: { epoch: number; reason: string; gwIds: number[] }): void {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId) return;
    const watching = this.store.hasAsking();
    for (const pending of this.store.pending().filter((p) => p.agentEpoch <= info.epoch)) {
      this.withdrawCopies(this.store.removePending(pending.permId));
      this.audit(pending, { outcome: "withdrawn" }, { type: "agent_disconnected", reason: info.reason });
      this.store.append(
        "resolution",
        JSON.stringify({ permId: pending.permId, decidedBy: { type: "agent_disconnected", reason: info.reason } }),
      );
    }
    if (watching && !this.store.hasAsking()) this.watchRules(false);
    for (const r of this.store.agentRequests().filter((r) => r.agentEpoch <= info.epoch)) {
      this.store.takeAgentRequest(r.outId);
      const ws = this.clients.byConnection(r.connId);
      if (ws) sendRewritable(ws, JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: r.outId } }));
    }
    const message = `The agent "${meta.agent}" disconnected (${info.reason}) before answering`;
    for (const gwId of info.gwIds) {
      const inflight = this.store.takeInflight(gwId);
      if (!inflight) continue;
      const ws = this.clients.byConnection(inflight.connId);
      const error = new RpcError(-32603, `${message} ${inflight.method}`, { reason: "agent_disconnected" });
      if (ws) send(ws, JSON.stringify(errorResponse(inflight.clientId, error)));
    }
    const turn = this.store.turn;
    if (turn.state !== "idle" && info.gwIds.includes(turn.gwId)) {
      this.store.turn = { state: "idle" };
      this.notifyTurnEnded("agent_disconnected", message);
    }
    this.scheduleDeadline();
  }

  // ── deadlines ─────────────────────────────────────────────────────────────────────────────────
  private scheduleDeadline(): void {
    const next = earliest(earliest(this.store.nextDeadline(), this.notifier.nextDue()), earliest(this.audits.retryAt(), this.turnIdleAt()));
    if (next === undefined) void this.ctx.storage.deleteAlarm();
    else void this.ctx.storage.setAlarm(next);
  }

  override alarm(): void {
    const now = Date.now();
    if (this.audits.waiting() > 0) this.ctx.waitUntil(this.flushAudit());
    const idleAt = this.turnIdleAt();
    if (idleAt !== undefined && idleAt <= now) this.endIdleTurn();
    const overdue = this.store.pending().some((p) => p.deadlineAt <= now);
    if (overdue) {
      const meta = this.store.meta;
      // Exactly what a client's session/cancel does, and the clients are told why.
      this.cancelTurn({ type: "deadline" });
      if (meta) this.toAgent({ type: "notification", method: AGENT_METHODS.sessionCancel, params: { sessionId: meta.sessionId } });
      this.notifyTurnEnded(
        "permission_deadline",
        `A permission request waited ${Math.round((meta?.deadlineMs ?? 0) / 1000)} s without an answer; the gateway cancelled the turn.`,
      );
    }
    this.notifier.onAlarm(now, this.clients.list().length > 0);
    this.scheduleDeadline();
  }

  /** When a running turn that waits on no person has gone too long without progress (tenant's turnIdleMs). */
  private turnIdleAt(): number | undefined {
    const turn = this.store.turn;
    const meta = this.store.meta;
    if (turn.state === "idle" || !meta || this.store.pending().length > 0) return undefined;
    return Math.max(turn.startedAt, this.turnWatch.lastProgressAt() ?? 0) + limitsOf(meta.limits).turnIdleMs;
  }

  /** The agent never answered: the prompt fails naming why, the agent is told to cancel, clients learn the turn ended. */
  private endIdleTurn(): void {
    const meta = this.store.meta;
    const turn = this.store.turn;
    if (!meta || turn.state === "idle") return;
    const seconds = Math.round(limitsOf(meta.limits).turnIdleMs / 1000);
    const message = `The agent "${meta.agent}" made no progress for ${seconds} s (no message, nobody asked); the gateway ended the turn.`;
    const inflight = this.store.takeInflight(turn.gwId);
    const ws = inflight ? this.clients.byConnection(inflight.connId) : undefined;
    if (inflight && ws) send(ws, JSON.stringify(errorResponse(inflight.clientId, new RpcError(-32603, message, { reason: "turn_idle" }))));
    this.store.turn = { state: "idle" };
    this.toAgent({ type: "notification", method: AGENT_METHODS.sessionCancel, params: { sessionId: meta.sessionId } });
    this.notifyTurnEnded("turn_idle", message);
  }

  // ── approval links (worker/routes/approve.tsx; the link's token was checked at the edge) ──────
  approvalView(ref: SessionRef, permId: number, linkId: string): ApprovalView {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId || meta.sessionId !== ref.sessionId) return { state: "unknown" };
    return this.notifier.view(permId, linkId);
  }

  /** An answer from an approval link: exactly a client's answer (first wins, copies withdrawn, audited). */
  answerFromLink(ref: SessionRef, permId: number, linkId: string, optionId: string): LinkRefusal | { state: "answered_by_you" } {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId || meta.sessionId !== ref.sessionId) return { state: "unknown" };
    const taken = this.notifier.takeAnswer(permId, linkId, optionId);
    if (!taken.ok) return taken.view;
    this.resolvePermission(taken.pending, { outcome: { outcome: "selected", optionId } }, taken.by);
    return { state: "answered_by_you" };
  }

  private notifyTurnEnded(reason: string, message: string): void {
    const text = JSON.stringify({
      jsonrpc: "2.0",
      method: GATEWAY_NOTIFICATIONS.turnEnded,
      params: { sessionId: this.store.meta?.sessionId, reason, message },
    });
    this.store.append("notice", text);
    this.clients.broadcast(text);
  }

  // ── reads ─────────────────────────────────────────────────────────────────────────────────────
  snapshot(ref: SessionRef): SessionSnapshot | null {
    const meta = this.store.meta;
    if (!meta || meta.tenantId !== ref.tenantId || meta.sessionId !== ref.sessionId) return null;
    const turn = this.store.turn;
    return {
      sessionId: meta.sessionId,
      agent: meta.agent,
      cwd: meta.cwd,
      title: meta.title ?? null,
      createdAt: meta.createdAt,
      turn: turn.state === "idle" ? { state: "idle" } : { state: turn.state, startedAt: turn.startedAt, user: turn.user },
      toolCalls: this.store.toolCalls(),
      pendingPermissions: this.store.pending().map((p) => {
        const params = JSON.parse(p.params) as { toolCall?: object; options?: object };
        return {
          requestId: p.permId,
          toolCallId: p.toolCallId,
          toolCall: params.toolCall ?? null,
          options: params.options ?? null,
          createdAt: p.createdAt,
          deadlineAt: p.deadlineAt,
        };
      }),
      clients: this.clients.list().map((c) => ({ connectionId: c.connId, user: c.user, attachedAt: c.attachedAt })),
      lastSeq: this.store.lastSeq(),
    };
  }

  // ── helpers ───────────────────────────────────────────────────────────────────────────────────
  private loadResult(meta: SessionMeta): Record<string, unknown> {
    const { sessionId: _omit, ...rest } = meta.result ?? {};
    return rest;
  }

  /** Other clients see what was asked: the prompt is logged and fanned out as user_message_chunk updates. */
  private recordPrompt(connId: string, user: string | null, params: unknown): void {
    const meta = this.store.meta;
    const blocks = isObject(params) && Array.isArray(params.prompt) ? params.prompt : [];
    for (const content of blocks) {
      const text = JSON.stringify({
        jsonrpc: "2.0",
        method: CLIENT_METHODS.sessionUpdate,
        params: {
          sessionId: meta?.sessionId,
          update: { sessionUpdate: "user_message_chunk", content },
          _meta: { acpGateway: { synthesized: true, connectionId: connId, user } },
        },
      });
      appendUpdate(this.store, text);
      this.clients.broadcast(text, connId);
    }
  }

  private setTitle(title: string): void {
    const meta = this.store.meta;
    if (!meta || meta.title === title) return;
    this.store.meta = { ...meta, title };
    this.ctx.waitUntil(
      touchSession(this.env.DB, meta.tenantId, meta.sessionId, { updatedAt: Date.now(), title }).catch((e: unknown) =>
        console.error("session: index title update failed", e),
      ),
    );
  }

  /** session/load answers with the modes of session/new; keep the current one up to date. */
  private setCurrentMode(modeId: string): void {
    const meta = this.store.meta;
    const modes = meta?.result?.modes;
    if (!meta || !isObject(modes)) return;
    this.store.meta = { ...meta, result: { ...meta.result, modes: { ...modes, currentModeId: modeId } } };
  }

  /** The session's configuration options (model, reasoning…) as last reported: part of the session/load answer. */
  private setConfigOptions(configOptions: unknown[]): void {
    const meta = this.store.meta;
    if (!meta) return;
    this.store.meta = { ...meta, result: { ...meta.result, configOptions } };
  }

  private touchIndex(): void {
    const meta = this.store.meta;
    if (!meta) return;
    this.ctx.waitUntil(
      touchSession(this.env.DB, meta.tenantId, meta.sessionId, { updatedAt: Date.now() }).catch((e: unknown) =>
        console.error("session: index update failed", e),
      ),
    );
  }

  private agentStub?: DurableObjectStub<import("../agent/agent-object").AgentObject>;

  /** Fire and forget, in order: calls on one stub are delivered in the order they are made. */
  /**
   * A request that cannot be handed to the agent is answered with an error (and a prompt's turn ends);
   * `after` learns whether the frame reached the agent (`threw`: the hand-off itself failed).
   */
  private toAgent(frame: ToAgent, after?: (delivered: boolean, threw: boolean) => void): void {
    const meta = this.store.meta;
    if (!meta) return;
    this.agentStub ??= this.env.AGENTS.get(this.env.AGENTS.idFromName(`${meta.tenantId}/${meta.agent}`));
    const ref = { tenantId: meta.tenantId, sessionId: meta.sessionId };
    const settled = (delivered: boolean, threw: boolean, reason: string) => {
      if (!delivered && frame.type === "request") this.requestUndelivered(frame.gwId, reason);
      after?.(delivered, threw);
    };
    this.ctx.waitUntil(
      this.agentStub.toAgent(meta.agent, ref, frame).then(
        (delivered) => settled(delivered, false, "the agent does not hold this session"),
        (e: unknown) => {
          console.error("session: agent delivery failed", e);
          settled(false, true, "the hand-off to the agent failed");
        },
      ),
    );
  }

  /** A client request that never reached the agent: its sender gets an error, a prompt's turn ends. */
  private requestUndelivered(gwId: number, reason: string): void {
    const inflight = this.store.takeInflight(gwId);
    const meta = this.store.meta;
    if (!inflight || !meta) return;
    const message = `The gateway could not hand ${inflight.method} to the agent "${meta.agent}" (${reason}); nothing was done, try again`;
    const ws = this.clients.byConnection(inflight.connId);
    if (ws) send(ws, JSON.stringify(errorResponse(inflight.clientId, new RpcError(-32603, message, { reason: "agent_unreachable" }))));
    const turn = this.store.turn;
    if (turn.state !== "idle" && turn.gwId === gwId) {
      for (const pending of this.store.pending()) this.resolvePermission(pending, CANCELLED_RESULT, { type: "turn_end" });
      this.store.turn = { state: "idle" };
      this.notifyTurnEnded("agent_unreachable", message);
    }
  }
}

/** The *_once option of the same decision as an *_always one, if the request offered it. */
function onceOf(kind: string, options: PermissionOption[]): PermissionOption | undefined {
  const once = kind === "allow_always" ? "allow_once" : "reject_once";
  return options.find((o) => o.kind === once);
}

/** The operation in full, as the audit shows it: the command, else the paths (protocol/operation.ts). */
function operationOf(row: ToolCallRow | undefined, cwd: string): string | null {
  return row ? operationSummary(row, cwd) : null;
}

function auditEntry(
  meta: SessionMeta,
  pending: PendingRow,
  row: ToolCallRow | undefined,
  outcome: unknown,
  option: PermissionOption | undefined,
  by: DecidedBy,
): AuditEntry {
  const kindOfOutcome = isObject(outcome) && typeof outcome.outcome === "string" ? outcome.outcome : "withdrawn";
  return {
    id: randomId("aud"),
    tenantId: meta.tenantId,
    sessionId: meta.sessionId,
    agent: meta.agent,
    toolCallId: pending.toolCallId,
    kind: typeof row?.kind === "string" ? row.kind : null,
    name: typeof row?.name === "string" ? row.name : null,
    operation: operationOf(row, meta.cwd),
    outcome: kindOfOutcome === "selected" || kindOfOutcome === "cancelled" ? kindOfOutcome : "withdrawn",
    optionId: option?.optionId ?? null,
    optionKind: option?.kind ?? null,
    decidedBy: by.type,
    decidedByKey: by.type === "person" ? by.keyId : by.type === "link" ? by.linkId : null,
    decidedByUser: by.type === "person" ? by.user : by.type === "link" ? `approval link via ${by.target}` : null,
    ruleId: by.type === "rule" ? by.ruleId : null,
    at: Date.now(),
  };
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

function* replayBodies(entries: Iterable<{ body: string }>): Iterable<string> {
  for (const entry of entries) yield entry.body;
}
