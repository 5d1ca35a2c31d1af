// The session's permission machine (protocol/permission-machine.ts), model-based: a simulated
// session — its log table (which outlives an instance, as SQLite does), its turn, up to four clients
// of different roles, the agent's hand-off queue, the rules and the tenant's policy (answering now or
// later) — driven through random interleavings fast-check finds:
// - the agent asks (rules: none, an allow or reject rule, later, unavailable), withdraws a request,
//   leaves (every pending request withdrawn);
// - a client answers (a valid option, an *_always one, `cancelled`, an option not offered, an error,
//   a role that may not answer, a late or duplicate answer), an approval link answers;
// - the rules or the policy answer later; a rule is created (the waiting requests reconsidered);
// - the tenant's unseen changes let a rule's allow go, hold it, or answer later (decision 0046): no
//   rule allows what they did not let go (planted bug: resolving on a later hold);
// - a turn starts (with a four-eyes policy: none, not_prompter, two_approvals), is cancelled, ends;
//   a deadline passes; clients join and leave;
// - the agent's hand-off delivers an answer, fails (`threw`), or loses it (the agent gone);
// - the object is evicted: the machine is rebuilt from the table's rows.
// After every step: the agent got at most one answer per request; the first valid answer (by role,
// turn and four eyes, as `oracle` states them) is the one the agent gets; a refused answer leaves its
// request pending and its client told; a first of two approvals reaches no one; "always" makes a rule
// exactly when an approver chose it without four eyes; a four-eyes request nobody attached can
// approve was told to everyone; a cancelled turn left nothing pending;
// nothing is resolved while already resolved (but an undelivered answer's rewrite); every copy a
// client holds is of a pending request, or was answered by that client. After a quiet end (every
// callback fired, every answer delivered, the turn ended): nothing pending, every request the agent
// asked answered exactly once (but those whose answer was lost), every copy withdrawn or answered.
// FUZZ_RUNS sets the number of generated cases (300 by default, under a second; 100,000 were run
// while writing it). The fixed cases below are every counterexample found: the model's own mistakes,
// one behaviour kept as it was, and the bugs planted to try it (decision 0033).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  LATER,
  PermissionMachine,
  RULES_UNAVAILABLE,
  type PermissionTable,
  type Resolution,
  type RuleDecision,
  type TurnFacts,
} from "../../protocol/permission-machine";
import type { DecidedBy, PendingRequest } from "../../protocol/pending-permission";
import type { ToAgent } from "../../protocol/agent-relay";
import type { ClientAttachment } from "../../protocol/session-wire";
import type { Role } from "../../core/principal";
import { type JsonRpcId, isObject } from "../../protocol/jsonrpc";
import { answerRefusedNotice, noticeFrame, ruleAnsweredNotice } from "../../protocol/gateway-notices";
import { CANCEL_REQUEST, CLIENT_METHODS } from "../../protocol/methods";
import { GATEWAY_NOTIFICATIONS } from "../../core/gateway-notifications";
import { ErrorCode } from "../../core/rpc-errors";
import { reduceToolCall, type ToolCallRow } from "../../protocol/tool-calls";
import { operationHash } from "../../protocol/frozen-operation";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const PROPERTY_TIMEOUT_MS = 60_000;
const CLIENTS = ["c0", "c1", "c2", "c3"];
const ROLES: Record<string, Role> = { c0: "member", c1: "approver", c2: "observer", c3: "approver" };
const PENDING_LIMIT = 3;
const DEADLINE_MS = 60_000;
const OPTIONS = [
  { optionId: "a1", name: "Allow", kind: "allow_once" },
  { optionId: "aa", name: "Always", kind: "allow_always" },
  { optionId: "r1", name: "Reject", kind: "reject_once" },
];
type RuleMode = "none" | "allow" | "reject" | "later" | "unavailable";
type Choice = "a1" | "aa" | "r1" | "bogus" | "cancelled" | "error";
type FourEyes = "none" | "not_prompter" | "two_approvals";

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(message);
}

interface Row {
  body: string;
  request: PendingRequest | null;
  resolved: string | null;
}

/** The session's log table as the machine's `table` port sees it: outlives every instance. */
class Table implements PermissionTable {
  rows = new Map<number, Row>();
  turn: TurnFacts = { state: "idle" };
  readonly meta = { sessionId: "s", cwd: "/w", deadlineMs: DEADLINE_MS, limits: { pendingPermissionsPerSession: PENDING_LIMIT } };
  /** permIds whose answer is on its way to the agent: a resolution may be rewritten (undelivered) only then. */
  readonly inFlight = new Map<number, number>();
  lastSeq = 0;
  violations: string[] = [];
  /** The session's tool-call rows, merged as store.ts merges them. */
  toolCalls = new Map<string, ToolCallRow>();
  nextSeq(): number {
    return this.lastSeq + 1;
  }
  applyToolCall(patch: unknown): void {
    const id = (patch as { toolCallId?: unknown } | null)?.toolCallId;
    if (typeof id !== "string") return;
    const row = reduceToolCall(this.toolCalls.get(id), patch);
    if (row) this.toolCalls.set(id, row);
  }
  toolCall(id: string): ToolCallRow | undefined {
    const row = this.toolCalls.get(id);
    return row ? structuredClone(row) : undefined;
  }
  resolvedText(permId: number): string | undefined {
    return this.rows.get(permId)?.resolved ?? undefined;
  }
  pending(): PendingRequest[] {
    return [...this.rows.entries()]
      .filter(([, r]) => r.request && r.resolved === null)
      .map(([, r]) => r.request!)
      .sort((a, b) => a.permId - b.permId);
  }
  pendingById(permId: number): PendingRequest | undefined {
    const row = this.rows.get(permId);
    return row?.request && row.resolved === null ? row.request : undefined;
  }
  pendingByAgentId(agentReqId: JsonRpcId, epoch: number): PendingRequest | undefined {
    return this.pending().find((p) => p.agentReqId === agentReqId && p.agentEpoch === epoch);
  }
  pendingCount(): number {
    return this.pending().length;
  }
  isPending(permId: number): boolean {
    return this.pendingById(permId) !== undefined;
  }
  appendPermission(seq: number, body: string, request: PendingRequest | null, resolution?: Resolution): void {
    check(seq === this.lastSeq + 1 && !this.rows.has(seq), `request ${seq} written twice`);
    this.lastSeq = seq;
    this.rows.set(seq, { body, request: request ? structuredClone(request) : null, resolved: resolution?.text ?? null });
  }
  wasAsked(): boolean {
    return true; // the model's tool calls are all asked (permission-machine-unseen cases are the real session's)
  }
  markAsking(permId: number, asking: number, unseen?: PendingRequest["unseen"]): void {
    const p = this.pendingById(permId);
    if (p) p.asking = asking;
    if (p && unseen) p.unseen = unseen;
  }
  setFourEyes(permId: number, need: PendingRequest["fourEyes"]): void {
    const p = this.pendingById(permId);
    if (p) p.fourEyes = need;
  }
  recordApproval(permId: number, approval: NonNullable<PendingRequest["approvals"]>[number]): void {
    const p = this.pendingById(permId);
    if (p) p.approvals = [...(p.approvals ?? []), approval];
  }
  appendAudited(): void {
    this.lastSeq++;
  }
  resolvePermission({ permId }: PendingRequest, text: string): void {
    const row = this.rows.get(permId);
    if (!row) return void this.violations.push(`resolved ${permId}, which was never asked`);
    if (row.resolved !== null && !this.inFlight.has(permId)) this.violations.push(`request ${permId} resolved twice`);
    row.resolved = text;
  }
  reopenPermission(pending: PendingRequest): void {
    const row = this.rows.get(pending.permId)!;
    row.request = structuredClone(pending);
    row.resolved = null;
  }
  /** What a new instance reads back: the rows as SQLite holds them. */
  reloaded(): void {
    this.rows = new Map([...this.rows].map(([k, r]) => [k, structuredClone(r)]));
    this.toolCalls = new Map([...this.toolCalls].map(([k, r]) => [k, structuredClone(r)]));
  }
}

