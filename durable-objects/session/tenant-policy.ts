// The tenant's four-eyes policy as a session applies it (decision 0028): read from D1 once per turn,
// when the turn starts (the agent has not asked anything yet, so the read is almost always done by
// the time a request needs it), so a policy an admin changes applies from the next turn on. A request
// asked before the read finished waits for it. D1 unable to answer: the last policy this object read,
// else closed world — every operation needs a second person, with a reason that says so.

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
  unaskedRuns: UnaskedRuns | undefined;

  constructor(
    private readonly db: D1Database,
    private readonly store: SessionStore,
  ) {}

  /** A turn started: its policy is read now. */
  turnStarted(gwId: number): void {
    const meta = this.store.meta;
    if (!meta) return;
    // Never rejects: a read that fails, or settings that do not parse, is the last policy read, else every operation held.
    const reading = tenantById(this.db, meta.tenantId)
      .then((tenant) => {
        const settings = tenant ? (JSON.parse(tenant.settings) as TenantSettings) : undefined;
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

  /** The policy of the running turn: at once when read, else the read to wait for (started now if this object lost it). */
  forTurn(gwId: number): FourEyesSettings | undefined | Promise<FourEyesSettings | undefined> {
    if (this.read?.gwId !== gwId) this.turnStarted(gwId);
    return this.read?.policy;
  }
}
