// The unseen-changes gate (decision 0046) decided in the session under a "clean" lease from the
// tenant's root (decision 0058). Pure: the root's SQLite and RPC are passed in (`UnseenRootIo`), the
// session's likewise (`UnseenHolderIo`); durable-objects/rules/unseen-changes.ts and
// durable-objects/session/unseen-holder.ts are the shells. Model-tested in test/unit/unseen-lease.test.ts.
//
// The guarantees (decision 0046's, kept; none depends on a timing but the lease's own end):
// - **No reader answered while an acknowledged change is unseen.** A clean lease says "nothing was
//   unseen when it was granted"; the root grants one only while nothing is unseen and no fence runs.
//   A change is acknowledged (a rule-answered write let go, an unasked run's note answered) only
//   once every lease granted before it was revoked (its holder answered) or has run out by the
//   holder's own clock (the root waits `leaseMs + slack` after its grant).
// - **No rule-answered write overlaps a rule-answered reader anywhere in the tenant.** A session
//   answering readers under its lease keeps them in its own storage before the answer leaves; it
//   reports them whole (`ReaderReport`, numbered: a late report never undoes a newer one) with
//   every call to the root and in its answer to a revocation. A write is let go only after every
//   lease holder answered its revocation, with no reader open but the write's own tool call; a
//   holder that did not answer may have readers nobody knows, so the write is asked of people
//   instead (the writer pays, the readers do not). A holder stays one until it reports.
// - The writing session's own lease is dropped as it sends the write: the usual case (one session
//   working) costs the write no revocation at all. A lease that ran out is dropped in the session's
//   next report; until then a write revokes it too (the holder answers at once).

import type { NewUnseenChange, OpenReader, UnseenHold } from "./unseen";

/** A session's open readers, whole, and the newest lease it no longer uses. */
export interface ReaderReport {
  /** Increasing per session (persisted): the root keeps the newest report's readers. */
  seq: number;
  /** Every lease with an id up to this one is dropped by the session: it answers no reader under it. */
  dropped: number;
  /** The tool calls a rule let go that may be reading now (and when), including one being asked about. */
  readers: [toolCallId: string, at: number][];
}

/** A clean lease: the session may answer readers itself for `ms` after it sent the call that got it. */
export interface CleanLease {
  id: number;
  ms: number;
}

/** A step an allow rule would answer, as the session asks the root (it had no live lease, or it writes). */
export interface UnseenStep {
  sessionId: string;
  toolCallId: string;
  reads: boolean;
  note: NewUnseenChange[];
  report: ReaderReport;
}

/** The root's answer: held (people are asked, shown why), or let go, with a lease when one could be granted. */
export interface UnseenStepAnswer {
  held: UnseenHold | null;
  lease?: CleanLease;
}

/** A session that may hold a lease, or have readers the root has not been told of. */
export interface LeaseHolder {
  sessionId: string;
  leaseId: number;
  /** By the root's clock: the session's lease has surely run out. */
  endsAt: number;
}

/** The root's persisted state (SQLite in the object; a map in the model test). Synchronous. */
export interface UnseenRootStore {
  /** What people would be shown now; null when nothing is unseen. */
  hold(): UnseenHold | null;
  /** Notes changes as unseen. */
  add(changes: NewUnseenChange[]): void;
  /** Applies a session's report: its readers if newer than the last, and drops its holder row up to `dropped`. */
  report(sessionId: string, report: ReaderReport, now: number): void;
  /** Open readers (reported) but `except`'s own tool call, each session's unknown-reader holders included by the caller. */
  readers(except: { sessionId: string; toolCallId: string }, now: number): OpenReader[];
  holders(): LeaseHolder[];
  /** Records a new lease for the session (its id, newer than every earlier one) and returns the id. */
  grant(sessionId: string, endsAt: number): number;
}

export interface UnseenRootIo {
  now(): number;
  sleepUntil(at: number): Promise<void>;
  /** Asks a session to drop its leases up to `leaseId`; its answer is its report. */
  revoke(sessionId: string, leaseId: number): Promise<ReaderReport>;
  store: UnseenRootStore;
}

/** How long the root waits for a holder's answer to a revocation before it counts it as not answered. */
const REVOKE_WAIT_MS = 1000;

export class UnseenRoot {
  /** Fences running (writes and notes): no lease is granted while one does. In memory: a restart ends them (their callers fail). */
  private fencing = 0;

  constructor(
    protected readonly io: UnseenRootIo,
    /** How long a session may answer readers under a lease (a test may lengthen it). */
    public leaseMs: number,
    private readonly slackMs: number,
  ) {}

