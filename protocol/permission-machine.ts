// The life of every permission request the agent asks of one session, as a synchronous state
// machine: durable-objects/session/session-parts.ts builds its ports beside the session machine's;
// the SessionObject, its agent link and the session machine call it. Pure: no platform import, no await; what takes
// time (the rules, the tenant's policy, the agent's hand-off, remembering a rule) is a port that
// answers now or calls back later. test/unit/permission-machine.test.ts drives it, model-based, over
// interleavings of asks, rule answers, client and link answers, cancels, withdrawals, deadlines,
// clients coming and going, undelivered answers and evictions.
//
// A request's life: asked (its operation frozen) → (outside a turn: answered `cancelled` at once,
// audited; over the session's limit, or an operation too large to keep: refused with an error) →
// the rules (may answer at once, later, or not be reachable: then people are asked and told so) → people (a copy to every attached client and to
// each that attaches, with `_meta.acpGateway.answerable` for its person) → resolved by the first
// valid answer, a rule created meanwhile, an approval link, the turn's cancel or end, the deadline
// (the turn's cancel), the agent withdrawing it, the agent gone, or the agent changing its operation
// (then asked again as a new request).
//
// The guarantees, and how:
// - The first valid answer wins: resolving takes the request out of the pending table in the same
//   synchronous step (`resolve`), and every answer is judged only while the request is pending. The
//   agent gets exactly one answer per request: the winner's, `cancelled` (TC-12), or -32800 when it
//   withdrew the request; nothing after.
// - Never approval by accident (TC-10, TC-17): an answer is judged against the options offered
//   (protocol/permissions.ts) and authorised as it commits — the role, whose turn it is, four eyes —
//   (protocol/people/answering.ts); a refused answer leaves the request pending for everyone else and
//   tells its client why. An allow rule never answers a request that needs four eyes.
// - Every copy is answered or withdrawn: when a request that people were asked is resolved or
//   withdrawn, every client but the one whose answer won is sent `$/cancel_request` for it.
// - A resolution is announced (`_acp_gateway/permission_resolved`) only once the agent has the
//   answer, to the clients attached when it was decided; one that could not be handed on while the
//   turn runs makes the request pending again (asked again); otherwise it is audited as withdrawn.
// - Every outcome is audited once, in the same write as the resolution (its audit entry waits in the
//   session until D1 takes it; `audit.hold` keeps it back until the answer reached the agent). A
//   refused answer and a first approval of two are audited too.
// - A person's *_always choice is a tenant rule only when they may make rules and a rule may cover
//   the operation; otherwise it applies once and every client is told why (`rule_not_created`), and
//   the agent gets the offered *_once; when only an *_always of that decision was offered, the answer
//   is refused (the agent would remember what the gateway may not). `relayAlwaysAsMade` (a tenant's
//   opt-in) relays only an approver's always for which a rule is being stored; should the rules
//   engine then decline to make one, the agent was told "always" (decision 0040 names this).
// - What is asked is what is judged (decision 0040): the operation is frozen when the request is asked
//   (the request's tool call merged over the row then, with its digest, `frozen-operation.ts`), and it
//   is what every copy shows, what four eyes and the rules judge, what an "always" derives from and
//   what the audit records. An update of the tool call that changes the digest while the request waits
//   (`toolCallChanged`) withdraws it — every copy, audited `operation_changed`, clients told why — and
//   asks again as a new request; nothing of the old one carries over, and an answer to its copy is
//   refused. A status-only update changes nothing.
// - A request whose own rawInput is absent or null is never allowed by a rule and never remembered
//   (ACP 1.9.1: explicit confirmation); a reject rule still answers it.
// - No chain of automatic steps runs what no person saw (decision 0046, protocol/unseen.ts): before an
//   allow rule answers, the tenant's unseen changes are consulted (`rules.gate`): a step that may read
//   content is held for people while a change is unseen, a write while a rule-answered reader may still
//   run; a held request is asked with what changed. Any other step asked of people that may read
//   content is shown them just after (`rules.unseenNow`), and a person's allow of it marks seen what
//   its card showed of them (`seenBy`, decision 0064).

import { type JsonRpcId, RpcError, errorResponse, isObject } from "./jsonrpc";
import { CANCEL_REQUEST, CLIENT_METHODS } from "./methods";
import { CANCELLED_RESULT, type PermissionOption, RULES_UNAVAILABLE_MESSAGE, markedRulesUnknown, withGatewayMeta } from "./permissions";
import { type LimitError, limitsOf, outsideTurnAuditLimit, pendingLimitError } from "./tenant-limits";
import { type ClientAttachment, rewritable } from "./session-wire";
import { type DecidedBy, type PendingRequest, type Approval, copyId, parsedParams, toolCallOf } from "./pending-permission";
import { type FrozenOperation, changedFields, freezeOperation, rawInputMissing, tooLargeToFreeze } from "./frozen-operation";
import { type Answerer, type RequestFacts, answerable, authoriseAnswer, personKey, unsatisfiable, waitsOn } from "./people/answering";
import { type FourEyesNeed, fourEyesNeed } from "./people/four-eyes";
import { describeOperation } from "./operation";
import { outlivesItsStep } from "./outlives";
import {
  ANYTHING,
  type NewUnseenChange,
  UNSEEN_LISTED,
  type UnseenGateRequest,
  type UnseenHold,
  changesOf,
  readsProjectContent,
  diffOf,
  seenBy,
  shownClaimOf,
  stepOf,
  unseenMessage,
} from "./unseen";
import { type AnsweredReason, answeredByGateway, noticeUpdate } from "./answered-by-gateway";
import { type Notice, answerRefusedNotice, noticeFrame, ruleAnsweredNotice } from "./gateway-notices";
import { answerForAgent, reasonOfAnswer } from "./answer-reason";
import { gatewayOptions, isGatewayOption, withGatewayOptions } from "./gateway-options";
import type { ToAgent } from "./agent-relay";
import type { ToolCallRow } from "./tool-calls";
import { MAX_STORED_ROW_BYTES } from "./limits";
import type { FourEyesSettings } from "../core/principal";
import { ErrorCode } from "../core/rpc-errors";
import { GATEWAY_NOTIFICATIONS } from "../core/gateway-notifications";
import { METRIC } from "../core/metrics";

// ── the ports ─────────────────────────────────────────────────────────────────────────────────

/** A port that answers later (it calls back) instead of now. */
export const LATER = Symbol("later");
type Later = typeof LATER;
/** The rules could not be consulted (the shard or D1 failed): people are asked, and told so. */
export const RULES_UNAVAILABLE = Symbol("rules unavailable");

/** A rule's decision (durable-objects/rules/contract.ts DecideResult); null: no rule applies. */
export interface RuleDecision {
  decision: "allow" | "reject" | null;
  ruleId?: string;
  description?: string;
  optionId?: string;
}

/** What remembering a person's *_always choice came to: a rule, why none, or nothing to say. */
type Remembered = { reason: string } | object | null;

/** What the session is, as the machine reads it (store.ts SessionMeta). */
interface SessionFacts {
  sessionId: string;
  cwd: string;
  /** The agent's name: the scope of a rule the gateway offers (gateway-options.ts). */
  agent?: string;
  deadlineMs: number;
  relayAlwaysAsMade?: boolean;
  limits?: unknown;
}

/** The session's turn (store.ts TurnState): nothing may be approved outside a running one. */
export type TurnFacts =
  | { state: "idle" }
  /** `fromSeq`: the log's last seq as the turn started, so its requests are the entries after it. */
  | { state: "running" | "cancelling"; gwId: number; prompter?: string; alsoPrompted?: string[]; fromSeq?: number };

/** A resolution written with its request: the text clients are sent and the audit entry. */
export interface Resolution {
  text: string;
  audit: object | null;
}

/** What resolved a request: the table makes its audit entry from it as it writes the resolution. */
export interface Decided {
  outcome: unknown;
  by: DecidedBy;
  chosen?: PermissionOption;
}

