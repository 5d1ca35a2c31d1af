// Between D1 rows and the pure engine in protocol/rules: compiling a tenant's rows, deciding a
// session's request, and turning a person's *_always choice into a row to store.

import type { FourEyesSettings } from "../../core/principal";
import type { NewDecisionRule } from "../../db/queries/decision-rules";
import type { DecisionRuleRow } from "../../db/schema";
import {
  type CompiledRules,
  type DerivedRule,
  type DeriveResult,
  type Rule,
  compileRules,
  decide,
  deriveRule,
  exactHash,
  matcherText,
  parseMatcher,
} from "../../protocol/rules";
import { randomId } from "../../protocol/ids";
import type { DecideRequest, DecideResult, RememberRequest } from "./contract";

export interface CompiledTenantRules {
  compiled: CompiledRules;
  /** The rules as compiled, handed to sessions in a snapshot (session/tenant-rules.ts). */
  list: Rule[];
}

function ruleFromRow(row: DecisionRuleRow): Rule | null {
  let matcher: unknown;
  try {
    matcher = JSON.parse(row.matcher);
  } catch {
    return null;
  }
  const parsed = parseMatcher(matcher);
  if (!parsed) return null; // a row the engine does not understand never matches
  return {
    id: row.id,
    decision: row.decision,
    scope: { project: row.scopeProject, user: row.scopeUser, agent: row.scopeAgent },
    matcher: parsed,
    description: row.description,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
  };
}

export function compileTenantRules(rows: DecisionRuleRow[]): CompiledTenantRules {
  return compileRuleList(rows.map(ruleFromRow).filter((r): r is Rule => r !== null));
}

export function compileRuleList(list: Rule[]): CompiledTenantRules {
  return { compiled: compileRules(list), list };
}

export async function decideWith(rules: CompiledTenantRules, request: DecideRequest, now: number): Promise<DecideResult> {
  const hash = rules.compiled.hasExact ? await exactHash(request.toolCall) : undefined;
  return decideWithHash(rules, request, now, hash);
}

/** decideWith once the exact-match hash is known (or not needed: `compiled.hasExact` false): the same answer, with no promise. */
export function decideWithHash(rules: CompiledTenantRules, request: DecideRequest, now: number, hash: string | undefined): DecideResult {
  const d = decide(rules.compiled, {
    toolCall: request.toolCall,
    options: request.options,
    cwd: request.cwd,
    agent: request.agent,
    user: request.user,
    now,
    ...(hash ? { exactHash: hash } : {}),
  });
  if (!d.decision || !d.rule || !d.option) return { decision: null };
  return { decision: d.decision, ruleId: d.rule.id, description: d.rule.description ?? "", optionId: d.option.optionId };
}

export async function deriveFromChoice(request: RememberRequest, fourEyes: FourEyesSettings): Promise<DeriveResult> {
  return deriveRule({
    fourEyes,
    toolCall: request.toolCall,
    optionKind: request.chosen.kind,
    optionName: request.chosen.name,
    cwd: request.cwd,
    agent: request.agent,
    exactHash: await exactHash(request.toolCall),
  });
}

export function toRuleRow(tenantId: string, derived: DerivedRule, request: RememberRequest): NewDecisionRule {
  return {
    id: newRuleId(),
    tenantId,
    decision: derived.decision,
    scopeProject: derived.scope.project,
    scopeAgent: derived.scope.agent,
    scopeUser: derived.scope.user,
    matcher: JSON.stringify(derived.matcher),
    matcherText: matcherText(derived.matcher),
    description: derived.description,
    createdByKey: request.keyId,
    createdByUser: request.user,
    createdFromSession: request.sessionId,
    createdFromToolCall: request.toolCallId,
    createdAt: Date.now(),
  };
}

/** Rule ids sort by creation time, which the API's cursor relies on. */
export function newRuleId(): string {
  return `rule_${Date.now().toString(36).padStart(9, "0")}${randomId("", 10).slice(1)}`;
}