type Later = { what: string; fire: (choice: number) => void };

/** One request the agent asked, as the model follows it. */
interface Asked {
  agentReqId: number;
  permId: number;
  mode: RuleMode;
  /** The option the agent must get (the first valid answer's), once one is decided. */
  expected?: string;
  lost: boolean;
  /** The turn's four-eyes policy when it was asked: it holds for the request's whole life. */
  fourEyes: FourEyes;
  /** The client whose answer resolved it, while that resolution stands. */
  answeredBy?: string;
  /** The turn it was asked in (`gwId`; none outside a turn): it is pending only while that turn runs. */
  turn?: number;
  /** The request carried a raw input (ACP: without one, nothing is allowed by a rule or remembered). */
  raw: boolean;
  /** Its earlier permIds: asked again because the agent changed the operation. */
  previous: number[];
}

class World {
  readonly table = new Table();
  now = 1_000;
  attached = new Set<string>();
  resends = new Map<string, Record<string, number>>();
  inbox = new Map<string, unknown[]>();
  /** Frames handed to the agent, with their `after`, not yet settled. */
  handoff: { frame: ToAgent; after?: (delivered: boolean, threw: boolean) => void; permId?: number }[] = [];
  /** Frames that reached the agent, by its request id. */
  delivered = new Map<JsonRpcId, ToAgent[]>();
  later: Later[] = [];
  asked: Asked[] = [];
  ruleCreated = false;
  policyLater = false;
  /** How the tenant's unseen changes answer a rule's allow (decision 0046): let it go, hold it, or later (either, or unreachable). */
  gate: "go" | "held" | "later" = "go";
  /** What the unseen changes last said of each tool call; a rule's allow may only follow "go". */
  gated = new Map<string, "go" | "held" | "unavailable" | "waiting">();
  /** The ids of every `seen` call: a person allowed a held request whose card showed them. */
  seen: number[][] = [];
  /** The client whose answer the machine is handling now, if any; and, per `seen` call, that client (decision 0068). */
  answering: number | null = null;
  seenFrom: (number | null)[] = [];
  /** Whether the unseen changes were ever handed to the machine to show (held, or shown to people). */
  shownHold = false;
  /** The four-eyes policy of the running turn (every operation, when set: decision 0028). */
  fourEyes: FourEyes = "none";
  /** The first approvals recorded, by request (two_approvals), as the model follows them. */
  approvals = new Map<number, Set<string>>();
  /** Ways an answer went, for the property's precondition (SEEN). */
  readonly ways: string[] = [];
  remembered: string[] = [];
  notices: { method: string; params: Record<string, unknown> }[] = [];
  /** What the shell's `ranUnasked` port was handed (decision 0056). */
  ranUnasked: Record<string, unknown>[] = [];
  nextAgentId = 1;
  gwId = 0;
  machine: PermissionMachine<string>;

  constructor() {
    this.machine = this.build();
    // A turn runs and three clients are attached when the run starts (the commands change both).
    this.table.turn = { state: "running", gwId: ++this.gwId, prompter: "subject:c0", fromSeq: this.table.lastSeq };
    for (const c of ["c0", "c1", "c2"]) {
      this.attached.add(c);
      this.inbox.set(c, []);
    }
  }