/**
 * The session's tables (durable-objects/session/store.ts, in SQLite): the meta, the turn, the tool
 * calls, and each request's one log entry (pending while its `request` column is open). The
 * pending rows are the machine's state: an evicted object rebuilds them from the log, so every
 * decision below reads them, never a copy.
 */
export interface PermissionTable {
  readonly meta: SessionFacts | undefined;
  readonly turn: TurnFacts;
  nextSeq(): number;
  applyToolCall(patch: unknown, seq: number): unknown;
  toolCall(id: string): ToolCallRow | undefined;
  pending(): PendingRequest[];
  pendingById(permId: number): PendingRequest | undefined;
  pendingByAgentId(agentReqId: JsonRpcId, epoch: number): PendingRequest | undefined;
  pendingCount(): number;
  isPending(permId: number): boolean;
  /** The text a request's entry was resolved with, if it was (an answer to a changed request is told why). */
  resolvedText(permId: number): string | undefined;
  /** The request's entry, written once: pending (`request`), resolved (`resolution`), or neither (over the limit). */
  appendPermission(seq: number, body: string, request: PendingRequest | null, resolution?: Resolution): void;
  /** Whether a permission request of the running turn named this tool call (the log, after a restart). */
  wasAsked(toolCallId: string): boolean;
  /** `unseen`: why an allow rule did not answer it (decision 0046), kept with it. */
  markAsking(permId: number, asking: number, unseen?: UnseenHold): void;
  setFourEyes(permId: number, need: FourEyesNeed | null): void;
  recordApproval(permId: number, approval: Approval): void;
  /** An entry that is only audit trail (a refused answer, a first approval). */
  appendAudited(kind: "refusal", body: string, audit: object): void;
  /**
   * The request's entry resolved in one write: `text` (what clients are sent) and its audit entry,
   * which the table makes from `decided` and the operation frozen when it was asked (null without the
   * session's meta), as the audit port's `entry` would.
   */
  resolvePermission(pending: PendingRequest, text: string, decided: Decided): void;
  reopenPermission(pending: PendingRequest): void;
}

/** The attached clients (durable-objects/session/clients.ts); `C` is the shell's handle of one (a WebSocket). */
interface ClientsPort<C> {
  all(): C[];
  attachment(client: C): ClientAttachment | undefined;
  /**
   * Sends one frame; a socket that is closing is skipped. Frames in the client's ids are marked
   * `rewritable` (session-wire.ts). `beside`: what the frame tells, for the shell to say again in
   * the shapes it serves, so it never reads the frame to learn it.
   */
  send(client: C, text: string, beside?: Beside): void;
  /** How often each pending request was sent again to this client after a refused answer; kept with the client. */
  resends(client: C): Record<string, number> | undefined;
  setResends(client: C, resends: Record<string, number>): void;
}

/** What goes beside a frame the machine sends one client. */
export interface Beside {
  /** The ACP notice of what the frame tells this client (decision 0063), sent right after it; only for a client that advertised notices. */
  notice?: string;
  /** The frame is a resolution: its params, for the PR's `permission_resolved` to a client that came by attach (decision 0054). */
  resolved?: Record<string, unknown>;
}

/** The tenant's rules (durable-objects/session/tenant-rules.ts). */
interface RulesPort {
  /** A decision now, or LATER and `then` is called with it (or RULES_UNAVAILABLE). */
  consult(pending: PendingRequest, then: (decided: RuleDecision | null | typeof RULES_UNAVAILABLE) => void): RuleDecision | null | Later;
  /** Stores a person's *_always choice as a rule; `then` with what came of it (not called when it failed). */
  remember(pending: PendingRequest, made: RememberMade, then: (remembered: Remembered) => void): void;
  /** Requests wait on people: keep the rules' subscription, so a new rule may answer them (rulesChanged → `reconsider`). */
  watch(): void;
  /**
   * An allow rule would answer: the tenant's unseen changes may hold it (null: go ahead, what it may
   * write noted and, if it reads, it opened as a reader), now or LATER (`then`; RULES_UNAVAILABLE when
   * they could not be consulted).
   */
  gate(request: UnseenGateRequest, then: (held: UnseenHold | null | typeof RULES_UNAVAILABLE) => void): UnseenHold | null | Later;
  /** What is unseen now, to show people asked about a step that may read it; null: nothing. */
  unseenNow(then: (shown: UnseenHold | null | typeof RULES_UNAVAILABLE) => void): UnseenHold | null | Later;
  /** A person allowed a request whose card showed these unseen changes (unseen.ts `seenBy`): they are seen. */
  seen(ids: number[]): void;
  /** What the agent changed with nobody asked (a tool call it ran unasked): unseen, whatever is running. */
  note(changes: NewUnseenChange[]): void;
  /** A reader a rule let go finished (its tool call), or the turn ended (null: every reader of the session). */
  readerDone(toolCallId: string | null): void;
}

interface RememberMade {
  user: string | null;
  chosen: { optionId: string; name: string; kind: string };
  keyId: string;
  toolCallId: string | null;
}

/** The tenant's decision audit (durable-objects/session/audit-outbox.ts, permission-audit.ts). */
interface AuditPort {
  /** The audit entry of an outcome of the request (null without the session's meta). */
  entry(pending: PendingRequest, outcome: unknown, by: DecidedBy, chosen?: PermissionOption): object | null;
  /** The out-of-turn window's one summarising entry in place of `latest`. */
  outsideTurnSummary(latest: object, windowStart: number, over: number, rate: number): object;
  /** The request's entry waits until its answer reached the agent (`release`). */
  hold(permId: number): void;
  release(permId: number): void;
  /** An entry was written: it goes to D1 with the next (batched) flush. */
  queued(): void;
}

/** What the session does around a request: notices, the alarm, the turn's idle clock, notifications, metrics. */
interface SessionPort {
  now(): number;
  /** A gateway notification to every client, kept in the log (session-info.ts notice). */
  notice(method: string, params: Record<string, unknown>): void;
  /** The earliest deadline may have moved: the alarm is set again. */
  deadlineChanged(): void;
  /** A person's answer is the turn's progress: the idle clock starts again. */
  progress(): void;
  /** The agent ran a tool call nobody was asked about (its notice's params, told to every client first): the tenant's setting decides what becomes of the session (decision 0056). */
  ranUnasked(params: Record<string, unknown>): void;
  /** People are asked: the tenant's notification targets may be told (notify.ts). */
  peopleAsked(permId: number): void;
  /** The tenant's four-eyes settings for the running turn, now or LATER (then `then`). */
  policy(gwId: number, then: (policy: FourEyesSettings | undefined) => void): FourEyesSettings | undefined | Later;
  metric(name: PermissionMetric, detail?: string): void;
}

type PermissionMetric = typeof METRIC.permissionRequested | typeof METRIC.permissionResolved | typeof METRIC.limitRefused;

export interface PermissionPorts<C> {
  table: PermissionTable;
  clients: ClientsPort<C>;
  /** To the agent, in order; `after` learns whether the answer reached it (`threw`: the hand-off failed). */
  toAgent(frame: ToAgent, after?: (delivered: boolean, threw: boolean) => void): void;
  rules: RulesPort;
  audit: AuditPort;
  session: SessionPort;
}

// ── the machine ───────────────────────────────────────────────────────────────────────────────

/** `pending.asking`: the rules are being consulted; people are asked; people are asked because the rules could not be consulted. */
const NOT_YET_ASKING = 0;
const ASKING = 1;
const ASKING_RULES_UNKNOWN = 2;
/** How many times a client that answered a permission request wrongly is asked again. */
const MAX_RESENDS = 3;
/** The window of the out-of-turn audit rate (Limits.outsideTurnAuditsPerMinute). */
const OUTSIDE_TURN_WINDOW_MS = 60_000;

type PersonDecidedBy = Extract<DecidedBy, { type: "person" }>;
export type Answer = { result?: unknown; error?: unknown };

