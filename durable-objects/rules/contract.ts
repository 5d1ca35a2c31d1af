// The RulesObject's RPC contract: what a session asks the tenant's rules and what it is told (plain
// JSON, so it crosses RPC), and the methods themselves (rules-object.ts implements them; callers
// reach the object through ../objects.ts).

import type { Rule } from "../../protocol/rules";

/**
 * Rule hit counters are sent on at most this often, never on the decision path: a session to the
 * RulesObject (rules-cache.ts), the RulesObject to D1 (rules-object.ts).
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
  /** The tenant's rules now, for a session that will decide with them (and is subscribed to pushes). */
  snapshot(sessionId: string): Promise<RulesSnapshot>;
  /** The current generation; also (re)subscribes the session to pushes. */
  check(sessionId: string): number;
  recordHits(hits: [ruleId: string, count: number, at: number][]): void;
  /** What the rules would decide, without a session (the REST API's dry run). */
  dryRun(request: DecideRequest): Promise<DecideResult>;
  /** A person's *_always answer, stored as a rule (or why not). */
  remember(request: RememberRequest): Promise<RuleCreated | RuleNotCreated | null>;
  /** The rules changed in D1: bump the generation and push it; answers once no session can use older rules. */
  changed(): Promise<void>;
}
