// The life of one permission request the agent asks: rules first, then people (a copy to every
// client), resolved by the first valid answer, the copies withdrawn, announced, audited. Answers
// from clients are judged in permission-answer.ts; the rules are reached through rules-link.ts.

import { type JsonRpcId, isObject } from "../../protocol/jsonrpc";
import { CANCEL_REQUEST, CLIENT_METHODS } from "../../protocol/methods";
import { CANCELLED_RESULT, type PermissionOption, RULES_UNAVAILABLE_MESSAGE, markedRulesUnknown } from "../../protocol/permissions";
import { type LimitError, limitsOf, outsideTurnAuditLimit, pendingLimitError } from "../../protocol/tenant-limits";
import type { DecideResult } from "../rules/contract";
import type { ToAgent } from "../agent/contract";
import type { AuditEntry } from "../../db/queries/audit";
import type { AuditOutbox } from "./audit-outbox";
import { type AttachedClients, send, sendRewritable } from "./clients";
import { type ClientAttachment, rewritable } from "../../protocol/session-wire";
import type { Notifier } from "./notify";
import { auditEntry, boundedEntry, outsideTurnSummary } from "./permission-audit";
import type { DecidedBy, LinkRefusal } from "./contract";
import { parsedParams } from "../../protocol/pending-permission";
import type { RulesLink } from "./rules-link";
import type { SessionInfo } from "./session-info";
import { answerPermission } from "./permission-answer";
import { type PendingRequest, type SessionStore, copyId } from "./store";
import type { TurnWatch } from "./turn-watch";
import { ErrorCode } from "../../core/rpc-errors";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { METRIC, type MetricsDataset, recordMetric } from "../../core/metrics";
import { sessionLog } from "./session-log";
import type { TenantPolicy } from "./tenant-policy";
import { type FourEyesNeed, fourEyesNeed } from "../../protocol/people/four-eyes";
import { describeOperation } from "../../protocol/operation";
import type { FourEyesSettings } from "../../core/principal";
import { attachmentOf } from "./clients";
import { blockedReason, copyParamsFor, factsOf } from "./answer-authority";

export interface LifecycleDeps {
  ctx: DurableObjectState;
  store: SessionStore;
  clients: AttachedClients;
  notifier: Notifier;
  turnWatch: TurnWatch;
  audits: AuditOutbox;
  rules: RulesLink;
  info: SessionInfo;
  /** To the agent, in order; `after` learns whether the frame reached it (`threw`: the hand-off failed). */
  toAgent(frame: ToAgent, after?: (delivered: boolean, threw: boolean) => void): void;
  /** Sets the object's alarm to the earliest deadline, notify time, audit retry or idle time. */
  scheduleDeadline(): void;
  /** Where the permission metrics go (core/metrics.ts); unbound: log lines. */
  metrics: MetricsDataset | undefined;
  /** The tenant's four-eyes policy for the running turn (tenant-policy.ts). */
  policy: TenantPolicy;
}

/** `pending.asking`: the rules are being consulted; people are asked; people are asked because the rules could not be consulted. */
const NOT_YET_ASKING = 0;
const ASKING = 1;
const ASKING_RULES_UNKNOWN = 2;
const RULES_UNKNOWN = Symbol("rules unknown");
/**
 * Audit rows written within this long of each other go to D1 in one batch: an agent running tool
 * call after tool call under a rule pays one D1 write per batch, not one per request (each row is
 * in the session's SQLite first, so the wait loses nothing).
 */
const AUDIT_BATCH_MS = 100;
/** The window of the out-of-turn audit rate (Limits.outsideTurnAuditsPerMinute). */
const OUTSIDE_TURN_WINDOW_MS = 60_000;

export class PermissionLifecycle {
  private auditFlushWaiting = false;
  /** Out-of-turn requests in the current window (in memory: an eviction starts a new window, which only audits more). */
  private outsideTurn = { start: 0, count: 0 };

  constructor(private readonly d: LifecycleDeps) {}