export class PermissionMachine<C> {
  /** Out-of-turn requests in the current window (in memory: an eviction starts a new window, which only audits more). */
  private outsideTurn = { start: 0, count: 0 };
  /** permIds whose "nobody attached can approve" was told, so it is told once until someone who can attaches. */
  private readonly toldBlocked = new Set<number>();
  /** Tool calls a rule let go that may read the project, until they finish. In memory: the turn's end closes them all anyway. */
  private readonly readers = new Set<string>();
  /** Whether the tenant may hold readers of this session (unknown after a restart, so at first true). */
  private mayHoldReaders = true;
  /** Tool calls the agent asked about (or that were told as run unasked), in memory; the table answers for those before a restart. */
  private readonly asked = new Set<string>();

  constructor(private readonly io: PermissionPorts<C>) {}

  // ── asked ─────────────────────────────────────────────────────────────────────────────────────
  /**
   * The agent asked: its tool call is applied, then the rules, then people; the request is one log
   * entry (its permId is the entry's seq), written once: already asking when the rules answer at once
   * that they do not decide it, already resolved when a rule decides it, pending while the rules (or
   * the tenant's policy) answer later. Its resolution later is one UPDATE of the same entry.
   */
  ask(epoch: number, agentReqId: JsonRpcId, text: string, params: unknown): void {
    const { table, session } = this.io;
    const meta = table.meta;
    if (!meta) return;
    const parsed = parsedParams(params);
    const toolCallId = typeof parsed.toolCall?.toolCallId === "string" ? parsed.toolCall.toolCallId : null;
    if (toolCallId !== null) this.asked.add(toolCallId);
    table.applyToolCall(parsed.toolCall, table.nextSeq());
    // The request's tool call is an update too: another request waiting on the same tool call may be asked again.
    if (toolCallId !== null) this.toolCallChanged(toolCallId, parsed.toolCall);
    const seq = table.nextSeq();
    const now = session.now();
    const request: PendingRequest = {
      permId: seq,
      agentReqId,
      agentEpoch: epoch,
      toolCallId,
      params: JSON.stringify(params),
      createdAt: now,
      deadlineAt: now + meta.deadlineMs,
      asking: NOT_YET_ASKING,
      ...parsed,
      // Frozen now: what every judge reads and every client is shown, whatever the agent updates later.
      ...freezeOperation(toolCallId !== null ? table.toolCall(toolCallId) : undefined, parsed.toolCall),
    };
    session.metric(METRIC.permissionRequested);
    // Nothing may be approved outside a running turn: no rule answers, no client is asked (TC-11).
    const turn = table.turn;
    if (turn.state !== "running") return this.refuseOutsideTurn(request, text);
    // An operation too large to keep with its request cannot be frozen: refused, never judged on less.
    if (tooLargeToFreeze(request.operation)) {
      session.metric(METRIC.limitRefused, "operation_too_large");
      table.appendPermission(seq, text, null);
      return this.refuseOverLimit(epoch, agentReqId, operationTooLarge(meta.sessionId));
    }
    const limit = limitsOf(meta.limits).pendingPermissionsPerSession;
    if (table.pendingCount() >= limit) {
      session.metric(METRIC.limitRefused, "pending_permission_limit");
      table.appendPermission(seq, text, null);
      return this.refuseOverLimit(epoch, agentReqId, pendingLimitError(meta.sessionId, limit));
    }
    this.judge(request, text);
  }

  /** A request in a running turn, written or not: the tenant's policy, then the rules, then people. */
  private judge(request: PendingRequest, text: string): void {
    const { table, session } = this.io;
    const seq = request.permId;
    const turn = table.turn;
    if (turn.state !== "running") return;
    // Four eyes first (decision 0028): what the tenant's policy asks of the operation decides whether an allow rule may answer it.
    const policy = session.policy(turn.gwId, (read) => this.policyRead(seq, read));
    if (policy === LATER) {
      table.appendPermission(seq, text, request);
      session.deadlineChanged();
      return;
    }
    request.fourEyes = this.fourEyesOf(request, policy);
    const decided = this.io.rules.consult(request, (later) => this.rulesAnswered(seq, later));
    if (decided === LATER) {
      table.appendPermission(seq, text, request);
      session.deadlineChanged();
    } else if (!this.resolveByRule(request, decided, text)) {
      this.askPeople(request, { append: text });
    }
  }

  /** The turn's policy, read later: then the rules, then people, as `ask`. */
  private policyRead(permId: number, policy: FourEyesSettings | undefined): void {
    const pending = this.io.table.pendingById(permId);
    if (!pending || pending.asking) return; // cancelled or withdrawn meanwhile
    this.io.table.setFourEyes(permId, this.fourEyesOf(pending, policy));
    const decided = this.io.rules.consult(pending, (later) => this.rulesAnswered(permId, later));
    if (decided === LATER) return;
    if (!this.resolveByRule(pending, decided)) this.askPeople(pending, "stored");
  }

  /**
   * The rules answered later. Until then the request is pending but not shown, so an attaching client
   * never sees a request that a rule is about to answer. A failure to consult the rules means asking
   * people, never approval, and the people asked are told that remembered decisions could not be consulted.
   */
  private rulesAnswered(permId: number, decided: RuleDecision | null | typeof RULES_UNAVAILABLE): void {
    const pending = this.io.table.pendingById(permId);
    if (!pending || pending.asking) return; // cancelled or withdrawn meanwhile
    if (decided === RULES_UNAVAILABLE) return this.startAsking(pending, ASKING_RULES_UNKNOWN, "stored");
    if (!this.resolveByRule(pending, decided)) this.askPeople(pending, "stored");
  }

  /**
   * No rule answers it: people are asked. A step that may read content is then shown the tenant's unseen
   * changes (decision 0046): a person judges the effect, and the agent may have changed what it reads.
   * Read after the copies are sent, off the answer's path: when there are some, every client is told
   * (`_acp_gateway/unseen_changes`) and they are kept with the request, so a person's allow from then on
   * marks seen what its card showed, named against this list; an answer before that names no list and
   * marks nothing (it saw nothing).
   */
  private askPeople(request: PendingRequest, write: { append: string } | "stored"): void {
    this.startAsking(request, ASKING, write);
    const meta = this.io.table.meta;
    if (!meta || !readsProjectContent(describeOperation(toolCallOf(request), meta.cwd))) return;
    const permId = request.permId;
    const shown = this.io.rules.unseenNow((later) => this.unseenShown(permId, later));
    if (shown !== LATER) this.unseenShown(permId, shown);
  }

  /** The unseen changes read for a request people are asked: kept with it and told to every client, when there are any. */
  private unseenShown(permId: number, shown: UnseenHold | null | typeof RULES_UNAVAILABLE): void {
    const { table, session } = this.io;
    const pending = table.pendingById(permId);
    if (!pending?.asking || pending.unseen || !shown || shown === RULES_UNAVAILABLE || shown.total === 0) return;
    table.markAsking(permId, pending.asking, shown);
    session.notice(GATEWAY_NOTIFICATIONS.unseenChanges, {
      sessionId: table.meta?.sessionId,
      toolCallId: pending.toolCallId,
      unseen: { message: unseenMessage(shown), ...shown },
    });
  }

  /** What the tenant's four-eyes policy asks of the request's operation, read by the rules engine's parser (protocol/operation.ts). */
  private fourEyesOf(request: PendingRequest, policy: FourEyesSettings | undefined): FourEyesNeed | null {
    const meta = this.io.table.meta;
    if (!meta || !policy || policy.operations.length === 0) return null;
    return fourEyesNeed(policy, describeOperation(toolCallOf(request), meta.cwd));
  }

  /** A permission request beyond the session's bound: the agent gets an error saying why, the clients a notice. */
  private refuseOverLimit(epoch: number, agentReqId: JsonRpcId, error: LimitError | OperationTooLarge): void {
    this.io.toAgent({ type: "response", epoch, id: agentReqId, error });
    this.io.session.notice(GATEWAY_NOTIFICATIONS.limitReached, { sessionId: this.io.table.meta?.sessionId, ...error });
  }

