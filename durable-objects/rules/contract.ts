// The RulesObject's RPC contract: what a session asks the tenant's rules and what it is told (plain
// JSON, so it crosses RPC), and the methods themselves (rules-object.ts implements them; callers
// reach the object through ../objects.ts). One class, two roles (decision 0031): the tenant's *root*
// (named by the tenant id) holds the rules and their generation; each of RULES_SHARDS *shards*
// (`${tenantId}/${index}`) leases them from the root and hands them to the sessions that hash to it.

import type { Grant } from "../../protocol/generation-lease";
import type { Rule } from "../../protocol/rules";
import type { NewUnseenChange, UnseenHold } from "../../protocol/unseen";
import type { CleanLease, ReaderReport, UnseenStep, UnseenStepAnswer } from "../../protocol/unseen-lease";

/** Shards of a tenant's rules: sessions spread over them, so no one object serves every session. */
export const RULES_SHARDS = 64;
/**
 * A session's lease on rules (from its shard): how long it may use them without asking again. A
 * change waits for the leases granted before it to run out, so this (plus the slack) bounds the
 * REST API's answer to a change when a shard cannot be told; short, so that it stays under a second.
 */
export const SESSION_LEASE_MS = 500;
/** A shard's lease on the rules from the root; a session's lease never outlasts its shard's. */
export const SHARD_LEASE_MS = 10_000;
/** How far apart two clocks read at I/O boundaries may be (Workers' Date.now() stands still while code runs). */
export const LEASE_SLACK_MS = 200;

/**
 * How long a change that only widens (a new allow rule, decision 0049) waits for the sessions holding
 * a lease to be told, at each shard, before the API answers; the root waits for its shards a little
 * longer. No fence depends on it: it is how soon "at once" holds for every session, bounded.
 */
export const WIDEN_WAIT_MS = 50;

/**
 * Rule hit counters are sent on at most this often, never on the decision path: a session to the
 * RulesObject (tenant-rules.ts), the RulesObject to D1 (rules-object.ts).
 */
export const HIT_FLUSH_MS = 1000;

interface PermissionOptionJson {
  optionId: string;
  name: string;
  kind: string;
}

export interface DecideRequest {
  sessionId: string;
  agent: string;
  cwd: string;
  /** The user behind the turn (the prompting key's label), for rules scoped to a user. */
  user: string | null;
  /** The tool call as the session's table holds it after applying the request's toolCall. */
  toolCall: Record<string, string | number | boolean | null | object>;
  options: PermissionOptionJson[];
}

export interface DecideResult {
  decision: "allow" | "reject" | null;
  ruleId?: string;
  description?: string;
  optionId?: string;
}

export interface RememberRequest extends DecideRequest {
  /** The option the person chose: an allow_always or reject_always one. */
  chosen: PermissionOptionJson;
  keyId: string;
  toolCallId: string | null;
}

export interface RuleCreated {
  id: string;
  decision: "allow" | "reject";
  description: string;
}

/** Why a person's *_always answer was not remembered; the session tells its clients. */
export interface RuleNotCreated {
  reason: string;
}

/** The tenant's rules at one generation, as the RulesObject hands them to a session. */
export interface RulesSnapshot {
  generation: number;
  rules: Rule[];
  /** How long after the request was sent the session may use these rules without a check. */
  leaseMs: number;
}

/** The RulesObject's RPC methods. */
export interface RulesContract extends Rpc.DurableObjectBranded {
  // ── a shard, for the sessions that hash to it ──
  /** The tenant's rules now, leased to a session that will decide with them. */
  snapshot(sessionId: string): Promise<RulesSnapshot>;
  /** The current generation, leased: a session holding it may use it for `leaseMs` more. */
  check(sessionId: string): Promise<Grant>;
  /** The session has requests waiting on people: tell it of each change (it re-decides them). */
  watch(sessionId: string): void;
  /** Hits of rules the session applied; the shard sends them on to the root in batches. */
  recordHits(hits: [ruleId: string, count: number, at: number][]): void;
  /**
   * From the root: generations older than this are void. Answers once none of this shard's sessions
   * can use one; for a change that only `widens`, once its sessions holding a lease were told (bounded).
   */
  shardChanged(generation: number, widens?: boolean): Promise<void>;
  // ── the root ──
  /** The rules, leased to shard `index`. */
  shardLease(index: number): Promise<RulesSnapshot>;
  /** A shard's batch of hits. */
  shardHits(hits: [ruleId: string, count: number, at: number][]): void;
  /** What the rules would decide, without a session (the REST API's dry run). */
  dryRun(request: DecideRequest): Promise<DecideResult>;
  /** A person's *_always answer, stored as a rule (or why not). */
  remember(request: RememberRequest): Promise<RuleCreated | RuleNotCreated | null>;
  /**
   * The rules changed in D1: a new generation; answers once no session can use an older one. A change
   * that only `widens` (a new allow rule) is not fenced: it answers once the shards were told (bounded).
   */
  changed(widens?: boolean): Promise<void>;
  // ── the root: unseen changes (decision 0046, unseen-changes.ts), gated under clean leases (0058) ──
  /** A step an allow rule would answer: held (unseen changes, or a write while a reader may be open), else let go (noted), maybe with a lease. */
  unseenStep(step: UnseenStep): Promise<UnseenStepAnswer>;
  /** A session's clean lease renewed (null: none can be granted now). */
  unseenRenew(sessionId: string, report: ReaderReport): CleanLease | null;
  /** A session's open readers, whole (a reader finished, a lease ran out). */
  unseenReport(sessionId: string, report: ReaderReport): void;
  /** What an agent changed with nobody asked (a tool call it ran by itself): unseen, once no clean lease lives. */
  unseenNote(changes: NewUnseenChange[]): Promise<void>;
  /** A person allowed a step whose card showed these unseen changes: cleared. */
  unseenSeen(ids: number[]): number;
  /** What is unseen now. */
  unseenNow(): UnseenHold | null;
}