  // ── ask ───────────────────────────────────────────────────────────────────────────────────────
  /**
   * The agent asked: its tool call is applied, then the rules, then people; the request is one log
   * entry (its permId is the entry's seq), written once: already asking when the rules answer at once
   * that they do not decide it (rules-link.ts), already resolved when a rule decides it, pending while
   * the rules are consulted asynchronously. Its resolution later is one UPDATE of the same entry.
   */
  ask(epoch: number, agentReqId: JsonRpcId, text: string, params: unknown): void {
    const { store } = this.d;
    const meta = store.meta;
    if (!meta) return;
    const seq = store.nextSeq();
    const parsed = parsedParams(params);
    store.applyToolCall(parsed.toolCall, seq);
    const now = Date.now();
    const request: PendingRequest = {
      permId: seq,
      agentReqId,
      agentEpoch: epoch,
      toolCallId: typeof parsed.toolCall?.toolCallId === "string" ? parsed.toolCall.toolCallId : null,
      params: JSON.stringify(params),
      createdAt: now,
      deadlineAt: now + meta.deadlineMs,
      asking: NOT_YET_ASKING,
      ...parsed,
    };
    this.count(METRIC.permissionRequested);
    // Nothing may be approved outside a running turn: no rule answers, no client is asked (TC-11).
    if (store.turn.state !== "running") return this.refuseOutsideTurn(request, text);
    const limit = limitsOf(meta.limits).pendingPermissionsPerSession;
    if (store.pendingCount() >= limit) {
      this.count(METRIC.limitRefused, "pending_permission_limit");
      store.appendPermission(seq, text, null);
      return this.refuseOverLimit(epoch, agentReqId, pendingLimitError(meta.sessionId, limit));
    }
    // Four eyes first (decision 0028): what the tenant's policy asks of the operation decides whether an allow rule may answer it.
    const policy = store.turn.state === "running" ? this.d.policy.forTurn(store.turn.gwId) : undefined;
    if (policy instanceof Promise) {
      store.appendPermission(seq, text, request);
      this.d.scheduleDeadline();
      this.d.ctx.waitUntil(this.askAfterPolicy(request.permId, policy));
      return;
    }
    request.fourEyes = this.fourEyesOf(request, policy);
    const decided = this.d.rules.consultRules(request);
    if (decided instanceof Promise) {
      store.appendPermission(seq, text, request);
      this.d.scheduleDeadline();
      this.d.ctx.waitUntil(this.askAfterRules(request.permId, decided));
    } else if (!this.resolveByRule(request, decided, text)) {
      this.startAsking(request, ASKING, { append: text });
    }
  }

  /** What the tenant's four-eyes policy asks of the request's operation, read by the rules engine's parser (protocol/operation.ts). */
  private fourEyesOf(request: PendingRequest, policy: FourEyesSettings | undefined): FourEyesNeed | null {
    const meta = this.d.store.meta;
    if (!meta || !policy || policy.operations.length === 0) return null;
    const row = request.toolCallId ? this.d.store.toolCall(request.toolCallId) : undefined;
    const toolCall = row ?? request.toolCall ?? {};
    return fourEyesNeed(policy, describeOperation(toolCall as Record<string, unknown>, meta.cwd));
  }

  /** The request waited for the turn's policy (read as the turn started); then the rules, then people, as `ask`. */
  private async askAfterPolicy(permId: number, policy: Promise<FourEyesSettings | undefined>): Promise<void> {
    const read = await policy;
    const pending = this.d.store.pendingById(permId);
    if (!pending || pending.asking) return; // cancelled or withdrawn meanwhile
    this.d.store.setFourEyes(permId, this.fourEyesOf(pending, read));
    const decided = this.d.rules.consultRules(pending);
    if (decided instanceof Promise) return this.askAfterRules(permId, decided);
    if (!this.resolveByRule(pending, decided)) this.startAsking(pending, ASKING, "stored");
  }