  /**
   * A permission request while no turn runs, or after the turn was cancelled: `cancelled` at once,
   * audited (one entry, resolved). Past the tenant's rate in a minute, the entry is the window's one
   * summarising row instead (the same id each time, the count rising), and the clients are told once.
   */
  private refuseOutsideTurn(request: PendingRequest, text: string): void {
    const { table, session, audit } = this.io;
    const by: DecidedBy = table.turn.state === "idle" ? { type: "turn_end" } : { type: "cancel" };
    const entry = { agentReqId: request.agentReqId, outcome: CANCELLED_RESULT.outcome, decidedBy: by };
    const meta = table.meta;
    const rate = limitsOf(meta?.limits).outsideTurnAuditsPerMinute;
    const now = session.now();
    if (now - this.outsideTurn.start >= OUTSIDE_TURN_WINDOW_MS) this.outsideTurn = { start: now, count: 0 };
    const n = ++this.outsideTurn.count;
    session.metric(METRIC.permissionResolved, by.type);
    const full = audit.entry(request, CANCELLED_RESULT.outcome, by);
    const entered = n <= rate || !full ? full : audit.outsideTurnSummary(full, this.outsideTurn.start, n - rate, rate);
    table.appendPermission(request.permId, text, request, { text: JSON.stringify(entry), audit: entered });
    // After the request's own entry: a notice is a log entry too, numbered after it.
    if (n === rate + 1 && meta) {
      session.notice(GATEWAY_NOTIFICATIONS.limitReached, { sessionId: meta.sessionId, ...outsideTurnAuditLimit(meta.sessionId, rate) });
    }
    this.io.toAgent({ type: "response", epoch: request.agentEpoch, id: request.agentReqId, result: CANCELLED_RESULT });
    audit.queued();
    // Past the rate the clients were told once (limit_reached), not once a request.
    if (n <= rate) this.reportAnsweredByGateway(request, by.type === "cancel" ? "after_cancel" : "outside_turn");
  }

  /** What the gateway answered by itself is told to every client: what, why, what the agent got (answered-by-gateway.ts). */
  private reportAnsweredByGateway(request: PendingRequest, reason: AnsweredReason): void {
    const meta = this.io.table.meta;
    if (!meta) return;
    const report = answeredByGateway(meta.sessionId, toolCallOf(request), meta.cwd, reason, CANCELLED_RESULT);
    this.io.session.notice(GATEWAY_NOTIFICATIONS.answeredByGateway, { ...report });
    const notice = noticeUpdate(report);
    for (const client of this.io.clients.all()) if (this.io.clients.attachment(client)?.caps.notices) this.io.clients.send(client, notice);
  }

  /** A notice's frame for this client, when it advertised notices (decision 0063: ACP sends them to no other client). */
  private noticeFor(client: C, notice: Notice | undefined): string | undefined {
    const sessionId = this.io.table.meta?.sessionId;
    if (!notice || sessionId === undefined || !this.io.clients.attachment(client)?.caps.notices) return undefined;
    return noticeFrame(sessionId, notice);
  }

  /**
   * People are asked: a copy to every attached client (and to each that attaches later), the rules
   * watched, notifications tracked. `write`: how the request's entry says so — written now (`append`,
   * its agent frame), marked asking (`stored`, pending already), or pending again (`reopen`, its
   * resolution never reached the agent).
   */
  private startAsking(request: PendingRequest, asking: number, write: { append: string } | "stored" | "reopen"): void {
    const { table, session } = this.io;
    const pending = { ...request, asking };
    if (write === "stored") table.markAsking(pending.permId, asking, pending.unseen);
    else if (write === "reopen") table.reopenPermission(pending);
    else table.appendPermission(pending.permId, write.append, pending);
    if (asking === ASKING_RULES_UNKNOWN) {
      session.notice(GATEWAY_NOTIFICATIONS.rulesUnavailable, {
        sessionId: table.meta?.sessionId,
        toolCallId: pending.toolCallId,
        message: RULES_UNAVAILABLE_MESSAGE,
      });
    }
    for (const client of this.io.clients.all()) this.sendCopy(client, pending);
    this.checkApprovable(pending);
    this.io.rules.watch();
    session.deadlineChanged();
    session.peopleAsked(pending.permId);
  }

  // ── changed ───────────────────────────────────────────────────────────────────────────────────
  /**
   * The agent changed a tool call (`tool_call`, `tool_call_update`, or another request naming it). A
   * request waiting on it whose operation no longer hashes as the frozen one would now be approved for
   * something nobody was shown: it is withdrawn (every copy, audited), every client is told why, and it
   * is asked again as a new request with the new operation — the rules and four eyes judge it anew, and
   * nothing of the old one (approvals, resends, its copies) carries over. A status-only update changes nothing.
   */
  toolCallChanged(toolCallId: string, patch: Record<string, unknown> | null): void {
    const finished = patch?.status === "completed" || patch?.status === "failed";
    if (finished && this.readers.has(toolCallId)) {
      this.readers.delete(toolCallId);
      this.io.rules.readerDone(toolCallId);
    }
    if (finished && !this.asked.has(toolCallId)) this.maybeRanUnasked(toolCallId);
    for (const pending of this.io.table.pending()) {
      if (pending.toolCallId !== toolCallId) continue;
      // The update over the frozen operation (not over the table's row, which may not have stored an update past its bound).
      const now = freezeOperation(pending.operation as ToolCallRow, patch);
      if (now.operationHash !== pending.operationHash) this.askAgain(pending, now);
    }
  }

  private askAgain(old: PendingRequest, frozen: FrozenOperation): void {
    const { table, session } = this.io;
    const changed = changedFields(old.operation, frozen.operation);
    this.toldBlocked.delete(old.permId);
    this.withdraw(old, { type: "operation_changed", changed });
    session.notice(GATEWAY_NOTIFICATIONS.operationChanged, {
      sessionId: table.meta?.sessionId,
      toolCallId: old.toolCallId,
      requestId: copyId(old.permId),
      changed,
      message: `The agent changed this request's ${changed.join(", ")} after it was asked: it was withdrawn and is asked again. Nothing was approved.`,
    });
    if (table.turn.state !== "running") {
      // Pending only while its turn runs; should the turn be over, the agent gets `cancelled`, as any request then.
      this.io.toAgent({ type: "response", epoch: old.agentEpoch, id: old.agentReqId, result: CANCELLED_RESULT });
      return;
    }
    const sessionId = table.meta?.sessionId ?? "";
    if (tooLargeToFreeze(frozen.operation)) return this.refuseOverLimit(old.agentEpoch, old.agentReqId, operationTooLarge(sessionId));
    const request: PendingRequest = {
      permId: table.nextSeq(),
      agentReqId: old.agentReqId,
      agentEpoch: old.agentEpoch,
      toolCallId: old.toolCallId,
      params: old.params,
      createdAt: session.now(),
      // The old deadline stands: changing the operation does not buy the agent time.
      deadlineAt: old.deadlineAt,
      asking: NOT_YET_ASKING,
      toolCall: old.toolCall,
      options: old.options,
      ...frozen,
      replaces: { permId: old.permId, changed },
    };
    const params: unknown = JSON.parse(old.params);
    this.judge(request, JSON.stringify({ jsonrpc: "2.0", id: old.agentReqId, method: CLIENT_METHODS.sessionRequestPermission, params }));
  }

  // ── rules ─────────────────────────────────────────────────────────────────────────────────────
  /** A rule was created: the requests waiting on people that it matches resolve now, one after another. */
  reconsider(): void {
    this.reconsiderFrom(this.io.table.pending().filter((p) => p.asking));
  }

  private reconsiderFrom(waiting: PendingRequest[]): void {
    for (let i = 0; i < waiting.length; i++) {
      const permId = waiting[i]!.permId;
      const rest = waiting.slice(i + 1);
      const decided = this.io.rules.consult(waiting[i]!, (later) => {
        this.reconsidered(permId, later);
        this.reconsiderFrom(rest);
      });
      if (decided === LATER) return;
      this.reconsidered(permId, decided);
    }
  }

