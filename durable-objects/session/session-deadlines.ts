// The SessionObject's one alarm: it fires at or before the earliest permission deadline, notify time,
// audit retry, unindex retry, turn idle time, index write owed (live-index.ts), a dropped client's
// stream lapsing (departures.ts) or a held mode change's deadline (mode-approvals.ts), and does what is due.

import type { SessionMachine } from "../../protocol/session-machine";
import type { LiveStatePublisher } from "../../protocol/live-state";
import type { AuditOutbox } from "./audit-outbox";
import type { ModeApprovals } from "./mode-approvals";
import type { AttachedClients } from "./clients";
import type { Notifier } from "./notify";
import type { SessionStore } from "./store";
import type { TurnWatch } from "./turn-watch";
import type { SessionUnindex } from "./unindex";

/** What has a time the alarm must wake for, and the machine that acts when a turn's time is up. */
export interface DeadlineSources {
  store: SessionStore;
  notifier: Notifier;
  audits: AuditOutbox;
  unindex: SessionUnindex;
  turnWatch: TurnWatch;
  live: LiveStatePublisher;
  clients: AttachedClients;
  machine: SessionMachine;
  modes: ModeApprovals;
}

export class SessionDeadlines {
  /** The alarm as this instance last set it; undefined when not known (a new instance, or it fired). */
  private alarmSetTo: number | undefined;
  private sources: DeadlineSources | undefined;

  constructor(private readonly ctx: DurableObjectState) {}

  /** Given once every source is built (each of them may ask `schedule` before: nothing is set until then). */
  watch(sources: DeadlineSources): void {
    this.sources = sources;
  }

  /**
   * Setting the alarm holds the next output behind it, so it is only ever moved *earlier*: one that
   * fires before anything is due finds nothing to do and sets the next (`fire`). A request asked of
   * people and answered therefore writes no alarm (its deadline is later than the one set), where it
   * wrote two (its deadline, then the idle time back); the price is at most one early wake-up per alarm set.
   */
  schedule(): void {
    const s = this.sources;
    if (!s) return;
    const next = earliest(
      earliest(earliest(s.store.nextDeadline(), s.notifier.nextDue()), s.modes.dueAt()),
      earliest(earliest(s.audits.retryAt(), s.unindex.retryAt()), earliest(s.turnWatch.idleAt(s.store), s.live.dueAt())),
    );
    const due = earliest(next, s.store.meta ? s.clients.departures.nextAt() : undefined);
    if (due === undefined || (this.alarmSetTo !== undefined && this.alarmSetTo <= due)) return;
    this.alarmSetTo = due;
    void this.ctx.storage.setAlarm(due);
  }

  /** The alarm fired: what is due is done, the next set. Ends when the index write it started ends (it never rejects). */
  async fire(): Promise<void> {
    this.alarmSetTo = undefined; // a fired alarm is gone
    const s = this.sources;
    if (!s) return;
    const now = Date.now();
    if (s.audits.waiting() > 0) this.ctx.waitUntil(s.audits.flushOrRetry(() => this.schedule()));
    const unindexAt = s.unindex.retryAt(now);
    // Any alarm tries again: a row is only pending after a delete, when nothing else keeps the alarm busy.
    if (unindexAt !== undefined) this.ctx.waitUntil(s.unindex.retry().then(() => this.schedule()));
    // Any alarm writes what the index is owed, if anything (decision 0049): the timer may have died with an instance.
    const published = s.live.owed() ? s.live.flush() : undefined;
    const idleAt = s.turnWatch.idleAt(s.store);
    if (idleAt !== undefined && idleAt <= now) s.machine.idle();
    const deadline = s.store.nextDeadline();
    if (deadline !== undefined && deadline <= now) s.machine.deadlinePassed();
    s.notifier.onAlarm(now, s.clients.list().length > 0);
    // Clients whose dropped stream lapsed unresumed are announced gone (decision 0060).
    if (s.store.meta) s.clients.announceLapsed(s.store.meta.sessionId);
    this.ctx.waitUntil(s.modes.expire(now)); // held mode changes past their deadline (decision 0061)
    this.schedule();
    await published; // a test that runs the alarm sees the index written
  }
}

function earliest(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