  build(): PermissionMachine<string> {
    return new PermissionMachine<string>({
      table: this.table,
      clients: {
        all: () => [...this.attached],
        attachment: (c) => (this.attached.has(c) ? attachment(c) : undefined),
        send: (c, text, beside) => {
          const frame: unknown = JSON.parse(text.replace(/^[^{]*/, ""));
          this.inbox.get(c)!.push(frame);
          // A client that left has no attachment: its socket is gone, nothing reaches it either way.
          const owed = this.attached.has(c) ? noticeOwed(c, frame) : undefined;
          check(beside?.notice === owed, `${c} was handed the notice ${beside?.notice} beside ${text.slice(0, 120)}, not ${owed}`);
          // A resolution's params go beside it (the PR's shape is built from them), and beside nothing else.
          const resolution = isObject(frame) && frame.method === GATEWAY_NOTIFICATIONS.permissionResolved ? frame.params : undefined;
          check(
            JSON.stringify(beside?.resolved) === JSON.stringify(resolution),
            `${c} was handed ${JSON.stringify(beside?.resolved)} as the resolution beside ${text.slice(0, 120)}`,
          );
        },
        resends: (c) => this.resends.get(c) ?? {},
        setResends: (c, r) => void this.resends.set(c, r),
      },
      toAgent: (frame, after) => {
        // The request this answer resolved: the newest entry of the agent's request (an earlier one may have been asked again).
        const entries = [...this.table.rows].filter(([, r]) => frame.type === "response" && r.request?.agentReqId === frame.id);
        const permId = entries.length > 0 ? Math.max(...entries.map(([k]) => k)) : undefined;
        if (permId !== undefined && after) this.table.inFlight.set(permId, (this.table.inFlight.get(permId) ?? 0) + 1);
        this.handoff.push({ frame, after, permId });
      },
      rules: {
        consult: (pending, then) => {
          const mode = modeOf(pending);
          if (this.ruleCreated && (mode === "none" || mode === "allow")) return rule("allow");
          if (mode === "allow" || mode === "reject") return rule(mode);
          if (mode === "none") return null;
          this.later.push({
            what: `rules of ${pending.permId}`,
            fire: (choice) => then(mode === "unavailable" ? RULES_UNAVAILABLE : choice % 2 === 0 ? null : rule("reject")),
          });
          return LATER;
        },
        remember: (pending, made, then) => {
          this.remembered.push(`${pending.permId}:${made.chosen.kind}`);
          this.later.push({ what: `remember ${pending.permId}`, fire: () => then({ ruleId: "new" }) });
        },
        watch: () => {},
        // The tenant's unseen changes (decision 0046): as the world's `gate` mode says, now or later.
        gate: (request, then) => {
          const toolCallId = request.toolCallId ?? "";
          if (this.gate === "go" || this.gate === "held") {
            this.gated.set(toolCallId, this.gate);
            if (this.gate === "held") this.shownHold = true;
            return this.gate === "held" ? HOLD : null;
          }
          this.gated.set(toolCallId, "waiting");
          this.later.push({
            what: `unseen changes of ${toolCallId}`,
            fire: (choice) => {
              const answer = choice % 3 === 0 ? "go" : choice % 3 === 1 ? "held" : "unavailable";
              this.gated.set(toolCallId, answer);
              if (answer === "held") this.shownHold = true;
              then(answer === "go" ? null : answer === "held" ? HOLD : RULES_UNAVAILABLE);
            },
          });
          return LATER;
        },
        // What people asked are shown: the world's unseen changes (none while it lets every step go).
        unseenNow: (then) => {
          if (this.gate === "held") this.shownHold = true;
          if (this.gate !== "later") return this.gate === "held" ? HOLD : null;
          this.later.push({
            what: "unseen changes shown",
            fire: (choice) => {
              if (choice % 2 === 1) this.shownHold = true;
              then(choice % 2 === 0 ? null : HOLD);
            },
          });
          return LATER;
        },
        seen: (ids) => {
          this.seen.push(ids);
          this.seenFrom.push(this.answering);
        },
        note: () => {},
        readerDone: () => {},
      },
      audit: {
        entry: (pending, outcome, by) => ({ permId: pending.permId, outcome, by: by.type }),
        outsideTurnSummary: (latest) => latest,
        hold: () => {},
        release: () => {},
        queued: () => {},
      },
      session: {
        now: () => this.now,
        notice: (method, params) => void this.notices.push({ method, params }),
        ranUnasked: (params) => void this.ranUnasked.push(params),
        deadlineChanged: () => {},
        progress: () => {},
        peopleAsked: () => {},
        policy: (_gwId, then) => {
          const policy = this.fourEyes === "none" ? undefined : { operations: [{ require: this.fourEyes }] };
          if (!this.policyLater) return policy;
          this.later.push({ what: "policy", fire: () => then(policy) });
          return LATER;
        },
        metric: () => {},
      },
    });
  }
}

function attachment(c: string): ClientAttachment {
  return {
    connId: c,
    keyId: `k_${c}`,
    user: c,
    // Each client is a person (four eyes counts people, decision 0041; a key naming nobody is answering.test.ts's).
    person: { issuer: "https://idp.test", subject: c },
    role: ROLES[c],
    attachedAt: 0,
    caps: { readTextFile: false, writeTextFile: false, terminal: false, notices: TAKES_NOTICES.has(c) },
  };
}

/** Which clients advertised ACP notices (decision 0063): an approver and the observer, whose answers are refused. */
const TAKES_NOTICES = new Set(["c1", "c2"]);

/**
 * The notice the machine owes beside a frame it sends a client that advertised notices: a rule's
 * resolution ("Answered by a rule"), or a refusal of this client's answer for who gave it (-32003,
 * naming the request); nothing beside any other frame (a person's resolution, a -32602, a copy).
 */
function noticeOwed(client: string, frame: unknown): string | undefined {
  if (!TAKES_NOTICES.has(client) || !isObject(frame)) return undefined;
  if (frame.method === GATEWAY_NOTIFICATIONS.permissionResolved && isObject(frame.params)) {
    const notice = ruleAnsweredNotice(frame.params);
    return notice ? noticeFrame("s", notice) : undefined;
  }
  const error = isObject(frame.error) ? frame.error : undefined;
  if (error?.code !== ErrorCode.notPermitted || !isObject(error.data) || error.data.requestId === undefined) return undefined;
  return noticeFrame("s", answerRefusedNotice(String(error.message)));
}

function modeOf(pending: PendingRequest): RuleMode {
  return (pending.toolCall?.title as RuleMode | undefined) ?? "none";
}

/**
 * What the tenant's unseen changes answer when they hold a step, listed as L7: an edit shown by its
 * diff (7), a command's `*` (9), and one whose command still runs (10); newest id 10.
 */
const HOLD = {
  total: 3,
  upTo: 10,
  readers: [],
  listId: "L7",
  changes: [
    {
      id: 7,
      path: "/w/Makefile.sh",
      sessionId: "s",
      toolCallId: "tc0",
      ruleId: "rule_allow",
      at: 0,
      diff: { oldText: null, newText: "x" },
    },
    { id: 9, path: "*", sessionId: "s", toolCallId: "tc1", ruleId: "rule_allow", at: 0, command: "make", cwd: "/w" },
    { id: 10, path: "*", sessionId: "s", toolCallId: "tc2", ruleId: "rule_allow", at: 0, command: "make &", cwd: "/w", running: true },
  ],
};

function rule(mode: "allow" | "reject"): RuleDecision {
  return { decision: mode, optionId: mode === "allow" ? "a1" : "r1", ruleId: `rule_${mode}`, description: mode };
}

/**
 * A client's answer; every one says its card showed changes 7 to 10 (8 was never listed), clients 2 and
 * 3 against a list they were not sent. Clients 0 and 3 also accept what 7, 9, 10 and 11 may have written
 * (7 has a diff, 10 still runs, 11 was never listed): of those, only 9 may become seen by it. So the
 * member (0) accepts against the list, an approver (1) names 9 without accepting it, the other (3) accepts
 * against another list.
 */
function resultOf(choice: Choice, client = 0): unknown {
  if (choice === "cancelled") return { outcome: { outcome: "cancelled" } };
  const shown = {
    list: client < 2 ? "L7" : "another list",
    changes: [7, 8, 9, 10],
    ...(accepts(client) ? { accepted: [7, 9, 10, 11] } : {}),
  };
  return { outcome: { outcome: "selected", optionId: choice }, _meta: { acpGateway: { shown } } };
}

const accepts = (client: number) => client % 3 === 0;

// ── the commands ───────────────────────────────────────────────────────────────────────────────
type Command =
  | { t: "ask"; mode: RuleMode; raw?: boolean }
  | { t: "change"; request: number; what: "command" | "status" }
  | { t: "answerOld"; client: number; request: number }
  | { t: "answer"; client: number; request: number; choice: Choice }
  | { t: "link"; request: number; option: "a1" | "r1" }
  | { t: "settle"; index: number; choice: number }
  | { t: "deliver"; how: "ok" | "threw" | "lost" }
  | { t: "withdraw"; request: number }
  | { t: "turn"; what: "start" | "cancel" | "end" | "deadline"; policyLater: boolean; fourEyes?: FourEyes }
  | { t: "gone" }
  | { t: "join"; client: number }
  | { t: "leave"; client: number }
  | { t: "ruleCreated" }
  | { t: "unseen"; gate: "go" | "held" | "later" }
  | { t: "evict" };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant("ask" as const),
      mode: fc.constantFrom<RuleMode>("none", "none", "none", "none", "allow", "reject", "later", "unavailable"),
      raw: fc.constantFrom(true, true, true, false),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("change" as const),
      request: fc.nat(7),
      what: fc.constantFrom<"command" | "status">("command", "status"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("answerOld" as const), client: fc.nat(3), request: fc.nat(7) }) },
  {
    weight: 10,
    arbitrary: fc.record({
      t: fc.constant("answer" as const),
      client: fc.nat(3),
      request: fc.nat(7),
      choice: fc.constantFrom<Choice>("a1", "a1", "aa", "r1", "bogus", "cancelled", "error"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant("link" as const), request: fc.nat(7), option: fc.constantFrom<"a1" | "r1">("a1", "r1") }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("settle" as const), index: fc.nat(5), choice: fc.nat(3) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant("deliver" as const),
      how: fc.constantFrom<"ok" | "threw" | "lost">("ok", "ok", "ok", "threw", "lost"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("withdraw" as const), request: fc.nat(7) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("turn" as const),
      what: fc.constantFrom<"start" | "cancel" | "end" | "deadline">("start", "start", "start", "cancel", "end", "deadline"),
      policyLater: fc.boolean(),
      fourEyes: fc.constantFrom<FourEyes>("none", "none", "not_prompter", "two_approvals"),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("join" as const), client: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("leave" as const), client: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("ruleCreated" as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant("unseen" as const), gate: fc.constantFrom<"go" | "held" | "later">("go", "held", "later") }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("evict" as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("gone" as const) }) },
);

/**
 * What answering `choice` does now, as the model knows roles and four eyes (protocol/people/answering.ts
 * states them): observers never answer, members only their own turn's requests and never approve one
 * under four eyes, the prompter does not approve under not_prompter, an approval under two_approvals
 * is first recorded, then needs a second, distinct person.
 */
function oracle(w: World, client: string, asked: Asked, choice: Choice): "refused" | "recorded" | "commit" {
  if (choice === "bogus") return "refused";
  const role = ROLES[client];
  const turn = w.table.turn;
  const own = turn.state !== "idle" && turn.prompter === `subject:${client}`;
  if (role === "observer" || (role === "member" && !own)) return "refused";
  const approval = choice === "a1" || choice === "aa";
  if (!approval || asked.fourEyes === "none") return "commit";
  if (role === "member" || (asked.fourEyes === "not_prompter" && own)) return "refused";
  if (asked.fourEyes === "not_prompter") return "commit";
  const approvals = w.approvals.get(asked.permId) ?? new Set();
  if (approvals.has(`subject:${client}`)) return "refused";
  return approvals.size === 0 ? "recorded" : "commit";
}

function cancelTurn(w: World, by: DecidedBy, next: TurnFacts): void {
  const before = w.table.pending().map((p) => p.permId);
  w.table.turn = next;
  w.machine.cancelAll(by);
  check(w.table.pending().length === 0, `after the turn's ${by.type}, requests are still pending`);
  for (const permId of before) {
    const asked = w.asked.find((a) => a.permId === permId)!;
    const frames = w.handoff.filter((h) => h.frame.type === "response" && h.frame.id === asked.agentReqId);
    check(
      frames.some(
        (h) => h.frame.type === "response" && JSON.stringify(h.frame.result) === JSON.stringify({ outcome: { outcome: "cancelled" } }),
      ),
      `request ${permId} pending at the turn's ${by.type} was not answered cancelled`,
    );
    asked.expected = "cancelled";
  }
}

function run(w: World, c: Command): void {
  const { table, machine } = w;
  switch (c.t) {
    case "ask": {
      const agentReqId = w.nextAgentId++;
      const permId = table.nextSeq();
      const pendingBefore = table.pendingCount();
      const raw = c.raw !== false;
      const toolCall = {
        toolCallId: `tc${agentReqId}`,
        title: c.mode,
        kind: "execute",
        ...(raw ? { rawInput: { command: "git status" } } : {}),
      };
      const params = { sessionId: "s", toolCall, options: OPTIONS };
      const turn = table.turn.state === "running" ? table.turn.gwId : undefined;
      const asked: Asked = { agentReqId, permId, mode: c.mode, lost: false, fourEyes: w.fourEyes, turn, raw, previous: [] };
      w.asked.push(asked);
      machine.ask(1, agentReqId, JSON.stringify({ jsonrpc: "2.0", id: agentReqId, params }), params);
      if (table.turn.state !== "running") asked.expected = "cancelled";
      else if (pendingBefore >= PENDING_LIMIT) asked.expected = "error";
      return;
    }
    case "answer": {
      const client = CLIENTS[c.client]!;
      const asked = w.asked[c.request % Math.max(1, w.asked.length)];
      if (!asked || !w.attached.has(client)) return; // nothing to answer, or the socket is gone: the shell never calls
      const before = table.pendingById(asked.permId);
      const inboxBefore = w.inbox.get(client)!.length;
      const toAgentBefore = w.handoff.length;
      const rememberedBefore = w.remembered.length;
      const answer = c.choice === "error" ? { error: { code: -32800, message: "cancelled" } } : { result: resultOf(c.choice, c.client) };
      w.answering = c.client;
      machine.answer(client, attachment(client), asked.permId, answer);
      w.answering = null;
      const after = table.pendingById(asked.permId);
      const refused = w.inbox
        .get(client)!
        .slice(inboxBefore)
        .some((m) => (m as { error?: unknown }).error !== undefined);
      if (refused) check(after !== undefined, `a refused answer to ${asked.permId} resolved it`);
      if (!before?.asking || c.choice === "error") {
        check(w.handoff.length === toAgentBefore, `an answer to ${asked.permId}, not pending with people or declined, went to the agent`);
        return;
      }
      const would = oracle(w, client, asked, c.choice);
      check(
        (would === "commit") === (after === undefined),
        `answer ${c.choice} of ${client} (${ROLES[client]}, four eyes ${asked.fourEyes}) to ${asked.permId}: ${would}, resolved ${after === undefined}`,
      );
      // A refused answer is never silent: its client is told why (and the request stays pending, above).
      check(
        (would === "refused") === refused,
        `answer ${c.choice} of ${client} (${ROLES[client]}, four eyes ${asked.fourEyes}) to ${asked.permId}: ${would}, told it was refused ${refused}`,
      );
      if (asked.fourEyes !== "none") w.ways.push(`four eyes: ${would}`);
      if (would === "recorded") {
        check(w.handoff.length === toAgentBefore, `a first approval of ${asked.permId} went to the agent`);
        w.approvals.set(asked.permId, new Set([`subject:${client}`]));
      }
      if (would !== "commit") return;
      asked.expected = c.choice === "aa" ? "a1" : c.choice;
      asked.answeredBy = client;
      if (c.choice === "aa") {
        // A rule only from someone who may make rules, for an operation a rule may cover (not under four eyes).
        const remembered = w.remembered.slice(rememberedBefore).includes(`${asked.permId}:allow_always`);
        const may = ROLES[client] === "approver" && asked.fourEyes === "none" && asked.raw;
        check(remembered === may, `an "always" answer of a ${ROLES[client]} (four eyes ${asked.fourEyes}): remembered ${remembered}`);
        if (!remembered)
          check(
            w.notices.some((n) => n.method === GATEWAY_NOTIFICATIONS.ruleNotCreated),
            `no rule_not_created for an "always" that made no rule`,
          );
      }
      return;
    }
    case "change": {
      // The agent updates the tool call of a request: its command (a new operation) or only its status.
      const asked = w.asked[c.request % Math.max(1, w.asked.length)];
      if (!asked) return;
      const before = table.pendingById(asked.permId);
      const toolCallId = `tc${asked.agentReqId}`;
      const patch =
        c.what === "command"
          ? { sessionUpdate: "tool_call_update", toolCallId, rawInput: { command: `git push --force origin v${w.now++}` } }
          : { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress", rawOutput: { n: w.now++ } };
      table.applyToolCall(patch);
      machine.toolCallChanged(toolCallId, patch);
      if (!before) return;
      if (c.what === "status") {
        check(table.isPending(asked.permId), `a status-only update withdrew ${asked.permId}`);
        return;
      }
      check(!table.isPending(asked.permId), `request ${asked.permId} still pending after its operation changed`);
      check(askedAgain(w, asked), `request ${asked.permId} changed and was not asked again`);
      return;
    }
    case "answerOld": {
      // A client answers the copy of a request that was asked again since: refused aloud, nothing reaches the agent.
      const client = CLIENTS[c.client]!;
      const asked = w.asked[c.request % Math.max(1, w.asked.length)];
      const old = asked?.previous.at(-1);
      if (!asked || old === undefined || !w.attached.has(client)) return;
      const inboxBefore = w.inbox.get(client)!.length;
      const toAgentBefore = w.handoff.length;
      machine.answer(client, attachment(client), old, { result: resultOf("a1") });
      check(w.handoff.length === toAgentBefore, `an answer to ${old}, asked again since, went to the agent`);
      const told = w.inbox
        .get(client)!
        .slice(inboxBefore)
        .some((m) => (m as { error?: { data?: { reason?: string } } }).error?.data?.reason === "operation_changed");
      check(told, `an answer to ${old}, asked again since, was not refused as changed`);
      return;
    }
    case "link": {
      const asked = w.asked[c.request % Math.max(1, w.asked.length)];
      const pending = asked ? table.pendingById(asked.permId) : undefined;
      // approval-links.ts takeAnswer hands over only a request people are asked.
      // Under four eyes a link only rejects (notify.ts linkOptions).
      if (!asked || !pending?.asking || (pending.fourEyes && c.option !== "r1")) return;
      machine.answerFromLink(pending, c.option, { type: "link", linkId: "l", targetId: "t", target: "slack" });
      check(!table.isPending(asked.permId), `a link's answer left ${asked.permId} pending`);
      asked.expected = c.option;
      return;
    }
    case "settle": {
      if (w.later.length === 0) return;
      const [later] = w.later.splice(c.index % w.later.length, 1);
      later!.fire(c.choice);
      return;
    }
    case "deliver": {
      const next = w.handoff.shift();
      if (!next) return;
      const frame = next.frame;
      const asked = frame.type === "response" ? w.asked.find((a) => a.agentReqId === frame.id) : undefined;
      if (next.frame.type === "response" && c.how === "ok") {
        const got = w.delivered.get(next.frame.id) ?? [];
        got.push(next.frame);
        w.delivered.set(next.frame.id, got);
      }
      // Lost: the agent never gets it (a frame without `after` — a refusal, a -32800 — is not tried again either).
      if (asked && (c.how === "lost" || (!next.after && c.how !== "ok"))) asked.lost = true;
      // Its outcome may rewrite the resolution (undelivered): the request counts as in flight until the callback returns.
      next.after?.(c.how === "ok", c.how === "threw");
      if (next.permId !== undefined && next.after) {
        const n = table.inFlight.get(next.permId)! - 1;
        if (n === 0) table.inFlight.delete(next.permId);
        else table.inFlight.set(next.permId, n);
      }
      if (asked && c.how === "threw" && next.after) {
        // Asked again (a person's or a rule's answer, the turn running): the next valid answer is the one the
        // agent gets. Otherwise (a cancel, the turn over) it is audited as withdrawn and not tried again.
        if (table.isPending(asked.permId)) asked.expected = asked.answeredBy = undefined;
        else if (!askedAgain(w, asked)) asked.lost = true;
      }
      return;
    }
    case "withdraw": {
      const asked = w.asked[c.request % Math.max(1, w.asked.length)];
      if (!asked) return;
      const was = table.isPending(asked.permId);
      const withdrew = machine.withdrawnByAgent(1, asked.agentReqId);
      check(withdrew === was, `withdrawing ${asked.permId}: pending ${was}, withdrawn ${withdrew}`);
      check(!table.isPending(asked.permId), `withdrawn ${asked.permId} still pending`);
      if (withdrew) asked.expected = "withdrawn";
      return;
    }
    case "turn": {
      const turn = table.turn;
      if (c.what === "start" && turn.state === "idle") {
        w.policyLater = c.policyLater;
        w.fourEyes = c.fourEyes ?? "none";
        table.turn = { state: "running", gwId: ++w.gwId, prompter: "subject:c0", fromSeq: table.lastSeq };
      } else if (c.what === "cancel" && turn.state === "running") {
        cancelTurn(w, { type: "cancel", connectionId: "c0", user: "c0" }, { ...turn, state: "cancelling" });
      } else if (c.what === "end" && turn.state !== "idle") {
        cancelTurn(w, { type: "turn_end" }, { state: "idle" });
      } else if (c.what === "deadline") {
        const due = Math.min(...table.pending().map((p) => p.deadlineAt));
        if (!Number.isFinite(due)) return;
        w.now = Math.max(w.now, due);
        cancelTurn(w, { type: "deadline" }, turn.state === "running" ? { ...turn, state: "cancelling" } : turn);
      }
      w.now += 1_000;
      return;
    }
    case "join": {
      const client = CLIENTS[c.client]!;
      if (w.attached.has(client)) return;
      w.attached.add(client);
      w.inbox.set(client, []);
      w.resends.delete(client);
      machine.sendPendingTo(client);
      machine.clientsChanged();
      return;
    }
    case "leave": {
      const client = CLIENTS[c.client]!;
      if (!w.attached.has(client)) return;
      machine.clientsChanged(client);
      w.attached.delete(client);
      return;
    }
    case "unseen": {
      w.gate = c.gate;
      return;
    }
    case "ruleCreated": {
      // A rule that matches the requests waiting now (the next consults decide as before).
      w.ruleCreated = true;
      machine.reconsider();
      w.ruleCreated = false;
      return;
    }
    case "gone": {
      // The agent's connection ended (agent-link.ts gone): every pending request withdrawn; the agent will answer none.
      for (const pending of table.pending()) {
        machine.withdraw(pending, { type: "agent_disconnected", reason: "the agent left" });
        w.asked.find((a) => a.permId === pending.permId)!.lost = true;
      }
      check(table.pending().length === 0, "requests pending after the agent left");
      return;
    }
    case "evict": {
      // An object is evicted only once idle: nothing awaited in memory.
      if (w.later.length > 0 || w.handoff.some((h) => h.after)) return;
      table.reloaded();
      w.machine = w.build();
      return;
    }
  }
}

/**
 * The request was asked again as a new one (the agent changed its operation): the model follows the new
 * one; nothing of the old carries over. False when it was not.
 */
function askedAgain(w: World, asked: Asked): boolean {
  const again = [...w.table.rows.entries()].filter(([, r]) => r.request?.agentReqId === asked.agentReqId).map(([k]) => k);
  const newest = Math.max(...again);
  if (newest <= asked.permId) return false;
  asked.previous.push(asked.permId);
  w.approvals.delete(asked.permId);
  asked.permId = newest;
  asked.expected = asked.answeredBy = undefined;
  return true;
}

/** What a client holds: the copies it was sent and not told to withdraw. */
function heldCopies(w: World, client: string): Set<number> {
  const held = new Set<number>();
  for (const m of w.inbox.get(client) ?? []) {
    const msg = m as { id?: number; method?: string; params?: { requestId?: number } };
    if (msg.method === CLIENT_METHODS.sessionRequestPermission && typeof msg.id === "number") held.add(-msg.id);
    if (msg.method === CANCEL_REQUEST && typeof msg.params?.requestId === "number") held.delete(-msg.params.requestId);
  }
  return held;
}

/** The tool call each copy a client holds shows (the latest copy of each request). */
function shownCopies(w: World, client: string): Map<number, Record<string, unknown>> {
  const shown = new Map<number, Record<string, unknown>>();
  const held = heldCopies(w, client);
  for (const m of w.inbox.get(client) ?? []) {
    const msg = m as { id?: number; method?: string; params?: { toolCall?: Record<string, unknown> } };
    if (msg.method === CLIENT_METHODS.sessionRequestPermission && typeof msg.id === "number" && held.has(-msg.id))
      shown.set(-msg.id, msg.params?.toolCall ?? {});
  }
  return shown;
}

/** The client whose answer resolved `permId` (its edge dropped its copy with the answer), if a person's did. */
function winner(w: World, permId: number): string | undefined {
  return w.asked.find((a) => a.permId === permId)?.answeredBy;
}

function invariants(w: World): void {
  check(w.table.violations.length === 0, w.table.violations.join("; "));
  for (const [id, frames] of w.delivered) check(frames.length <= 1, `the agent got ${frames.length} answers to its request ${id}`);
  // The first valid answer (a person's, a link's, the turn's cancel, the agent's withdrawal) is the one the agent gets.
  for (const asked of w.asked) {
    const got = w.delivered.get(asked.agentReqId)?.[0];
    if (!got || got.type !== "response" || asked.expected === undefined) continue;
    const said = got.error ? (isWithdrawal(got.error) ? "withdrawn" : "error") : outcomeOf(got.result);
    check(said === asked.expected, `request ${asked.permId}: the agent got ${said}, the first valid answer was ${asked.expected}`);
  }
  for (const client of w.attached) {
    for (const permId of heldCopies(w, client)) {
      if (w.table.isPending(permId)) continue;
      check(winner(w, permId) === client, `${client} still holds a copy of ${permId}, resolved by ${winner(w, permId) ?? "no person"}`);
    }
  }
  // What every client holds is what the agent would run: a pending request's copy shows its tool call as
  // the row holds it now (the agent changed it since: asked again, the old copy withdrawn).
  for (const client of w.attached) {
    for (const [permId, toolCall] of shownCopies(w, client)) {
      const pending = w.table.pendingById(permId);
      if (!pending?.toolCallId) continue;
      const row = w.table.toolCall(pending.toolCallId)!;
      check(
        operationHash(toolCall) === operationHash(row),
        `${client} holds a copy of ${permId} showing ${JSON.stringify(toolCall.rawInput)}, the agent would run ${JSON.stringify(row.rawInput)}`,
      );
    }
  }
  // A request without raw input is never allowed by a rule (a reject rule may answer it).
  for (const [permId, row] of w.table.rows) {
    if (!row.request || row.resolved === null || row.request.toolCall?.rawInput !== undefined) continue;
    const resolved = JSON.parse(row.resolved) as { params?: { decidedBy?: DecidedBy; outcome?: { optionId?: string } } };
    if (resolved.params?.decidedBy?.type === "rule")
      check(resolved.params.outcome?.optionId !== "a1", `request ${permId} without raw input was allowed by a rule`);
  }
  // No rule allows a step the tenant's unseen changes did not let go (decision 0046), and only a held
  // request's resolution may mark them seen.
  for (const [permId, row] of w.table.rows) {
    if (!row.request || row.resolved === null) continue;
    const resolved = JSON.parse(row.resolved) as { params?: { decidedBy?: DecidedBy; outcome?: { optionId?: string } } };
    if (resolved.params?.decidedBy?.type === "rule" && resolved.params.outcome?.optionId === "a1") {
      const said = w.gated.get(row.request.toolCallId ?? "");
      check(said === "go", `request ${permId} was allowed by a rule while the unseen changes said ${said ?? "nothing"}`);
    }
  }
  // Only what a request showed is marked seen (decision 0064): the listed change its card named, never one it
  // was not sent; one no diff shows (9) only once a person accepted it, never one still running (10, decision 0068).
  check(
    w.seen.every((ids) => ["[7]", "[7,9]"].includes(JSON.stringify(ids))) && (w.seen.length === 0 || w.shownHold),
    `seen was called with ${JSON.stringify(w.seen)} though no request showed those changes`,
  );
  check(
    w.seenFrom.every((client) => client !== null && client < 2),
    `seen was called by ${JSON.stringify(w.seenFrom)}: only an answer naming the request's own list clears anything`,
  );
  check(
    w.seen.every((ids, i) => !ids.includes(9) || w.seenFrom[i] === 0),
    `seen was called with ${JSON.stringify(w.seen)}: change 9 has no diff, and the answer that cleared it did not accept it`,
  );
  // Four eyes that nobody attached can approve is told (`four_eyes_unsatisfiable`), at least once since it became so.
  for (const p of w.table.pending()) {
    const asked = w.asked.find((a) => a.permId === p.permId)!;
    if (!p.asking || asked.fourEyes === "none") continue;
    const approved = w.approvals.get(p.permId) ?? new Set<string>();
    const can = [...w.attached].some((c) => ROLES[c] === "approver" && !approved.has(`key:k_${c}`));
    if (can) continue;
    check(
      w.notices.some((n) => n.method === GATEWAY_NOTIFICATIONS.fourEyesUnsatisfiable && n.params.toolCallId === p.toolCallId),
      `nobody attached can approve ${p.permId} (four eyes ${asked.fourEyes}), and nobody was told`,
    );
  }
  const turn = w.table.turn;
  for (const p of w.table.pending()) {
    const asked = w.asked.find((a) => a.permId === p.permId)!;
    check(turn.state === "running", `request ${p.permId} pending outside a running turn`);
    check(asked.turn === turn.gwId, `request ${p.permId} of turn ${asked.turn} pending in turn ${turn.gwId}`);
  }
}

function isWithdrawal(error: unknown): boolean {
  return (error as { code?: number }).code === ErrorCode.requestCancelled;
}

function outcomeOf(result: unknown): string {
  const outcome = (result as { outcome?: { outcome?: string; optionId?: string } } | undefined)?.outcome;
  return outcome?.outcome === "selected" ? String(outcome.optionId) : String(outcome?.outcome);
}

/** Every callback fires, every hand-off delivers, the turn ends: nothing may be left. */
function quietEnd(w: World): void {
  for (let i = 0; i < 1000 && (w.later.length > 0 || w.handoff.length > 0); i++) {
    if (w.later.length > 0) run(w, { t: "settle", index: 0, choice: 0 });
    else run(w, { t: "deliver", how: "ok" });
    invariants(w);
  }
  run(w, { t: "turn", what: "end", policyLater: false });
  for (let i = 0; i < 1000 && (w.later.length > 0 || w.handoff.length > 0); i++) {
    if (w.later.length > 0) run(w, { t: "settle", index: 0, choice: 0 });
    else run(w, { t: "deliver", how: "ok" });
  }
  invariants(w);
  check(w.table.pending().length === 0, "requests pending after the quiet end");
  for (const asked of w.asked) {
    const n = (w.delivered.get(asked.agentReqId) ?? []).length;
    if (asked.lost) check(n <= 1, `request ${asked.permId} answered ${n} times`);
    else check(n === 1, `request ${asked.permId} (${asked.mode}) answered ${n} times, expected once`);
  }
  for (const client of w.attached) {
    for (const permId of heldCopies(w, client)) check(winner(w, permId) === client, `${client} still holds a copy of ${permId} at the end`);
  }
}

/** How the generated runs resolved their requests: the property checks it reached every way (its precondition). */
const SEEN: Record<string, number> = {};
function runAll(commands: Command[], fourEyes: FourEyes = "none"): void {
  const w = new World();
  w.fourEyes = fourEyes;
  const first = w.machine;
  const stat = (k: string) => (SEEN[k] = (SEEN[k] ?? 0) + 1);
  for (const c of commands) {
    run(w, c);
    invariants(w);
  }
  for (const a of w.asked) {
    const row = w.table.rows.get(a.permId);
    const resolved = row?.resolved
      ? (JSON.parse(row.resolved) as { params?: { decidedBy?: DecidedBy }; decidedBy?: DecidedBy })
      : undefined;
    stat(resolved ? (resolved.params?.decidedBy ?? resolved.decidedBy)!.type : "pending");
    if (a.lost) stat("lost");
    if (a.previous.length > 0) stat("operation_changed");
  }
  for (const c of w.attached) for (const m of w.inbox.get(c)!) if ((m as { error?: unknown }).error) stat("refused");
  if (w.machine !== first) stat("evicted");
  for (const way of w.ways) stat(way);
  quietEnd(w);
}

const FIXED: [string, Command[], FourEyes?][] = [
  // Found while writing the model (the model was wrong, the machine right): kept as fixed cases.
  [
    "an answer whose hand-off is lost is audited as withdrawn: rewritten once, not resolved twice",
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "deliver", how: "lost" },
    ],
  ],
  [
    "a `cancelled` whose hand-off throws after the turn's cancel is not asked again outside the turn",
    [
      { t: "ask", mode: "none" },
      { t: "turn", what: "cancel", policyLater: false },
      { t: "deliver", how: "threw" },
    ],
  ],
  [
    // The planted bug that found it (decision 0046): a rule's allow resolved although the unseen changes,
    // answering later, held it.
    "a rule created while a request waits does not allow it when the unseen changes, answering later, hold it",
    [
      { t: "ask", mode: "none", raw: true },
      { t: "unseen", gate: "later" },
      { t: "ruleCreated" },
      { t: "settle", index: 0, choice: 1 },
      { t: "withdraw", request: 0 },
      { t: "settle", index: 0, choice: 0 },
      { t: "change", request: 0, what: "command" },
      { t: "ruleCreated" },
      { t: "turn", what: "start", policyLater: false, fourEyes: "none" },
    ],
  ],
  [
    // Decision 0068: client 0 accepts 7, 9, 10 and 11; only 9 is a listed change without a diff whose step finished.
    "a person's allow that accepts what a command may have written clears that change, not one still running nor one with a diff",
    [
      { t: "unseen", gate: "held" },
      { t: "ask", mode: "allow" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "deliver", how: "ok" },
    ],
  ],
  [
    "an approver's allow that names and accepts every change against a list it was not sent clears nothing",
    [
      { t: "unseen", gate: "held" },
      { t: "join", client: 3 },
      { t: "ask", mode: "allow" },
      { t: "answer", client: 3, request: 0, choice: "a1" },
      { t: "deliver", how: "ok" },
    ],
  ],
  [
    "a held request is asked of people: a rule's allow never answers it, a person's allow does",
    [
      { t: "unseen", gate: "held" },
      { t: "ask", mode: "allow" },
      { t: "answer", client: 1, request: 0, choice: "a1" },
      { t: "deliver", how: "ok" },
      { t: "unseen", gate: "go" },
      { t: "ask", mode: "allow" },
    ],
  ],
  [
    "the answerer's copy ends with its answer, also when that answer is then lost",
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "deliver", how: "lost" },
      { t: "ask", mode: "none" },
      { t: "join", client: 0 },
      { t: "settle", index: 0, choice: 0 },
      { t: "ruleCreated" },
      { t: "turn", what: "start", policyLater: false },
    ],
  ],
  [
    // Found by the model (decision 0033): the turn check did not ask which turn, and the request was
    // asked again in the new turn. It is withdrawn now: a later turn's people never see it.
    "a rule's answer whose hand-off throws after its turn ended and another began is withdrawn, not asked in the new turn",
    [
      { t: "ask", mode: "reject" },
      { t: "turn", what: "end", policyLater: false },
      { t: "turn", what: "start", policyLater: false, fourEyes: "two_approvals" },
      { t: "deliver", how: "threw" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "evict" },
      { t: "answer", client: 1, request: 0, choice: "a1" },
    ],
  ],
  [
    'an approver\'s "always" made a rule; after its hand-off threw, a member\'s "always" makes none',
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 1, request: 0, choice: "aa" },
      { t: "deliver", how: "threw" },
      { t: "answer", client: 0, request: 0, choice: "aa" },
    ],
  ],
  // The counterexamples of the bugs planted to try the model (docs/decisions/0033-session-permission-machine.md).
  [
    "a second answer finds no copy: the others are withdrawn when the first wins",
    [
      { t: "turn", what: "start", policyLater: false },
      { t: "ask", mode: "none" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
    ],
  ],
  [
    "an option not offered is refused, never taken for another",
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 0, request: 0, choice: "bogus" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "link", request: 0, option: "a1" },
    ],
  ],
  [
    "the turn's end answers `cancelled` also what the rules are still deciding",
    [{ t: "ask", mode: "later" }, { t: "ask", mode: "none" }, { t: "ruleCreated" }, { t: "turn", what: "end", policyLater: false }],
  ],
  [
    "an observer's answer is refused and told so",
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 2, request: 0, choice: "a1" },
    ],
  ],
  [
    "the agent's withdrawal withdraws every copy, also for a client attaching after an eviction",
    [{ t: "ask", mode: "none" }, { t: "withdraw", request: 0 }, { t: "ask", mode: "none" }, { t: "evict" }, { t: "join", client: 0 }],
  ],
  [
    "a request is resolved as it is answered, not when the answer is delivered",
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "answer", client: 1, request: 0, choice: "r1" },
    ],
  ],
  [
    "an undelivered `cancelled` does not reopen a request after the turn",
    [
      { t: "ask", mode: "none" },
      { t: "turn", what: "cancel", policyLater: false },
      { t: "deliver", how: "threw" },
      { t: "ask", mode: "none" },
    ],
  ],
  [
    'an approver\'s "always" is remembered and reaches the agent as "once"',
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 1, request: 0, choice: "aa" },
      { t: "evict" },
      { t: "settle", index: 0, choice: 0 },
      { t: "deliver", how: "ok" },
    ],
  ],
  [
    "a request people were asked before an eviction is answered after it",
    [{ t: "ask", mode: "none" }, { t: "evict" }, { t: "answer", client: 0, request: 0, choice: "a1" }],
  ],
  [
    "two approvals: the first is recorded, the same person's second refused, a second approver's commits",
    [
      { t: "ask", mode: "none" },
      { t: "answer", client: 1, request: 0, choice: "a1" },
      { t: "answer", client: 1, request: 0, choice: "a1" },
      { t: "join", client: 3 },
      { t: "answer", client: 3, request: 0, choice: "a1" },
    ],
    "two_approvals",
  ],
  // Decision 0040: the operation is frozen when asked. Found while writing the model (the machine was wrong): an
  // answer whose hand-off threw after the agent changed the operation was asked again as it was frozen.
  [
    "an answer whose hand-off throws after the agent changed the operation is asked again as the new operation",
    [
      { t: "ask", mode: "none", raw: true },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "change", request: 0, what: "command" },
      { t: "deliver", how: "threw" },
      { t: "answerOld", client: 0, request: 0 },
      { t: "evict" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "change", request: 0, what: "command" },
      { t: "withdraw", request: 0 },
    ],
  ],
  [
    "a rule's answer whose hand-off throws after the agent changed the operation: the new one is judged, its answer lost once",
    [
      { t: "ask", mode: "reject", raw: true },
      { t: "change", request: 0, what: "command" },
      { t: "deliver", how: "threw" },
      { t: "deliver", how: "lost" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
    ],
  ],
  // The planted bugs' counterexamples: the row judged instead of the frozen operation (never asked again),
  // and an allow rule answering a request without raw input.
  [
    "a changed operation withdraws the request and asks again; the old copy's answer is refused",
    [
      { t: "ask", mode: "none", raw: true },
      { t: "change", request: 0, what: "command" },
      { t: "answerOld", client: 1, request: 0 },
      { t: "ask", mode: "none", raw: true },
      { t: "gone" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "deliver", how: "ok" },
    ],
  ],
  [
    "a status-only update does not ask again",
    [
      { t: "ask", mode: "none", raw: true },
      { t: "change", request: 0, what: "status" },
      { t: "answer", client: 0, request: 0, choice: "a1" },
    ],
  ],
  [
    "an allow rule never answers a request without raw input",
    [
      { t: "ask", mode: "allow", raw: false },
      { t: "gone" },
      { t: "join", client: 0 },
      { t: "answer", client: 0, request: 0, choice: "a1" },
      { t: "ask", mode: "none", raw: true },
      { t: "deliver", how: "ok" },
    ],
  ],
  [
    'an approver\'s "always" on a request without raw input applies once and makes no rule',
    [
      { t: "ask", mode: "none", raw: false },
      { t: "answer", client: 1, request: 0, choice: "aa" },
    ],
  ],
  [
    "the last approver leaving a four-eyes request: everyone is told nobody attached can approve it",
    [
      { t: "ask", mode: "none" },
      { t: "leave", client: 1 },
    ],
    "not_prompter",
  ],
];