  private reconsidered(permId: number, decided: RuleDecision | null | typeof RULES_UNAVAILABLE): void {
    const still = this.io.table.pendingById(permId);
    if (still && decided !== RULES_UNAVAILABLE) this.resolveByRule(still, decided);
  }

  /**
   * `append`: the request is not written yet (decided as it is asked): written once, resolved. True when
   * the rule took it (resolved, held for people with what changed, or waiting on the unseen changes).
   */
  private resolveByRule(pending: PendingRequest, decided: RuleDecision | null, append?: string): boolean {
    if (!decided?.decision || !decided.optionId || !decided.ruleId) return false;
    // No allow rule covers an operation that needs four eyes, one whose raw input is missing (ACP:
    // explicit confirmation), nor one that may outlive its step (decision 0068); a reject rule still rejects it.
    if (decided.decision === "allow" && (pending.fourEyes || this.noRuleCovers(pending) !== null)) return false;
    const gate = decided.decision === "allow" ? this.gateRequest(pending, decided.ruleId) : null;
    if (gate) {
      const held = this.io.rules.gate(gate, (later) => this.gated(pending.permId, decided, gate, later));
      if (held === LATER) {
        if (append !== undefined) this.io.table.appendPermission(pending.permId, append, pending);
        this.io.session.deadlineChanged();
        return true;
      }
      if (held) {
        // Already asked (a rule reconsidered): it stays with people as it is.
        if (!pending.asking) this.startAsking({ ...pending, unseen: held }, ASKING, append === undefined ? "stored" : { append });
        return true;
      }
      this.opened(gate);
    }
    this.resolveWithRule(pending, decided, append);
    return true;
  }

  private resolveWithRule(pending: PendingRequest, decided: RuleDecision, append?: string): void {
    const result = { outcome: { outcome: "selected", optionId: decided.optionId } };
    this.resolve(
      pending,
      result,
      { type: "rule", ruleId: decided.ruleId ?? "", description: decided.description ?? "" },
      undefined,
      append,
    );
  }

  /** What the tenant's unseen changes are asked before an allow rule answers; null when the step neither reads content nor writes. */
  private gateRequest(pending: PendingRequest, ruleId: string): UnseenGateRequest | null {
    const meta = this.io.table.meta;
    if (!meta) return null;
    const op = describeOperation(toolCallOf(pending), meta.cwd);
    const reads = readsProjectContent(op);
    const paths = changesOf(op);
    if (!reads && paths.length === 0) return null;
    const at = this.io.session.now();
    const toolCallId = pending.toolCallId;
    const toolCall = toolCallOf(pending);
    // Each change keeps the diff the frozen tool call reported for it: what a later card shows (decision 0064);
    // one no diff can show keeps the command and where it ran, what a card says of it (decision 0068).
    const note = paths.map((path) => {
      const diff = diffOf(toolCall, meta.cwd, path);
      return { path, sessionId: meta.sessionId, toolCallId, ruleId, at, ...(diff ? { diff } : stepOf(op)) };
    });
    // A request naming no tool call is a reader until the turn ends (no report can close it). A step that
    // may have written anything is a reader too, whatever it reads: open until it reports finishing, its
    // change cannot be accepted (decision 0068).
    const open = reads || paths.includes(ANYTHING);
    return { reads: open, note, sessionId: meta.sessionId, toolCallId: toolCallId ?? `request:${pending.permId}` };
  }

  /** The unseen changes answered later: the rule answers, or people are asked with what changed (or told the changes could not be read). */
  private gated(permId: number, decided: RuleDecision, gate: UnseenGateRequest, held: UnseenHold | null | typeof RULES_UNAVAILABLE): void {
    const pending = this.io.table.pendingById(permId);
    if (!pending) return; // answered, cancelled or withdrawn meanwhile
    if (held === RULES_UNAVAILABLE) {
      if (!pending.asking) this.startAsking(pending, ASKING_RULES_UNKNOWN, "stored");
      return;
    }
    if (held) {
      if (!pending.asking) this.startAsking({ ...pending, unseen: held }, ASKING, "stored");
      return;
    }
    this.opened(gate);
    this.resolveWithRule(pending, decided);
  }

  /**
   * The agent reports a tool call finished that it never asked about: it decided by itself (its own
   * allowlist, a governed mode such as acceptEdits). What it may have written is unseen (decision 0046):
   * noted for the tenant, and every client told. A read-only kind notes nothing and is not told.
   * Judged when the agent reports it finished (an agent reports `in_progress` before asking, opencode).
   */
  private maybeRanUnasked(toolCallId: string): void {
    const { table, session } = this.io;
    const meta = table.meta;
    const row = table.toolCall(toolCallId);
    if (!meta || !row) return;
    const op = describeOperation(row as Record<string, unknown>, meta.cwd);
    const paths = changesOf(op);
    if (paths.length === 0 || table.wasAsked(toolCallId)) return;
    this.asked.add(toolCallId);
    const at = session.now();
    this.io.rules.note(paths.map((path) => ({ path, sessionId: meta.sessionId, toolCallId, ruleId: null, at, ...stepOf(op) })));
    const shown = paths.includes(ANYTHING) ? "anything it can write" : paths.slice(0, 3).join(", ");
    const ran = {
      sessionId: meta.sessionId,
      toolCallId,
      kind: op.kind,
      ...(op.command !== null ? { command: op.command } : {}),
      changes: paths.slice(0, UNSEEN_LISTED),
      message: `The agent ran a tool call (${op.kind}) without asking anyone (${shown}). What it changed is unseen: remembered rules will not answer steps that may read it until a person allows one.`,
    };
    session.notice(GATEWAY_NOTIFICATIONS.ranUnasked, ran);
    session.ranUnasked(ran);
  }

  /** A step the gate let go that reads: open until its tool call finishes or the turn ends. */
  private opened(gate: UnseenGateRequest): void {
    if (!gate.reads || gate.toolCallId === null) return;
    this.readers.add(gate.toolCallId);
    this.mayHoldReaders = true;
  }

  /** The turn ended (session-machine.ts): whatever its steps were running is over; the tenant stops counting them as readers. */
  turnEnded(): void {
    if (!this.mayHoldReaders) return;
    this.readers.clear();
    this.mayHoldReaders = false;
    this.io.rules.readerDone(null);
  }

  // ── clients ───────────────────────────────────────────────────────────────────────────────────
  /** Sends a client its copy of a pending request: the agent's params, under the request's copy id, with who may answer. */
  private sendCopy(client: C, pending: PendingRequest): void {
    const agentParams = withToolCall(
      pending.asking === ASKING_RULES_UNKNOWN ? markedRulesUnknown(pending.params) : pending.params,
      pending.operation,
    );
    // Who may answer, as this client's person; judged again when the answer commits.
    const facts = this.factsOf(pending);
    const attachment = this.io.clients.attachment(client);
    const fields: Record<string, unknown> = {
      answerable: attachment
        ? answerable(answererOf(attachment), facts)
        : { optionIds: [], reason: "This copy is not addressed to a known client." },
    };
    // The operation as frozen (it is the copy's toolCall): its digest, why it is asked of a person, what it replaces.
    const outlives = this.outlives(pending);
    fields.operation = {
      hash: pending.operationHash,
      ...(rawInputMissing(pending.toolCall, pending.operation) ? { rawInputMissing: RAW_INPUT_MISSING } : {}),
      ...(outlives !== null ? { outlivesItsStep: outlives } : {}),
      ...(pending.replaces ? { replaces: copyId(pending.replaces.permId), changed: pending.replaces.changed } : {}),
    };
    // Why no remembered rule answered it: what the agent changed that nobody saw (decision 0046).
    if (pending.unseen) fields.unseen = { message: unseenMessage(pending.unseen), ...pending.unseen };
    if (facts.fourEyes) {
      const blocked = this.blockedReason(facts);
      fields.fourEyes = {
        require: facts.fourEyes.require,
        why: facts.fourEyes.why,
        approvals: facts.approvals.length,
        ...(blocked ? { unsatisfiable: blocked } : {}),
      };
    }
    const params = withGatewayOptions(withGatewayMeta(agentParams, fields), this.gatewayOptionsOf(pending));
    const method = CLIENT_METHODS.sessionRequestPermission;
    this.io.clients.send(client, rewritable(`{"jsonrpc":"2.0","id":${copyId(pending.permId)},"method":"${method}","params":${params}}`));
  }

