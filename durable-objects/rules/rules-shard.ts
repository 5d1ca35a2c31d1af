// A shard of a tenant's rules (decision 0031): the RulesObject named `${tenantId}/${index}` plays it.
// The sessions that hash to it (protocol/generation-lease.ts `shardOf`) take their rules and their
// leases here, never from the root, so a tenant's ten thousand sessions spread over RULES_SHARDS
// objects; the shard holds one leased copy from the root (a LeaseTaker) and leases it on (a
// LeaseGiver), each session's lease ending no later than its own. When the root announces a change
// (`changed`), the shard drops its copy and answers once no session's lease on older rules can still
// be used — the fence the REST API waits for. Then, off the API's path, it tells the sessions that
// have requests waiting on people (`watch`), which re-decide them under the new rules.

import { HitTally } from "../../protocol/hit-tally";
import { type Grant, type Held, LeaseGiver, LeaseTaker } from "../../protocol/generation-lease";
import type { Rule } from "../../protocol/rules";
import { log } from "../../core/log";
import { HIT_FLUSH_MS, LEASE_SLACK_MS, type RulesSnapshot, SESSION_LEASE_MS, WIDEN_WAIT_MS } from "./contract";
import type { RulesStub } from "../objects";

type Copy = Rule[];

/** What the shard needs of the platform: its storage, the root, and the sessions it tells. */
export interface ShardIo {
  sql: SqlStorage;
  waitUntil(promise: Promise<unknown>): void;
  root(): RulesStub;
  rulesChanged(sessionId: string, generation: number): Promise<boolean>;
}

/** Copies of the root's rules that came back stale (a change announced while they travelled) before the shard gives up. */
const MAX_STALE = 3;

export class RulesShard {
  private readonly copy = new LeaseTaker<Copy>(Date.now);
  /** The sessions' leases; its lease length is the test seam's `leaseMs`. */
  readonly giver = new LeaseGiver(
    { now: Date.now, sleepUntil: (at) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()))) },
    0,
    SESSION_LEASE_MS,
    LEASE_SLACK_MS,
  );
  private fetching?: Promise<Held<Copy> | undefined>;
  private readonly hits = new HitTally();
  private flushScheduled = false;
  /** How many times each session asked to be told in this instance: a push's "I wait on nobody" loses to a newer watch. */
  private readonly watchMarks = new Map<string, number>();

  constructor(
    private readonly io: ShardIo,
    private readonly index: number,
  ) {
    io.sql.exec("CREATE TABLE IF NOT EXISTS watching (session_id TEXT PRIMARY KEY)");
  }

  async snapshot(sessionId: string): Promise<RulesSnapshot> {
    const { held, grant } = await this.lease(sessionId);
    return { generation: grant.generation, rules: held.value, leaseMs: grant.leaseMs };
  }

  async check(sessionId: string): Promise<Grant> {
    return (await this.lease(sessionId)).grant;
  }

  watch(sessionId: string): void {
    this.watchMarks.set(sessionId, (this.watchMarks.get(sessionId) ?? 0) + 1);
    this.io.sql.exec("INSERT OR IGNORE INTO watching (session_id) VALUES (?)", sessionId);
  }

  /**
   * The root's news: older rules are void. Answers once no session can still use them; then tells the
   * watching sessions. A change that only widens (a new allow rule, decision 0049) waits out no lease:
   * the sessions holding one are told at once, so their next request takes the new rules, and the
   * shard answers when they took it or after WIDEN_WAIT_MS (a session told later, or never, only asks
   * people what the new rule would have answered: its lease on the older rules is still safe).
   */
  async changed(generation: number, widens = false): Promise<void> {
    this.copy.told(generation);
    if (!widens) {
      await this.giver.advance(generation).fenced;
      this.io.waitUntil(this.tellWatching(generation));
      return;
    }
    // The watching sessions are told by tellWatching (it keeps their list); the other holders here.
    const watching = new Set(this.watching());
    const { told } = this.giver.widen(generation, [], async (sessionId, g) => {
      if (!watching.has(sessionId)) await this.io.rulesChanged(sessionId, g);
    });
    this.io.waitUntil(told);
    this.io.waitUntil(this.tellWatching(generation));
    await Promise.race([told, new Promise((resolve) => setTimeout(resolve, WIDEN_WAIT_MS))]);
  }

  recordHits(hits: [ruleId: string, count: number, at: number][]): void {
    for (const [ruleId, count, at] of hits) this.hits.add(ruleId, count, at);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    this.io.waitUntil(new Promise((resolve) => setTimeout(resolve, HIT_FLUSH_MS)).then(() => this.flushHits()));
  }

  /** This shard's live copy (fetched from the root when it has none), leased on to the session. */
  private async lease(sessionId: string): Promise<{ held: Held<Copy>; grant: Grant }> {
    for (let attempt = 0; attempt < MAX_STALE; attempt++) {
      const held = this.copy.live() ?? (await this.fetch());
      if (!held) continue;
      // Past half its lease: renewed in the background, so sessions rarely wait on the root.
      if (this.copy.dueForRefresh() && !this.fetching) void this.fetch().catch((e: unknown) => this.fetchFailed(e));
      const grant = this.giver.grant(sessionId, held.generation, held.validUntil);
      if (grant) return { held, grant };
      this.copy.drop(held);
    }
    throw new Error("rules: the tenant's rules kept changing while the shard fetched them");
  }

  private fetch(): Promise<Held<Copy> | undefined> {
    const fetching = (this.fetching ??= (async () => {
      const sentAt = Date.now();
      const lease = await this.io.root().shardLease(this.index);
      return this.copy.install(lease, lease.rules, sentAt);
    })().finally(() => {
      if (this.fetching === fetching) this.fetching = undefined;
    }));
    return fetching;
  }

  private fetchFailed(e: unknown): void {
    log("warn", "rules.shard_renew_failed", "renewing a rules shard's lease from the root failed", { shard: this.index }, e);
  }

  /** Sessions with requests waiting on people re-decide them; one that waits on nobody now leaves the list. */
  private async tellWatching(generation: number): Promise<void> {
    await Promise.all(
      this.watching().map(async (sessionId) => {
        const mark = this.watchMarks.get(sessionId);
        try {
          const waiting = await this.io.rulesChanged(sessionId, generation);
          if (!waiting && this.watchMarks.get(sessionId) === mark) {
            this.io.sql.exec("DELETE FROM watching WHERE session_id = ?", sessionId);
            this.watchMarks.delete(sessionId);
          }
        } catch (e) {
          // Kept, and told again at the next change; its requests still wait on people meanwhile.
          log("warn", "rules.push_failed", "telling a waiting session that the rules changed failed", { sessionId }, e);
        }
      }),
    );
  }

  private watching(): string[] {
    return this.io.sql
      .exec<{ session_id: string }>("SELECT session_id FROM watching")
      .toArray()
      .map((r) => r.session_id);
  }

  private flushHits(): void {
    this.flushScheduled = false;
    const batch = [...this.hits.take()].map(([id, h]): [string, number, number] => [id, h.count, h.at]);
    if (batch.length === 0) return;
    // Statistics: a lost batch costs accuracy, never a decision.
    this.io
      .root()
      .shardHits(batch)
      .catch((e: unknown) => log("warn", "rules.shard_hits_failed", "sending rule hits to the root failed", { shard: this.index }, e));
  }
}