  /** A permission request beyond the session's bound: the agent gets an error saying why, the clients a notice. */
  private refuseOverLimit(epoch: number, agentReqId: JsonRpcId, error: LimitError): void {
    this.d.toAgent({ type: "response", epoch, id: agentReqId, error });
    this.d.info.notice(GATEWAY_NOTIFICATIONS.limitReached, { sessionId: this.d.store.meta?.sessionId, ...error });
  }

  /**
   * A permission request while no turn runs, or after the turn was cancelled: `cancelled` at once,
   * audited (one entry, resolved). Past the tenant's rate in a minute, the entry is the window's one
   * summarising row instead (the same id each time, the count rising), and the clients are told once.
   */
  private refuseOutsideTurn(request: PendingRequest, text: string): void {
    const by: DecidedBy = this.d.store.turn.state === "idle" ? { type: "turn_end" } : { type: "cancel" };
    const entry = { agentReqId: request.agentReqId, outcome: CANCELLED_RESULT.outcome, decidedBy: by };
    const meta = this.d.store.meta;
    const rate = limitsOf(meta?.limits).outsideTurnAuditsPerMinute;
    const now = Date.now();
    if (now - this.outsideTurn.start >= OUTSIDE_TURN_WINDOW_MS) this.outsideTurn = { start: now, count: 0 };
    const n = ++this.outsideTurn.count;
    this.count(METRIC.permissionResolved, by.type);
    const full = this.auditOf(request, CANCELLED_RESULT.outcome, by);
    const audit = n <= rate || !full ? full : outsideTurnSummary(full, this.outsideTurn.start, n - rate, rate);
    this.d.store.appendPermission(request.permId, text, request, { text: JSON.stringify(entry), audit });
    // After the request's own entry: a notice is a log entry too, numbered after it.
    if (n === rate + 1 && meta) {
      const error = outsideTurnAuditLimit(meta.sessionId, rate);
      this.d.info.notice(GATEWAY_NOTIFICATIONS.limitReached, { sessionId: meta.sessionId, ...error });
    }
    this.d.toAgent({ type: "response", epoch: request.agentEpoch, id: request.agentReqId, result: CANCELLED_RESULT });
    this.scheduleAuditFlush();
  }

  /**
   * The tenant's remembered decisions answer first; only if none applies are people asked. Until
   * then the request is pending but not shown, so an attaching client never sees a request that a
   * rule is about to answer. A failure to consult the rules means asking people, never approval, and
   * the people asked are told that remembered decisions could not be consulted.
   */
  private async askAfterRules(permId: number, decision: Promise<DecideResult | null>): Promise<void> {
    const decided = await decision.catch((error: unknown): typeof RULES_UNKNOWN => {
      sessionLog(this.d.store).warn("session.rules_unavailable", "consulting the rules failed; asking people", {}, error);
      return RULES_UNKNOWN;
    });
    const pending = this.d.store.pendingById(permId);
    if (!pending || pending.asking) return; // cancelled or withdrawn meanwhile
    if (decided === RULES_UNKNOWN) return this.startAsking(pending, ASKING_RULES_UNKNOWN, "stored");
    if (!this.resolveByRule(pending, decided)) this.startAsking(pending, ASKING, "stored");
  }

  /**
   * People are asked: a copy to every attached client (and to each that attaches later), the rules
   * watched, notifications tracked. `write`: how the request's entry says so — written now (`append`,
   * its agent frame), marked asking (`stored`, pending already), or pending again (`reopen`, its
   * resolution never reached the agent).
   */
  private startAsking(request: PendingRequest, asking: number, write: { append: string } | "stored" | "reopen"): void {
    const pending = { ...request, asking };
    if (write === "stored") this.d.store.markAsking(pending.permId, asking);
    else if (write === "reopen") this.d.store.reopenPermission(pending);
    else this.d.store.appendPermission(pending.permId, write.append, pending);
    if (asking === ASKING_RULES_UNKNOWN) {
      this.d.info.notice(GATEWAY_NOTIFICATIONS.rulesUnavailable, {
        sessionId: this.d.store.meta?.sessionId,
        toolCallId: pending.toolCallId,
        message: RULES_UNAVAILABLE_MESSAGE,
      });
    }
    for (const ws of this.d.clients.all()) this.sendCopy(ws, pending);
    this.checkApprovable(pending);
    this.d.rules.watch();
    this.d.scheduleDeadline();
    const tracked = this.d.notifier.track(pending.permId);
    this.d.ctx.waitUntil(
      tracked.catch((e: unknown) =>
        sessionLog(this.d.store).error("session.notify_track_failed", "tracking a request for notification failed", {}, e),
      ),
    );
  }