  /** An attaching client gets a copy of every request people are being asked. */
  sendPendingTo(client: C): void {
    for (const pending of this.io.table.pending()) if (pending.asking) this.sendCopy(client, pending);
  }

  /** The requests people are being asked that wait on this person now (answering.ts `waitsOn`): "waiting on you". */
  waitingOn(answerer: Answerer): PendingRequest[] {
    return this.io.table.pending().filter((p) => p.asking && waitsOn(answerer, this.factsOf(p)));
  }

  /** A client left (`leaving`) or arrived: the four-eyes requests it could have approved are checked again. */
  clientsChanged(leaving?: string): void {
    for (const pending of this.io.table.pending()) if (pending.asking) this.checkApprovable(pending, leaving);
  }

  /**
   * A request under four eyes that nobody attached (but `leaving`) can approve: everyone is told, once,
   * with who it waits for (`_acp_gateway/four_eyes_unsatisfiable`); each copy sent carries it too.
   */
  private checkApprovable(pending: PendingRequest, leaving?: string): void {
    if (!pending.fourEyes) return;
    const blocked = this.blockedReason(this.factsOf(pending), leaving);
    if (blocked === null) {
      this.toldBlocked.delete(pending.permId);
      return;
    }
    if (this.toldBlocked.has(pending.permId)) return;
    this.toldBlocked.add(pending.permId);
    this.io.session.notice(GATEWAY_NOTIFICATIONS.fourEyesUnsatisfiable, {
      sessionId: this.io.table.meta?.sessionId,
      toolCallId: pending.toolCallId,
      require: pending.fourEyes.require,
      reason: blocked,
    });
  }

  /** Why nobody attached (but `leaving`) can approve the request now, or null. */
  private blockedReason(facts: RequestFacts, leaving?: string): string | null {
    const attached: Answerer[] = [];
    for (const client of this.io.clients.all()) {
      const a = this.io.clients.attachment(client);
      if (a && a.connId !== leaving) attached.push(answererOf(a));
    }
    return unsatisfiable(facts, attached);
  }

  /** What answering knows of a pending request now. */
  /** Why no allow rule may answer this request nor be made from it (beyond four eyes), or null. */
  private noRuleCovers(pending: PendingRequest): string | null {
    if (rawInputMissing(pending.toolCall, pending.operation)) return RAW_INPUT_MISSING;
    const outlives = this.outlives(pending);
    return outlives === null
      ? null
      : `${outlives}: what it writes after the step cannot be known, so it is always asked of a person and never remembered`;
  }

  /** Why the request's command may outlive its step (outlives.ts), or null. */
  private outlives(pending: PendingRequest): string | null {
    const meta = this.io.table.meta;
    return meta ? outlivesItsStep(describeOperation(toolCallOf(pending), meta.cwd)) : null;
  }

  /** The gateway's own "always" options for a request (gateway-options.ts): none without the session's agent. */
  private gatewayOptionsOf(pending: PendingRequest): PermissionOption[] {
    const meta = this.io.table.meta;
    // No rule may cover a request that needs four eyes (people/answering.ts), one without its input
    // (decision 0040), nor one that may outlive its step (decision 0068): nothing to offer.
    if (!meta?.agent || pending.fourEyes || this.noRuleCovers(pending) !== null) return [];
    return gatewayOptions(toolCallOf(pending), pending.options, meta.cwd, meta.agent);
  }

  /** What people may choose from: the agent's options and the gateway's own. */
  private offeredToPeople(pending: PendingRequest): PermissionOption[] {
    return [...pending.options, ...this.gatewayOptionsOf(pending)];
  }

  private factsOf(pending: PendingRequest): RequestFacts {
    const turn = this.io.table.turn;
    return {
      options: this.offeredToPeople(pending),
      prompter: turn.state !== "idle" ? (turn.prompter ?? null) : null,
      ...(turn.state !== "idle" && turn.alsoPrompted ? { alsoPrompted: turn.alsoPrompted } : {}),
      fourEyes: pending.fourEyes ?? null,
      approvals: (pending.approvals ?? []).map((a) => a.who),
    };
  }

  // ── answered ──────────────────────────────────────────────────────────────────────────────────
  /**
   * A client answered its copy: judged against the options offered (never approval when invalid),
   * then authorised as it commits (the person's role, whose turn it is, four eyes), and a person's
   * *_always choice remembered as a tenant rule when they may make rules and a rule may cover the
   * operation. A refused answer is audited (who, role, why) and the request stays pending for the others.
   */
  answer(client: C, attachment: ClientAttachment, permId: number, response: Answer): void {
    const { table, session } = this.io;
    const pending = table.pendingById(permId);
    // The client declined to answer (closed its dialog, or cancelled its copy): others still may.
    if (response.error !== undefined) return;
    // Answered already (the first answer won), withdrawn, or never asked: nothing to do — but an answer
    // to a request the agent changed is refused aloud: what it answered is not what would run.
    if (!pending) return this.refuseChanged(client, permId);
    if (!pending.asking) return;
    const answerer = answererOf(attachment);
    // Judged against the options offered, then authorised as it commits: the role, the turn and the
    // policy as they are now, not as when the copy was sent (people/answering.ts, one call).
    const judged = authoriseAnswer(answerer, this.factsOf(pending), response.result);
    // Never approval (TC-10, TC-17): tell this client, keep the request pending, and ask it again.
    if (!judged.ok) return this.refuseInvalid(client, pending, judged.reason);
    const given = reasonOfAnswer(response.result);
    if (!given.ok) return this.refuseInvalid(client, pending, given.why);
    const by: PersonDecidedBy = {
      type: "person",
      connectionId: attachment.connId,
      user: attachment.user,
      keyId: attachment.keyId,
      ...(attachment.person ? { person: attachment.person } : {}),
      role: answerer.role,
      ...(pending.fourEyes ? { policy: `four_eyes:${pending.fourEyes.require}` } : {}),
      ...(pending.approvals && pending.approvals.length > 0 ? { approvedBefore: pending.approvals } : {}),
      ...(given.reason ? { reason: given.reason } : {}),
    };
    const { outcome, chosen, authorised } = judged;
    if (!authorised.ok) return this.refuse(client, pending, by, chosen, authorised.reason, outcome.outcome);
    if (!authorised.commit) {
      if (chosen) this.recordFirstApproval(client, pending, by, answerer.who, chosen);
      return;
    }
    const always = chosen !== null && (chosen.kind === "allow_always" || chosen.kind === "reject_always");
    // ACP 1.9.1: without raw input nothing is remembered, nor for a command that may outlive its step
    // (decision 0068); the person's "always" applies once.
    const once = authorised.once ?? (always ? this.noRuleCovers(pending) : null);
    if (chosen && once !== null) {
      const forwarded = onceOf(chosen.kind, pending.options);
      // Only "always" was offered: relayed, the agent would remember what the gateway may not. Refused: a
      // reject, a cancel or someone who may make rules still answers (decision 0040).
      if (!forwarded) {
        const reason = `only an "always" option of this decision was offered, and it cannot be remembered here (${once}); relayed, the agent would remember it.`;
        return this.refuse(client, pending, by, chosen, reason, outcome.outcome);
      }
      // "Always" from someone who may not make rules, or for an operation no rule may cover: applied once, every client told why.
      session.notice(GATEWAY_NOTIFICATIONS.ruleNotCreated, {
        sessionId: table.meta?.sessionId,
        toolCallId: pending.toolCallId,
        reason: once,
        chosenBy: attachment.user,
      });
      return this.resolve(pending, withOption(response.result, forwarded), by, chosen);
    }
    if (chosen && (chosen.kind === "allow_always" || chosen.kind === "reject_always")) {
      // The gateway is the single authority for what the tenant remembers: it stores the rule and,
      // unless the tenant says otherwise, tells the agent only "once", so a revoked rule really stops.
      this.remember(pending, chosen, attachment);
      // The gateway's own option is never the agent's to read: it always gets the once (offered, gateway-options.ts).
      const forwarded = table.meta?.relayAlwaysAsMade && !isGatewayOption(chosen) ? undefined : onceOf(chosen.kind, pending.options);
      if (forwarded) return this.resolve(pending, withOption(response.result, forwarded), by, chosen);
    }
    this.resolve(pending, response.result, by);
  }

