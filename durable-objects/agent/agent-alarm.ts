// The AgentObject's one alarm, shared by three needs: redelivery of what a session has not taken,
// the watch over a connection lost in a crash (a new instance notices: the relay's `started`), and
// expiring agent keys. It fires at the earliest of what asked for it; `fired` re-arms each need.

import type { Attachment } from "./agent-lines";

/** When the alarm re-sends what a session has not taken (after a restart or a failed call). */
const REDELIVERY_MS = 2_000;
/**
 * While the agent has a session's request to answer, the alarm fires this often. If the object
 * crashed meanwhile (and so lost the agent's connection), the alarm starts a new instance, which
 * notices (the relay's `started`) even when the agent never dials back in.
 */
const WATCH_MS = 10_000;

export class AgentAlarm {
  private redeliveryArmed = false;
  private watchArmed = false;

  constructor(
    private readonly ctx: DurableObjectState,
    /** Closes the connections of a key that expired. */
    private readonly expired: (keyId: string) => void,
  ) {}

  /** The relay's `alarm.watch` port. */
  armWatch(): void {
    if (this.watchArmed) return;
    this.watchArmed = true;
    this.ctx.waitUntil(this.armBy(Date.now() + WATCH_MS));
  }

  /** The relay's `alarm.redeliverSoon` port. */
  armRedelivery(): void {
    if (this.redeliveryArmed) return;
    this.redeliveryArmed = true;
    this.ctx.waitUntil(this.armBy(Date.now() + REDELIVERY_MS));
  }

  /** The alarm fires at the earliest of what asked for it. */
  async armBy(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || at < current) await this.ctx.storage.setAlarm(at);
  }

  /** The alarm fired: expired keys are closed and the next expiry armed; redelivery and the watch may be armed again. */
  fired(): void {
    this.closeExpired();
    this.redeliveryArmed = false;
    this.watchArmed = false;
  }

  /** Agent keys expire: the connection closes then, within seconds, as a client's does. */
  private closeExpired(): void {
    const now = Date.now();
    let next: number | undefined;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as Attachment | undefined;
      const expiresAt = attachment?.expiresAt;
      if (typeof expiresAt !== "number") continue;
      if (expiresAt <= now && attachment?.keyId) this.expired(attachment.keyId);
      else if (expiresAt > now) next = Math.min(next ?? expiresAt, expiresAt);
    }
    if (next !== undefined) this.ctx.waitUntil(this.armBy(next));
  }
}