  /** A step an allow rule would answer: held, or let go (a reader opened, a write's changes noted). */
  async step(step: UnseenStep): Promise<UnseenStepAnswer> {
    const { store } = this.io;
    store.report(step.sessionId, step.report, this.io.now());
    if (step.reads) {
      const hold = store.hold();
      if (hold) return { held: hold };
    }
    if (step.note.length === 0) {
      // A reader: it is in the report (the session sent it as open), so every later write sees it.
      return { held: null, ...(this.mayGrant() ? { lease: this.grant(step.sessionId) } : {}) };
    }
    this.fencing++;
    try {
      await this.revokeAll();
      // After the awaits: what happened meanwhile (another write's changes, a reader opened here) counts.
      const now = this.io.now();
      if (step.reads) {
        const hold = store.hold();
        if (hold) return { held: hold };
      }
      const readers = [...this.unknownReaders(), ...store.readers(step, now)];
      if (readers.length > 0) return { held: { total: 0, changes: [], upTo: 0, readers } };
      store.add(step.note);
      return { held: null };
    } finally {
      this.fencing--;
    }
  }

  /** A fresh lease for a session holding a live one (past half of it), or none. */
  renew(sessionId: string, report: ReaderReport): CleanLease | null {
    this.io.store.report(sessionId, report, this.io.now());
    return this.mayGrant() ? this.grant(sessionId) : null;
  }

  /** A session's report, off the answer's path (a reader finished, a lease ran out). */
  report(sessionId: string, report: ReaderReport): void {
    this.io.store.report(sessionId, report, this.io.now());
  }

  /**
   * What an agent changed with nobody asked: noted at once (no lease is granted from now on), answered
   * once no lease granted before it can still answer a reader (revoked, or run out by its holder's clock).
   */
  async note(changes: NewUnseenChange[]): Promise<void> {
    if (changes.length === 0) return;
    this.io.store.add(changes);
    this.fencing++;
    try {
      await this.revokeAll();
      await this.waitOutUnanswered();
    } finally {
      this.fencing--;
    }
  }

  /** Holders that did not answer: their leases run out by their own clocks before a note is answered. */
  protected async waitOutUnanswered(): Promise<void> {
    const endsAt = Math.max(0, ...this.io.store.holders().map((h) => h.endsAt));
    if (endsAt > this.io.now()) await this.io.sleepUntil(endsAt);
  }

  /** Grants only while nothing is unseen and no fence runs. */
  protected mayGrant(): boolean {
    return this.fencing === 0 && this.io.store.hold() === null;
  }

  private grant(sessionId: string): CleanLease {
    const id = this.io.store.grant(sessionId, this.io.now() + this.leaseMs + this.slackMs);
    return { id, ms: this.leaseMs };
  }

  /** Holders that did not report: their readers are unknown, so a write waits on people. */
  protected unknownReaders(): OpenReader[] {
    return this.io.store.holders().map((h) => ({ sessionId: h.sessionId, toolCallId: "", at: h.endsAt - this.leaseMs - this.slackMs }));
  }

  /** Asks every holder to drop its lease and report; one that does not answer in time stays a holder. */
  private async revokeAll(): Promise<void> {
    const holders = this.io.store.holders();
    await Promise.all(
      holders.map(async (h) => {
        const timedOut = this.io.sleepUntil(this.io.now() + REVOKE_WAIT_MS).then(() => null);
        const report = await Promise.race([this.io.revoke(h.sessionId, h.leaseId), timedOut]).catch(() => null);
        if (report) this.io.store.report(h.sessionId, report, this.io.now());
      }),
    );
  }
}

/** The session's persisted part besides its readers: what a new instance must know. */
export interface HolderMeta {
  seq: number;
  /** The newest lease this session ever installed: a new instance uses none of them. */
  installed: number;
  dropped: number;
}

/** The session's persisted part: its counters and its open readers. */
export interface HolderState extends HolderMeta {
  readers: [toolCallId: string, at: number][];
}

export interface UnseenHolderIo {
  now(): number;
  /** Written in the same event as the change, before any answer leaves (the object's output gate). */
  saveMeta(meta: HolderMeta): void;
  /** A reader opened (`at`) or closed (null), written likewise. */
  saveReader(toolCallId: string, at: number | null): void;
  step(step: UnseenStep): Promise<UnseenStepAnswer>;
  renew(report: ReaderReport): Promise<CleanLease | null>;
  /** Sent off the answer's path; a failure is harmless (the next report is whole). */
  report(report: ReaderReport): void;
}

export const NO_HOLDER_STATE: HolderState = { seq: 0, installed: 0, dropped: 0, readers: [] };

/** The session's side: answers readers itself under a live lease, asks the root otherwise. */
export class UnseenHolder {
  private lease?: { id: number; until: number; halfAt: number };
  protected readonly meta: HolderMeta;
  private readonly readers: Map<string, number>;
  /** Readers the root may have been told of: their end needs a report. */
  private readonly told = new Set<string>();
  /** Readers being asked of the root (how many asks of each tool call are in flight). */
  private readonly asking = new Map<string, number>();
  /** Counts the turns ended: an answer that comes after its turn ended opens nothing. */
  private turn = 0;
  private renewing = false;

  constructor(
    private readonly io: UnseenHolderIo,
    restored: HolderState,
  ) {
    // A new instance uses no lease an earlier one installed: they are dropped.
    this.meta = { seq: restored.seq, installed: restored.installed, dropped: Math.max(restored.dropped, restored.installed) };
    this.readers = new Map(restored.readers);
    for (const [r] of restored.readers) this.told.add(r);
  }

