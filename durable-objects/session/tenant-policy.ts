// The tenant's settings as a session applies them, read from D1 and parsed here only. The four-eyes
// policy (decision 0028): read once per turn, when the turn starts (the agent has not asked anything
// yet, so the read is almost always done by the time a request needs it), so a policy an admin
// changes applies from the next turn on. A request asked before the read finished waits for it. D1
// unable to answer: the last policy this object read, else closed world — every operation needs a
// second person, with a reason that says so. What to do with an agent's unasked run (decision 0056):
// as read with the turn's policy, else read now; unreadable is `stop`.

import type { FourEyesSettings, TenantSettings } from "../../core/principal";
import { tenantById } from "../../db/queries/tenants";
import { POLICY_UNKNOWN } from "../../protocol/people/four-eyes";
import { type UnaskedRuns, unaskedRunsOf } from "../../protocol/unasked-runs";
import { sessionLog } from "./session-log";
import type { SessionStore } from "./store";

export class TenantPolicy {
  private read: { gwId: number; policy: Promise<FourEyesSettings | undefined> | FourEyesSettings | undefined } | undefined;
  private lastKnown: FourEyesSettings | undefined | null = null;
  /** The tenant's unaskedRuns as read with the policy (decision 0056), so a run nobody asked about is stopped at once; undefined until read. */
  private unaskedRuns: UnaskedRuns | undefined;

  constructor(
    private readonly db: D1Database,
    private readonly store: SessionStore,
  ) {}

  /** A turn started: its policy is read now. */
  turnStarted(gwId: number): void {
    const meta = this.store.meta;
    if (!meta) return;
    // Never rejects: a read that fails, or settings that do not parse, is the last policy read, else every operation held.
    const reading = this.settings(meta.tenantId)
      .then((settings) => {
        const policy = settings?.fourEyes;
        this.lastKnown = policy;
        this.unaskedRuns = unaskedRunsOf(settings);
        if (this.read?.gwId === gwId) this.read = { gwId, policy };
        return policy;
      })
      .catch((error: unknown) => {
        sessionLog(this.store).warn("session.policy_unavailable", "the tenant's four-eyes policy could not be read", {}, error);
        return this.lastKnown === null ? POLICY_UNKNOWN : this.lastKnown;
      });
    this.read = { gwId, policy: reading };
  }

  /**
   * What the tenant does with a tool call the agent ran unasked: at once as read when the running turn
   * started (every moment lets the agent do more), else read now. Never rejects: unreadable is `stop`
   * (a write nobody approved must not go on because D1 blinked).
   */
  unaskedRunsNow(): UnaskedRuns | Promise<UnaskedRuns> {
    const meta = this.store.meta;
    if (!meta) return "stop";
    if (this.store.turn.state !== "idle" && this.unaskedRuns !== undefined) return this.unaskedRuns;
    return this.settings(meta.tenantId).then(unaskedRunsOf, (error: unknown) => {
      sessionLog(this.store).warn("session.unasked_setting_unavailable", "the tenant's unaskedRuns could not be read; stopping", {}, error);
      return "stop" as const;
    });
  }

  /** The tenant's settings, read and parsed (the one place that does); undefined: no such tenant. Rejects when D1 or the JSON fails. */
  private async settings(tenantId: string): Promise<TenantSettings | undefined> {
    const tenant = await tenantById(this.db, tenantId);
    return tenant ? (JSON.parse(tenant.settings) as TenantSettings) : undefined;
  }

  /** The policy of the running turn: at once when read, else the read to wait for (started now if this object lost it). */
  forTurn(gwId: number): FourEyesSettings | undefined | Promise<FourEyesSettings | undefined> {
    if (this.read?.gwId !== gwId) this.turnStarted(gwId);
    return this.read?.policy;
  }
}