  // ── four eyes ─────────────────────────────────────────────────────────────────────────────────
  /** permIds whose "nobody attached can approve" was told, so it is told once until someone who can attaches. */
  private readonly toldBlocked = new Set<number>();

  /**
   * A request under four eyes that nobody attached (but `leaving`) can approve: everyone is told, once,
   * with who it waits for (`_acp_gateway/four_eyes_unsatisfiable`); each copy sent carries it too.
   */
  checkApprovable(pending: PendingRequest, leaving?: string): void {
    if (!pending.fourEyes) return;
    const blocked = blockedReason(factsOf(this.d.store, pending), this.d.clients.list(), leaving);
    if (blocked === null) {
      this.toldBlocked.delete(pending.permId);
      return;
    }
    if (this.toldBlocked.has(pending.permId)) return;
    this.toldBlocked.add(pending.permId);
    this.d.info.notice(GATEWAY_NOTIFICATIONS.fourEyesUnsatisfiable, {
      sessionId: this.d.store.meta?.sessionId,
      toolCallId: pending.toolCallId,
      require: pending.fourEyes.require,
      reason: blocked,
    });
  }

  /** A client left or arrived: the four-eyes requests it could have approved are checked again. */
  clientsChanged(leaving?: string): void {
    for (const pending of this.d.store.pending()) if (pending.asking) this.checkApprovable(pending, leaving);
  }

  /** A rule was created: the requests waiting on people that it matches resolve now. */
  async reconsider(): Promise<void> {
    for (const pending of this.d.store.pending()) {
      if (!pending.asking) continue;
      const decided = await Promise.resolve(this.d.rules.consultRules(pending)).catch(() => null);
      const still = this.d.store.pendingById(pending.permId);
      if (still) this.resolveByRule(still, decided);
    }
  }

  /** `append`: the request is not written yet (decided as it is asked): written once, resolved. */
  private resolveByRule(pending: PendingRequest, decided: DecideResult | null, append?: string): boolean {
    if (!decided?.decision || !decided.optionId || !decided.ruleId) return false;
    // No allow rule covers an operation that needs four eyes; a reject rule still rejects it.
    if (decided.decision === "allow" && pending.fourEyes) return false;
    const result = { outcome: { outcome: "selected", optionId: decided.optionId } };
    this.resolve(pending, result, { type: "rule", ruleId: decided.ruleId, description: decided.description ?? "" }, undefined, append);
    return true;
  }

  /** Sends a client its copy of a pending request: the agent's params, under the request's copy id. */
  sendCopy(ws: WebSocket, pending: PendingRequest): void {
    const agentParams = pending.asking === ASKING_RULES_UNKNOWN ? markedRulesUnknown(pending.params) : pending.params;
    // Who may answer, as this client's person (answer-authority.ts); judged again when the answer commits.
    const facts = factsOf(this.d.store, pending);
    const blocked = facts.fourEyes ? blockedReason(facts, this.d.clients.list()) : null;
    const params = copyParamsFor(agentParams, attachmentOf(ws), facts, blocked);
    const method = CLIENT_METHODS.sessionRequestPermission;
    sendRewritable(ws, `{"jsonrpc":"2.0","id":${copyId(pending.permId)},"method":"${method}","params":${params}}`);
  }

  /** An attaching client gets a copy of every request people are being asked. */
  sendPendingTo(ws: WebSocket): void {
    for (const pending of this.d.store.pending()) {
      if (pending.asking) this.sendCopy(ws, pending);
    }
  }

