// Rule hits on their way to D1 (the hit count and last-hit time the rules API shows). A session
// counts the hits of its rules cache and sends them to the RulesObject in batches; the RulesObject
// adds up what its sessions send and flushes that to D1 in batches. Both keep this same tally.

/** Hits of one rule since the last batch: how many, and when the latest was. */
export interface Hits {
  count: number;
  at: number;
}

export class HitTally {
  private readonly hits = new Map<string, Hits>();

  get size(): number {
    return this.hits.size;
  }

  /** Counts `count` hits of a rule, the latest at `at` (batches may arrive out of order: the latest time wins). */
  add(ruleId: string, count: number, at: number): void {
    const hit = this.hits.get(ruleId) ?? { count: 0, at: 0 };
    hit.count += count;
    hit.at = Math.max(hit.at, at);
    this.hits.set(ruleId, hit);
  }

  /** Everything counted since the last take; the tally is empty again. */
  take(): Map<string, Hits> {
    const batch = new Map(this.hits);
    this.hits.clear();
    return batch;
  }
}