  /** An answer that is not one (an option not offered, a reason too long): -32602 to its client, the request pending, asked again. */
  private refuseInvalid(client: C, pending: PendingRequest, why: string): void {
    const requestId = copyId(pending.permId);
    const error = RpcError.invalidParams(
      `Your answer to permission request ${requestId} was refused: ${why}. The request is still pending.`,
      {
        requestId,
        sessionId: this.io.table.meta?.sessionId,
        toolCallId: pending.toolCallId,
      },
    );
    this.io.clients.send(client, rewritable(JSON.stringify(errorResponse(null, error))));
    if (this.countResend(client, pending.permId)) this.sendCopy(client, pending);
  }

  /**
   * The person may not choose this (their role, another's turn, four eyes): they get an error naming
   * why (-32003), a fresh copy (its `answerable` says what they may choose), and the refusal is audited;
   * the request stays pending for everyone else.
   */
  private refuse(
    client: C,
    pending: PendingRequest,
    by: PersonDecidedBy,
    chosen: PermissionOption | null,
    reason: string,
    outcome: string,
  ): void {
    const requestId = copyId(pending.permId);
    const error = new RpcError(
      ErrorCode.notPermitted,
      `Your answer to permission request ${requestId} was refused: ${reason} The request is still pending.`,
      { requestId, sessionId: this.io.table.meta?.sessionId, toolCallId: pending.toolCallId, reason },
    );
    this.sendRefusal(client, error);
    const entry = this.io.audit.entry(pending, { outcome }, by, chosen ?? undefined);
    if (entry) {
      const body = JSON.stringify({ permId: pending.permId, decidedBy: by, reason });
      this.io.table.appendAudited("refusal", body, { ...entry, outcome: "refused", reason });
      this.io.audit.queued();
    }
    if (this.countResend(client, pending.permId)) this.sendCopy(client, pending);
  }

  /** An answer to a request withdrawn because the agent changed its operation: its client is told so (-32003); nothing else happens. */
  private refuseChanged(client: C, permId: number): void {
    const text = this.io.table.resolvedText(permId);
    const by = text ? (JSON.parse(text) as { decidedBy?: DecidedBy }).decidedBy : undefined;
    if (by?.type !== "operation_changed") return;
    const requestId = copyId(permId);
    const error = new RpcError(
      ErrorCode.notPermitted,
      `Your answer to permission request ${requestId} was refused: the request changed — the agent changed its ${by.changed.join(", ")} after it was asked, so it was withdrawn and asked again. Nothing was approved; answer the new request.`,
      { requestId, sessionId: this.io.table.meta?.sessionId, reason: "operation_changed", changed: by.changed },
    );
    this.sendRefusal(client, error);
  }

  /** A refusal of this client's answer for who gave it (-32003), told as a notice too where it advertised notices (decision 0063). */
  private sendRefusal(client: C, error: RpcError): void {
    const notice = this.noticeFor(client, answerRefusedNotice(error.message));
    this.io.clients.send(client, rewritable(JSON.stringify(errorResponse(null, error))), { notice });
  }

  /**
   * The first of two approvals (four eyes, two_approvals): recorded with the request, audited, every
   * client told (`_acp_gateway/approval_recorded`); the approver gets a fresh copy that says theirs is
   * in and the second must be someone else's. Nothing reaches the agent yet.
   */
  private recordFirstApproval(client: C, pending: PendingRequest, by: PersonDecidedBy, who: string, chosen: PermissionOption): void {
    const { table, audit, session } = this.io;
    table.recordApproval(pending.permId, {
      who,
      user: by.user,
      role: by.role ?? "approver",
      connectionId: by.connectionId,
      at: session.now(),
    });
    const entry = audit.entry(pending, { outcome: "selected", optionId: chosen.optionId }, by, chosen);
    if (entry) {
      const waiting = "the first of two approvals: recorded, waiting for a second person";
      const reason = by.reason ? `${waiting}; their reason: ${by.reason}` : waiting;
      const body = JSON.stringify({ permId: pending.permId, decidedBy: by, reason });
      table.appendAudited("refusal", body, { ...entry, outcome: "approval_recorded", reason });
      audit.queued();
    }
    session.notice(GATEWAY_NOTIFICATIONS.approvalRecorded, {
      sessionId: table.meta?.sessionId,
      toolCallId: pending.toolCallId,
      approvedBy: { user: by.user, role: by.role, ...(by.person ? { person: by.person } : {}) },
      optionId: chosen.optionId,
      needed: 2,
      recorded: 1,
    });
    const updated = table.pendingById(pending.permId);
    if (updated) {
      this.sendCopy(client, updated);
      this.checkApprovable(updated);
    }
  }

  /** Whether this client may be asked again (at most MAX_RESENDS times per request); counts it. */
  private countResend(client: C, permId: number): boolean {
    const kept = this.io.clients.resends(client);
    if (!kept) return false;
    const resends = Object.fromEntries(Object.entries(kept).filter(([id]) => this.io.table.isPending(Number(id))));
    const sent = resends[permId] ?? 0;
    if (sent >= MAX_RESENDS) return false;
    this.io.clients.setResends(client, { ...resends, [permId]: sent + 1 });
    return true;
  }

  /** Stores a person's *_always choice as a tenant rule; every client learns the rule, or why there is none. */
  private remember(pending: PendingRequest, chosen: PermissionOption, client: ClientAttachment): void {
    const sessionId = this.io.table.meta?.sessionId;
    const toolCallId = pending.toolCallId;
    const made = {
      user: client.user,
      chosen: { optionId: chosen.optionId, name: chosen.name, kind: chosen.kind },
      keyId: client.keyId,
      toolCallId,
    };
    this.io.rules.remember(pending, made, (rule) => {
      if (!rule) return;
      // Nothing remembered: the person is told why, and will be asked again next time.
      if ("reason" in rule)
        return this.io.session.notice(GATEWAY_NOTIFICATIONS.ruleNotCreated, { sessionId, toolCallId, reason: rule.reason });
      this.io.session.notice(GATEWAY_NOTIFICATIONS.ruleCreated, { sessionId, toolCallId, rule, createdBy: client.user });
    });
  }

  /** An answer from an approval link (its link already taken, approval-links.ts takeAnswer): exactly a client's answer. */
  answerFromLink(pending: PendingRequest, optionId: string, by: DecidedBy): void {
    this.resolve(pending, { outcome: { outcome: "selected", optionId } }, by);
  }