  /** A client answered its copy (permission-answer.ts). */
  answer(ws: WebSocket, client: ClientAttachment, permId: number, response: { result?: unknown; error?: unknown }): void {
    answerPermission(
      {
        ...this.d,
        resolve: (...args) => this.resolve(...args),
        sendCopy: (...args) => this.sendCopy(...args),
        audit: (pending, outcome, by, chosen) => this.auditOf(pending, outcome, by, chosen),
        audited: () => this.scheduleAuditFlush(),
        checkApprovable: (pending) => this.checkApprovable(pending),
      },
      ws,
      client,
      permId,
      response,
    );
  }

  /** An answer from an approval link: exactly a client's answer (first wins, copies withdrawn, audited). */
  answerFromLink(permId: number, linkId: string, optionId: string): LinkRefusal | { state: "answered_by_you" } {
    const taken = this.d.notifier.takeAnswer(permId, linkId, optionId);
    if (!taken.ok) return taken.view;
    this.resolve(taken.pending, { outcome: { outcome: "selected", optionId } }, taken.by);
    return { state: "answered_by_you" };
  }

  // ── resolve ───────────────────────────────────────────────────────────────────────────────────
  /**
   * The first valid answer wins: it goes to the agent, every other copy is withdrawn. The request's
   * entry is resolved in one UPDATE (or written resolved, `append`: its agent frame) with the text
   * clients will be sent and the audit entry, which waits (held) until the answer reaches the agent.
   */
  resolve(pending: PendingRequest, result: unknown, by: DecidedBy, chosen?: PermissionOption, append?: string): void {
    const { store } = this.d;
    const outcome = isObject(result) ? result.outcome : undefined;
    const params = {
      sessionId: store.meta?.sessionId,
      toolCallId: pending.toolCallId,
      outcome,
      ...(chosen ? { chosenOptionId: chosen.optionId } : {}),
      decidedBy: by,
    };
    const text = JSON.stringify({ jsonrpc: "2.0", method: GATEWAY_NOTIFICATIONS.permissionResolved, params });
    const resolution = { text, audit: this.auditOf(pending, outcome, by, chosen) };
    this.count(METRIC.permissionResolved, by.type);
    if (append === undefined) store.resolvePermission(pending.permId, resolution);
    else store.appendPermission(pending.permId, append, pending, resolution);
    this.d.audits.hold(pending.permId);
    // Announced only once the agent has the answer: one that cannot reach it is no resolution. It goes
    // to the clients attached now; one attaching meanwhile never saw the request (it is no longer pending).
    const attached = this.d.clients.all();
    // The answer is handed on first: what this event sends leaves in the order it was sent, after the commit.
    this.d.toAgent({ type: "response", epoch: pending.agentEpoch, id: pending.agentReqId, result }, (delivered, threw) => {
      this.d.audits.release(pending.permId);
      if (delivered) this.announce(text, attached);
      else this.answerUndelivered(pending, by, threw);
      this.scheduleAuditFlush();
    });
    // The client that answered holds no copy any more (its edge dropped it with the answer).
    if (pending.asking) this.withdrawCopies(pending.permId, by.type === "person" ? by.connectionId : undefined);
    this.d.turnWatch.touch(); // a person's answer is progress: the idle clock starts again (resolved_at records it)
    this.d.scheduleDeadline();
  }

  /** Answers every pending request `cancelled` (TC-12). */
  cancelAll(by: DecidedBy): void {
    for (const pending of this.d.store.pending()) this.resolve(pending, CANCELLED_RESULT, by);
  }

  /** Whether a request's deadline has passed (the alarm then cancels the turn). */
  overdue(now: number): boolean {
    const next = this.d.store.nextDeadline();
    return next !== undefined && next <= now;
  }