describe("permission machine (protocol/permission-machine.ts), model-based", () => {
  it(
    "first valid answer wins, one answer per request, every copy withdrawn or answered, across every interleaving and evictions",
    () => {
      fc.assert(
        fc.property(
          fc.constantFrom<FourEyes>("none", "none", "not_prompter", "two_approvals"),
          fc.array(command, { minLength: 5, maxLength: 60, size: "max" }),
          (fourEyes, commands) => runAll(commands, fourEyes),
        ),
        { numRuns: RUNS },
      );
      for (const way of [
        "person",
        "rule",
        "link",
        "cancel",
        "turn_end",
        "deadline",
        "agent_withdrew",
        "agent_disconnected",
        "operation_changed",
        "refused",
        "lost",
        "evicted",
        "four eyes: refused",
        "four eyes: recorded",
        "four eyes: commit",
      ])
        expect(SEEN[way] ?? 0, `no generated run reached "${way}"`).toBeGreaterThan(0);
    },
    PROPERTY_TIMEOUT_MS,
  );

  for (const [name, commands, fourEyes] of FIXED) it(name, () => runAll(commands, fourEyes));

  it("a tool call the agent ran unasked: every client is told, then the shell's ranUnasked port is handed the notice's params, once", () => {
    const w = new World();
    w.table.wasAsked = () => false; // this tool call was never asked about (the model's all are)
    w.table.applyToolCall({ toolCallId: "t_unasked", title: "write", kind: "edit", locations: [{ path: "/w/a.txt" }] });
    w.machine.toolCallChanged("t_unasked", { status: "in_progress" });
    expect(w.ranUnasked).toEqual([]);
    w.table.applyToolCall({ toolCallId: "t_unasked", status: "completed" });
    w.machine.toolCallChanged("t_unasked", { status: "completed" });
    w.machine.toolCallChanged("t_unasked", { status: "completed" });
    const told = w.notices.filter((n) => n.method === GATEWAY_NOTIFICATIONS.ranUnasked);
    expect(told).toHaveLength(1);
    expect(w.ranUnasked).toEqual([told[0]?.params]);
    expect(w.ranUnasked[0]).toMatchObject({ toolCallId: "t_unasked", kind: "edit" });
  });
});