  /**
   * An allow rule would answer this step: null (let go) at once when it only reads and a clean lease is
   * live; otherwise the root decides. A step let go that reads is an open reader from then on, unless
   * `stillAsked` says its request was cancelled while the root decided (nothing will run it).
   */
  gate(step: Omit<UnseenStep, "report">, stillAsked: () => boolean = () => true): UnseenHold | null | Promise<UnseenStepAnswer> {
    const now = this.io.now();
    const lease = this.liveLease(now);
    if (step.note.length === 0 && lease) {
      this.open(step.toolCallId);
      if (now >= lease.halfAt) this.renewInBackground();
      return null;
    }
    if (step.note.length > 0) this.dropLease(this.lease?.id ?? 0);
    const { toolCallId, reads } = step;
    // Asking, it counts as open in every report (a report sent meanwhile must not drop what the root may let go).
    const turn = this.turn;
    if (reads) this.asking.set(toolCallId, (this.asking.get(toolCallId) ?? 0) + 1);
    const sentAt = now;
    const settle = (letGo: boolean) => {
      if (!reads) return;
      const n = (this.asking.get(toolCallId) ?? 1) - 1;
      if (n > 0) this.asking.set(toolCallId, n);
      else this.asking.delete(toolCallId);
      // Let go in the same turn and still asked: open. Held, failed, or its request cancelled meanwhile
      // (its turn ended): not open, and the root is told if a report named it.
      if (letGo && turn === this.turn && stillAsked()) this.open(toolCallId);
      else if (!this.readers.has(toolCallId) && !this.asking.has(toolCallId) && this.told.delete(toolCallId))
        this.io.report(this.nextReport());
    };
    return this.io.step({ ...step, report: this.nextReport() }).then(
      (answer) => {
        settle(answer.held === null);
        if (answer.lease) this.install(answer.lease, sentAt);
        return answer;
      },
      (error: unknown) => {
        settle(false);
        throw error;
      },
    );
  }

  /** The root revokes leases up to `leaseId` (one may still be on its way here): dropped; the report answers. */
  revoke(leaseId: number): ReaderReport {
    this.dropLease(leaseId);
    return this.nextReport();
  }

  /** A reader's tool call finished, or (null) the turn ended: every reader of the session. */
  readerDone(toolCallId: string | null): void {
    if (toolCallId === null) this.turn++;
    const done = toolCallId === null ? [...this.readers.keys()] : this.readers.has(toolCallId) ? [toolCallId] : [];
    if (done.length === 0) return;
    let mustTell = false;
    for (const r of done) {
      this.readers.delete(r);
      this.io.saveReader(r, null);
      if (!this.asking.has(r)) mustTell = this.told.delete(r) || mustTell;
    }
    if (mustTell) this.io.report(this.nextReport());
  }

  /** This session saw a change nobody asked about (it is on its way to the root): no reader here is answered under the lease from now on. */
  changedUnasked(): void {
    this.dropLease(this.lease?.id ?? 0);
  }

  protected liveLease(now: number): { id: number; until: number; halfAt: number } | undefined {
    return this.lease && now < this.lease.until ? this.lease : undefined;
  }

  /** A lease granted for a call sent at `sentAt`: used until `ms` after it, unless dropped meanwhile. */
  protected install(lease: CleanLease, sentAt: number): void {
    if (lease.id <= this.meta.dropped || (this.lease && this.lease.id >= lease.id)) return;
    this.lease = { id: lease.id, until: sentAt + lease.ms, halfAt: sentAt + lease.ms / 2 };
    this.meta.installed = Math.max(this.meta.installed, lease.id);
    this.io.saveMeta(this.meta);
  }

  private dropLease(upTo: number): void {
    if (this.lease && this.lease.id <= upTo) this.lease = undefined;
    if (upTo > this.meta.dropped) {
      this.meta.dropped = upTo;
      this.io.saveMeta(this.meta);
    }
  }

  private open(toolCallId: string): void {
    const at = this.io.now();
    this.readers.set(toolCallId, at);
    this.io.saveReader(toolCallId, at);
  }

  private renewInBackground(): void {
    if (this.renewing) return;
    this.renewing = true;
    const sentAt = this.io.now();
    this.io
      .renew(this.nextReport())
      .then((lease) => {
        if (lease) this.install(lease, sentAt);
      })
      .catch(() => undefined)
      .finally(() => {
        this.renewing = false;
      });
  }

  private nextReport(): ReaderReport {
    // A lease that ran out is dropped in the report, so the root stops counting this session a holder.
    // No timer for it (a timer would keep the object from hibernating): a quiet session with a lapsed
    // lease stays a holder until a write revokes it, and it answers at once.
    if (this.lease && this.io.now() >= this.lease.until) this.dropLease(this.lease.id);
    this.meta.seq++;
    this.io.saveMeta(this.meta);
    const now = this.io.now();
    const readers: [string, number][] = [...this.readers];
    for (const r of this.asking.keys()) if (!this.readers.has(r)) readers.push([r, now]);
    for (const [r] of readers) this.told.add(r);
    return { seq: this.meta.seq, dropped: this.meta.dropped, readers };
  }
}