  /**
   * The answer did not reach the agent. If the hand-off failed while the turn runs, the request is
   * pending again and people are asked again (a person's answer, or a rule's, is never assumed to have
   * arrived). If the agent's connection is gone, nothing can answer it: audited as withdrawn.
   */
  private answerUndelivered(pending: PendingRequest, by: DecidedBy, threw: boolean): void {
    if (threw && this.d.store.turn.state === "running" && (by.type === "person" || by.type === "rule")) {
      this.startAsking(pending, pending.asking || ASKING, "reopen");
      return;
    }
    this.writeWithdrawn(pending, { type: "agent_disconnected", reason: "the answer could not be delivered to the agent" });
  }

  /** The resolution (written when it was decided) goes to the clients attached when it was. */
  private announce(text: string, attached: WebSocket[]): void {
    for (const ws of attached) send(ws, text);
  }

  /** The agent withdrew its request: the clients' copies go, the agent is told -32800. False if it was not pending. */
  withdrawnByAgent(epoch: number, requestId: JsonRpcId): boolean {
    const pending = this.d.store.pendingByAgentId(requestId, epoch);
    if (!pending) return false;
    this.withdraw(pending, { type: "agent_withdrew" });
    this.d.toAgent({ type: "response", epoch, id: requestId, error: { code: ErrorCode.requestCancelled, message: "Request cancelled" } });
    this.d.scheduleDeadline();
    return true;
  }

  /** A pending request nobody can answer any more (the agent withdrew it, or is gone): resolved as withdrawn, copies withdrawn, audited. */
  withdraw(pending: PendingRequest, by: DecidedBy): void {
    this.count(METRIC.permissionResolved, by.type);
    this.writeWithdrawn(pending, by);
    this.withdrawCopies(pending.permId);
    this.scheduleAuditFlush();
  }

  /** The request's entry says it was withdrawn, and by whom (one UPDATE, with its audit entry). */
  private writeWithdrawn(pending: PendingRequest, by: DecidedBy): void {
    const text = JSON.stringify({ permId: pending.permId, decidedBy: by });
    this.d.store.resolvePermission(pending.permId, { text, audit: this.auditOf(pending, { outcome: "withdrawn" }, by) });
  }

  /**
   * Every client that may hold a copy is told to withdraw it (but `answeredBy`, whose answer ended
   * its copy); the edge drops it for one that holds none (any more).
   */
  withdrawCopies(permId: number, answeredBy?: string): void {
    const text = JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: copyId(permId) } });
    this.d.clients.broadcast(rewritable(text), answeredBy);
  }

  /** One permission metric of this session's tenant and agent (core/metrics.ts). */
  private count(
    metric: typeof METRIC.permissionRequested | typeof METRIC.permissionResolved | typeof METRIC.limitRefused,
    detail?: string,
  ): void {
    const meta = this.d.store.meta;
    if (meta) recordMetric(this.d.metrics, { tenantId: meta.tenantId, metric, detail, agent: meta.agent });
  }

  // ── audit and notices ─────────────────────────────────────────────────────────────────────────
  /** The decision audit entry of a resolution (permission-audit.ts), written with it; none without the session's meta. */
  private auditOf(pending: PendingRequest, outcome: unknown, by: DecidedBy, chosen?: PermissionOption): AuditEntry | null {
    const meta = this.d.store.meta;
    if (!meta) return null;
    const row = pending.toolCallId ? this.d.store.toolCall(pending.toolCallId) : undefined;
    return boundedEntry(auditEntry(meta, pending, row, outcome, by, chosen));
  }

  /** Every resolution goes to the tenant's decision audit in D1, off the hot path, batched (AUDIT_BATCH_MS). */
  private scheduleAuditFlush(): void {
    if (this.auditFlushWaiting) return;
    this.auditFlushWaiting = true;
    const flushed = scheduler.wait(AUDIT_BATCH_MS).then(() => {
      this.auditFlushWaiting = false;
      return this.flushAudit();
    });
    this.d.ctx.waitUntil(flushed);
  }

  /** Kept in the session until D1 takes it (audit-outbox.ts); a failure is retried by the alarm. */
  async flushAudit(): Promise<void> {
    if (!(await this.d.audits.flush())) this.d.scheduleDeadline();
  }
}
