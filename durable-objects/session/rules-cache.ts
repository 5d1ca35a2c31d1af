// What a session knows about its tenant's rules without asking: only "the tenant has no rules at
// all", learnt from the RulesObject's own answer. Such a session skips the rules call for every
// permission request. The knowledge can only ever make the session ask people instead of applying a
// rule, so it can never apply a revoked one; and the RulesObject tells every session that holds it
// (`rulesAppeared`) before the API that created a rule answers. Kept in memory: an evicted session
// simply asks again.

import type { DecideResult } from "../rules/types";

/** The RulesObject's answer when the tenant has no rules: the rules generation it was read at. */
export type DecideForResult = DecideResult & { noRules?: { generation: number } };

export class NoRulesCache {
  private known = false;
  /** The newest rules generation this session was told about; older "no rules" answers are stale. */
  private invalidatedAt = -1;

  get tenantHasNoRules(): boolean {
    return this.known;
  }

  learn(result: DecideForResult): DecideResult {
    if (result.noRules && result.noRules.generation > this.invalidatedAt) this.known = true;
    return result;
  }

  invalidate(generation: number): void {
    this.known = false;
    this.invalidatedAt = Math.max(this.invalidatedAt, generation);
  }
}