  // ── resolved ──────────────────────────────────────────────────────────────────────────────────
  /**
   * The first valid answer wins: it goes to the agent, every other copy is withdrawn. The request's
   * entry is resolved in one UPDATE (or written resolved, `append`: its agent frame) with the text
   * clients will be sent and the audit entry, which waits (held) until the answer reaches the agent.
   */
  private resolve(pending: PendingRequest, result: unknown, by: DecidedBy, chosen?: PermissionOption, append?: string): void {
    const { table, audit, session } = this.io;
    const outcome = isObject(result) ? result.outcome : undefined;
    const params = {
      sessionId: table.meta?.sessionId,
      toolCallId: pending.toolCallId,
      outcome,
      ...(chosen ? { chosenOptionId: chosen.optionId } : {}),
      decidedBy: by,
    };
    const text = JSON.stringify({ jsonrpc: "2.0", method: GATEWAY_NOTIFICATIONS.permissionResolved, params });
    // Nobody was asked: a rule's answer is told as a notice too (decision 0063); a person's is no doing of the gateway's.
    const ruleNotice = by.type === "rule" ? ruleAnsweredNotice(params) : undefined;
    // A person allowed a request whose card showed what the agent changed unseen: what it showed is seen
    // now (decision 0064). An approval link's page shows no list: it clears nothing.
    const seen = by.type === "person" && allows(outcome, pending.options) ? seenBy(pending.unseen, shownClaimOf(result)) : [];
    if (seen.length > 0) this.io.rules.seen(seen);
    session.metric(METRIC.permissionResolved, by.type);
    if (append === undefined) table.resolvePermission(pending, text, { outcome, by, ...(chosen ? { chosen } : {}) });
    else table.appendPermission(pending.permId, append, pending, { text, audit: audit.entry(pending, outcome, by, chosen) });
    audit.hold(pending.permId);
    // Announced only once the agent has the answer: one that cannot reach it is no resolution. It goes
    // to the clients attached now; one attaching meanwhile never saw the request (it is no longer pending).
    const attached = this.io.clients.all();
    // The answer is handed on first: what this event sends leaves in the order it was sent, after the commit.
    const forAgent = answerForAgent(result, by.type === "person" || by.type === "link" ? by.reason : null);
    this.io.toAgent({ type: "response", epoch: pending.agentEpoch, id: pending.agentReqId, result: forAgent }, (delivered, threw) => {
      audit.release(pending.permId);
      if (delivered)
        for (const client of attached) this.io.clients.send(client, text, { resolved: params, notice: this.noticeFor(client, ruleNotice) });
      else this.answerUndelivered(pending, by, threw);
      audit.queued();
    });
    // The client that answered holds no copy any more (its edge dropped it with the answer).
    if (pending.asking) this.withdrawCopies(pending.permId, by.type === "person" ? by.connectionId : undefined);
    session.progress(); // a person's answer is progress: the idle clock starts again (resolved_at records it)
    session.deadlineChanged();
  }

  /** The turn was cancelled or ended: every pending request is answered `cancelled` (TC-12). */
  cancelAll(by: DecidedBy): void {
    for (const pending of this.io.table.pending()) this.resolve(pending, CANCELLED_RESULT, by);
  }

  /**
   * The answer did not reach the agent. If the hand-off failed while the request's own turn runs, the
   * request is pending again and people are asked again (a person's answer, or a rule's, is never
   * assumed to have arrived). Otherwise nothing can answer it — the agent's connection is gone, or its
   * turn is over (a later turn's people never see an earlier turn's request): audited as withdrawn.
   */
  private answerUndelivered(pending: PendingRequest, by: DecidedBy, threw: boolean): void {
    const turn = this.io.table.turn;
    const itsTurnRuns = turn.state === "running" && turn.fromSeq !== undefined && pending.permId > turn.fromSeq;
    if (threw && itsTurnRuns && (by.type === "person" || by.type === "rule")) {
      // Asked again as it was frozen, unless the agent changed the operation meanwhile: then as the new one.
      const row = pending.toolCallId !== null ? this.io.table.toolCall(pending.toolCallId) : undefined;
      const now = row ? freezeOperation(row, null) : null;
      if (now && now.operationHash !== pending.operationHash) return this.askAgain(pending, now);
      this.startAsking(pending, pending.asking || ASKING, "reopen");
      return;
    }
    this.writeWithdrawn(pending, { type: "agent_disconnected", reason: "the answer could not be delivered to the agent" });
  }

  /** The agent withdrew its request: the clients' copies go, the agent is told -32800. False if it was not pending. */
  withdrawnByAgent(epoch: number, requestId: JsonRpcId): boolean {
    const pending = this.io.table.pendingByAgentId(requestId, epoch);
    if (!pending) return false;
    this.withdraw(pending, { type: "agent_withdrew" });
    this.io.toAgent({ type: "response", epoch, id: requestId, error: { code: ErrorCode.requestCancelled, message: "Request cancelled" } });
    this.io.session.deadlineChanged();
    return true;
  }

  /** A pending request nobody can answer any more (the agent withdrew it, or is gone): resolved as withdrawn, copies withdrawn, audited. */
  withdraw(pending: PendingRequest, by: DecidedBy): void {
    this.io.session.metric(METRIC.permissionResolved, by.type);
    this.writeWithdrawn(pending, by);
    this.withdrawCopies(pending.permId);
    this.io.audit.queued();
  }

  /** The request's entry says it was withdrawn, and by whom (one UPDATE, with its audit entry). */
  private writeWithdrawn(pending: PendingRequest, by: DecidedBy): void {
    const text = JSON.stringify({ permId: pending.permId, decidedBy: by });
    this.io.table.resolvePermission(pending, text, { outcome: { outcome: "withdrawn" }, by });
  }

  /**
   * Every client that may hold a copy is told to withdraw it (but `answeredBy`, whose answer ended
   * its copy); the edge drops it for one that holds none (any more).
   */
  private withdrawCopies(permId: number, answeredBy?: string): void {
    const text = JSON.stringify({ jsonrpc: "2.0", method: CANCEL_REQUEST, params: { requestId: copyId(permId) } });
    for (const client of this.io.clients.all()) {
      if (answeredBy !== undefined && this.io.clients.attachment(client)?.connId === answeredBy) continue;
      this.io.clients.send(client, rewritable(text));
    }
  }
}

/** The person behind a client, as answering judges them. A socket from before roles has no role: `approver`, what clients could do then. */
function answererOf(client: ClientAttachment): Answerer {
  return { role: client.role ?? "approver", who: personKey(client) };
}

interface OperationTooLarge {
  code: number;
  message: string;
  data: { reason: "operation_too_large"; limit: "storedRowBytes"; value: number };
}

/** The agent's request whose operation (its tool call merged over the session's row) cannot be kept with it. */
function operationTooLarge(sessionId: string): OperationTooLarge {
  return {
    code: ErrorCode.limitExceeded,
    message: `The operation of this permission request in session ${sessionId} (its tool call merged over the session's earlier updates of it) is larger than the ${MAX_STORED_ROW_BYTES} bytes the gateway keeps with a request, so it cannot be shown and judged whole; the gateway refused it. Send a smaller tool call.`,
    data: { reason: "operation_too_large", limit: "storedRowBytes", value: MAX_STORED_ROW_BYTES },
  };
}

/** Why an "always" applies once when the request carries no raw input (ACP 1.9.1: require explicit confirmation). */
/** Whether an outcome selects an allow option the request offered. */
function allows(outcome: unknown, options: readonly PermissionOption[]): boolean {
  if (!isObject(outcome) || outcome.outcome !== "selected") return false;
  const kind = options.find((o) => o.optionId === outcome.optionId)?.kind;
  return kind === "allow_once" || kind === "allow_always";
}

const RAW_INPUT_MISSING =
  "the request carries no rawInput, so the operation cannot be identified: it is always asked of a person and never remembered";

/** The request's params with its `toolCall` replaced by the frozen operation (what every client is shown). */
function withToolCall(paramsText: string, operation: Record<string, unknown>): string {
  const params = JSON.parse(paramsText) as unknown;
  if (!isObject(params)) return paramsText;
  return JSON.stringify({ ...params, toolCall: operation });
}

/** The *_once option of the same decision as an *_always one, if the request offered it. */
function onceOf(kind: string, options: PermissionOption[]): PermissionOption | undefined {
  const once = kind === "allow_always" ? "allow_once" : "reject_once";
  return options.find((o) => o.kind === once);
}

/** The client's result with another option chosen (an *_always choice forwarded as *_once). */
function withOption(result: unknown, option: PermissionOption): unknown {
  return { ...(result as object), outcome: { outcome: "selected", optionId: option.optionId } };
}
