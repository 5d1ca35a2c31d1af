// The unseen-changes gate under clean leases (protocol/unseen-lease.ts, decision 0058), model-based:
// one root (UnseenRoot over an in-memory store standing for its SQLite) and three sessions (each an
// UnseenHolder over its own persisted state), driven through every interleaving fast-check finds of:
// a rule-answered read, write, or read-and-write asked in a session; a reader's tool call finishing;
// a turn ending; an unasked run noted; a person seeing what is unseen; a call delivered, or lost
// before or after the far side acted; time passing (leases, revocation waits); and the
// root or a session restarting (memory lost, storage kept, its calls in flight never answered).
// The truth beside it: which readers a rule let go are running (from the moment the rule let them
// go), which changes exist unseen (from the moment a write was let go or a note answered).
// After every step:
// - no rule lets a reader go while an acknowledged change is unseen;
// - no rule lets a write go while a reader a rule let go is running, anywhere but the write's own tool call.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CleanLease,
  type HolderState,
  type LeaseHolder,
  NO_HOLDER_STATE,
  type ReaderReport,
  UnseenHolder,
  UnseenRoot,
  type UnseenRootStore,
  type UnseenStep,
  type UnseenStepAnswer,
} from "../../protocol/unseen-lease";
import type { NewUnseenChange, OpenReader, UnseenHold } from "../../protocol/unseen";

const RUNS = Number(process.env.FUZZ_RUNS ?? 400);
const LEASE = 500;
const SLACK = 200;
const SESSIONS = ["s0", "s1", "s2"];

class MemoryRootStore implements UnseenRootStore {
  changes: { id: number; path: string }[] = [];
  nextId = 1;
  leaseSeq = 0;
  reports = new Map<string, { seq: number; readers: Map<string, number> }>();
  holderRows = new Map<string, { leaseId: number; endsAt: number }>();

  hold(): UnseenHold | null {
    if (this.changes.length === 0) return null;
    const top = Math.max(...this.changes.map((c) => c.id));
    return { total: this.changes.length, changes: [], upTo: top, readers: [] };
  }
  add(changes: NewUnseenChange[]): void {
    for (const c of changes) this.changes.push({ id: this.nextId++, path: c.path });
  }
  report(sessionId: string, report: ReaderReport, _now: number): void {
    const was = this.reports.get(sessionId);
    if (!was || report.seq > was.seq) this.reports.set(sessionId, { seq: report.seq, readers: new Map(report.readers) });
    const holder = this.holderRows.get(sessionId);
    if (holder && holder.leaseId <= report.dropped) this.holderRows.delete(sessionId);
  }
  readers(except: { sessionId: string; toolCallId: string }): OpenReader[] {
    const out: OpenReader[] = [];
    for (const [sessionId, r] of this.reports)
      for (const [toolCallId, at] of r.readers)
        if (!(sessionId === except.sessionId && toolCallId === except.toolCallId)) out.push({ sessionId, toolCallId, at });
    return out;
  }
  holders(): LeaseHolder[] {
    return [...this.holderRows].map(([sessionId, h]) => ({ sessionId, ...h }));
  }
  grant(sessionId: string, endsAt: number): number {
    const leaseId = ++this.leaseSeq;
    const was = this.holderRows.get(sessionId);
    this.holderRows.set(sessionId, { leaseId, endsAt: Math.max(endsAt, was?.endsAt ?? 0) });
    return leaseId;
  }
  seen(upTo: number): void {
    this.changes = this.changes.filter((c) => c.id > upTo);
  }
}

/** Bugs planted to try the model (each must be caught; kept as fixed cases below). */
type Mutant = "grant-while-fencing" | "note-skips-lapse" | "write-ignores-holders" | "install-after-revoke" | "reports-unnumbered";

class MutantRoot extends UnseenRoot {
  constructor(
    io: ConstructorParameters<typeof UnseenRoot>[0],
    private readonly mutant: Mutant | undefined,
  ) {
    super(io, LEASE, SLACK);
  }
  protected override mayGrant(): boolean {
    if (this.mutant === "grant-while-fencing") return this.io.store.hold() === null;
    return super.mayGrant();
  }
  protected override unknownReaders(): OpenReader[] {
    return this.mutant === "write-ignores-holders" ? [] : super.unknownReaders();
  }
  protected override waitOutUnanswered(): Promise<void> {
    return this.mutant === "note-skips-lapse" ? Promise.resolve() : super.waitOutUnanswered();
  }
}

class MutantHolder extends UnseenHolder {
  constructor(
    io: ConstructorParameters<typeof UnseenHolder>[0],
    restored: HolderState,
    private readonly mutant: Mutant | undefined,
  ) {
    super(io, restored);
  }
  protected override install(lease: CleanLease, sentAt: number): void {
    // Forgets that the lease was revoked before it arrived.
    if (this.mutant === "install-after-revoke") this.meta.dropped = 0;
    super.install(lease, sentAt);
  }
}

interface Call {
  deliver(): void;
  fail(acted: boolean): void;
}

class World {
  t = 0;
  calls: Call[] = [];
  timers: { at: number; fire(): void; alive(): boolean }[] = [];
  store = new MemoryRootStore();
  rootGen = 0;
  root!: UnseenRoot;
  sessions = new Map<string, Session>();
  /** Truth: readers a rule let go that are running, per session. */
  running = new Map<string, Set<string>>();
  /**
   * Readers the root let go whose answer is travelling (it may never arrive: the session restarted):
   * what would be broken if it arrives (a write let go meanwhile, a change unseen when it was let go).
   */
  pending = new Map<string, string[]>();
  /** Truth: unseen changes acknowledged (path → the store's id). */
  unseen = new Set<string>();
  letGo = 0;
  rootCalls = 0;
  revocations = 0;
  /** The first broken guarantee (found inside a call's continuation, thrown by `play` after the step). */
  broken?: string;

  constructor(readonly mutant?: Mutant) {
    this.newRoot();
    for (const s of SESSIONS) {
      this.running.set(s, new Set());
      this.sessions.set(s, new Session(this, s));
    }
  }

  newRoot(): void {
    const gen = ++this.rootGen;
    const alive = () => this.rootGen === gen;
    const store = this.mutant === "reports-unnumbered" ? unnumbered(this.store) : this.store;
    this.root = new MutantRoot(
      {
        now: () => this.t,
        sleepUntil: (at) => new Promise<void>((resolve) => this.timers.push({ at, fire: resolve, alive })),
        revoke: (sessionId, leaseId) =>
          this.call(alive, () => {
            this.revocations++;
            return Promise.resolve(this.session(sessionId).holder.revoke(leaseId));
          }),
        store,
      },
      this.mutant,
    );
  }

  session(id: string): Session {
    return this.sessions.get(id) as Session;
  }

  /**
   * An RPC from a caller alive while `alive()`: the far side runs when the call is delivered, its
   * answer travels back as a call of its own (delivered or lost later); an answer to a dead caller never comes.
   */
  call<T>(alive: () => boolean, run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const settle = (f: () => void) => {
        if (alive()) f();
      };
      const lost = () => settle(() => reject(new Error("answer lost")));
      const answer = (f: () => void) => this.calls.push({ deliver: () => settle(f), fail: lost });
      this.calls.push({
        deliver: () =>
          void run().then(
            (v) => answer(() => resolve(v)),
            (e: unknown) => answer(() => reject(e instanceof Error ? e : new Error(String(e)))),
          ),
        fail: (acted) => {
          if (acted) void run().then(lost, lost);
          else settle(() => reject(new Error("not delivered")));
        },
      });
    });
  }

  /** A call into the root: its answer is lost if the root restarted while it ran. */
  toRoot<T>(alive: () => boolean, run: (root: UnseenRoot) => Promise<T>): Promise<T> {
    return this.call(alive, async () => {
      this.rootCalls++;
      const gen = this.rootGen;
      const answer = await run(this.root);
      if (gen !== this.rootGen) throw new Error("the root restarted");
      return answer;
    });
  }

  advance(ms: number): void {
    this.t += ms;
    const due = this.timers.filter((x) => x.at <= this.t);
    this.timers = this.timers.filter((x) => x.at > this.t);
    for (const x of due) if (x.alive()) x.fire();
  }

  /**
   * A reader let go in its session: decided there under a lease (`local`), or by the root (judged when
   * the root decided it, and by the writes let go while its answer travelled).
   */
  readerLetGo(sessionId: string, toolCallId: string, local: boolean): void {
    const key = `${sessionId}/${toolCallId}`;
    const broken = this.pending.get(key) ?? [];
    this.pending.delete(key);
    if (local && this.unseen.size > 0) broken.push(`a rule let a reader go at ${this.t} while ${[...this.unseen].join(", ")} is unseen`);
    if (broken.length > 0) this.broken ??= `${key}: ${broken[0]}`;
    this.running.get(sessionId)?.add(toolCallId);
    this.letGo++;
  }

  /** The root let a reader go: its answer travels to the session. */
  readerLetGoAtRoot(sessionId: string, toolCallId: string): void {
    // A step that reads and writes reads its own change: only others count.
    const others = [...this.unseen].filter((path) => path !== `${toolCallId}-w`);
    const broken = others.length > 0 ? [`a rule let a reader go at ${this.t} while ${others.join(", ")} is unseen`] : [];
    this.pending.set(`${sessionId}/${toolCallId}`, broken);
  }

  /** The root let a write go (the agent writes once the answer arrives: the change counts from now). */
  writeLetGo(sessionId: string, toolCallId: string, path: string): void {
    const own = `${sessionId}/${toolCallId}`;
    for (const [s, readers] of this.running)
      for (const r of readers)
        if (`${s}/${r}` !== own) this.broken ??= `${own}: a rule let a write go at ${this.t} while ${s}/${r} may be reading`;
    for (const [key, broken] of this.pending)
      if (key !== own) broken.push(`a rule let a write (${own}) go at ${this.t} while this reader's answer travelled`);
    this.acknowledge(path);
    this.letGo++;
  }

  acknowledge(path: string): void {
    if (this.store.changes.some((c) => c.path === path)) this.unseen.add(path);
  }

  /** A person allowed a held step that showed every acknowledged change. */
  seen(): void {
    const ids = this.store.changes.filter((c) => this.unseen.has(c.path)).map((c) => c.id);
    if (ids.length === 0) return;
    const upTo = Math.max(...ids);
    this.store.seen(upTo);
    for (const path of [...this.unseen]) if (!this.store.changes.some((c) => c.path === path)) this.unseen.delete(path);
  }
}

/** The store with report numbers ignored (a late report undoes a newer one): a planted bug. */
function unnumbered(store: MemoryRootStore): UnseenRootStore {
  return new Proxy(store, {
    get(target, key: keyof MemoryRootStore) {
      if (key === "report")
        return (sessionId: string, report: ReaderReport, now: number) => {
          target.reports.delete(sessionId);
          target.report(sessionId, report, now);
        };
      const value = target[key];
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

class Session {
  holder!: UnseenHolder;
  gen = 0;
  persisted: HolderState = { ...NO_HOLDER_STATE, readers: [] };
  /** Readers this instance let go (the machine's memory: it tells the holder when they finish). */
  known = new Set<string>();
  /** Asks whose request was cancelled by its turn's end: whatever the root answers, nothing runs. */
  cancelled = new Set<string>();
  inflight = new Set<string>();
  n = 0;

  constructor(
    private readonly w: World,
    readonly id: string,
  ) {
    this.start();
  }

  start(): void {
    const gen = ++this.gen;
    const alive = () => this.gen === gen;
    this.known = new Set();
    const w = this.w;
    const readers = new Map(this.persisted.readers);
    this.holder = new MutantHolder(
      {
        now: () => w.t,
        saveMeta: (meta) => {
          if (alive()) this.persisted = { ...this.persisted, ...meta };
        },
        saveReader: (toolCallId, at) => {
          if (!alive()) return;
          if (at === null) readers.delete(toolCallId);
          else readers.set(toolCallId, at);
          this.persisted = { ...this.persisted, readers: [...readers] };
        },
        step: (step) => w.toRoot(alive, (root) => this.rootStep(root, step)),
        renew: (report) => w.toRoot(alive, (root) => Promise.resolve(root.renew(this.id, report))),
        report: (report) => void w.toRoot(alive, (root) => Promise.resolve(root.report(this.id, report))).catch(() => undefined),
      },
      this.persisted,
      w.mutant,
    );
  }

  /** The root's side of a step: the truth moves when the root lets it go (before its answer travels). */
  private async rootStep(root: UnseenRoot, step: UnseenStep): Promise<UnseenStepAnswer> {
    const answer = await root.step(step);
    if (answer.held === null && !this.cancelled.has(step.toolCallId)) {
      // A step that reads and writes reads what it writes itself: its reader is let go with it.
      if (step.reads) this.w.readerLetGoAtRoot(step.sessionId, step.toolCallId);
      if (step.note.length > 0) this.w.writeLetGo(step.sessionId, step.toolCallId, step.note[0]!.path);
    }
    return answer;
  }

  ask(kind: "read" | "write" | "both"): void {
    const toolCallId = `${this.id}-t${this.n++}`;
    const reads = kind !== "write";
    const note = kind === "read" ? [] : [{ path: `${toolCallId}-w`, sessionId: this.id, toolCallId, ruleId: "r", at: this.w.t }];
    const gen = this.gen;
    const got = this.holder.gate({ sessionId: this.id, toolCallId, reads, note }, () => !this.cancelled.has(toolCallId));
    this.inflight.add(toolCallId);
    if (got === null) {
      this.inflight.delete(toolCallId);
      this.w.readerLetGo(this.id, toolCallId, true);
      this.known.add(toolCallId);
      return;
    }
    if (!(got instanceof Promise)) throw new Error("a local answer held a step: only the root holds");
    const settled = (letGo: boolean) => {
      this.inflight.delete(toolCallId);
      if (letGo && reads && this.gen === gen && !this.cancelled.has(toolCallId)) {
        this.known.add(toolCallId);
        this.w.readerLetGo(this.id, toolCallId, false);
      } else this.w.pending.delete(`${this.id}/${toolCallId}`); // held, lost, or cancelled: the agent does not run it
    };
    got.then(
      (answer) => settled(answer.held === null),
      () => settled(false),
    );
  }

  /** The agent reports a reader finished. */
  done(pick: number): void {
    const running = [...(this.w.running.get(this.id) ?? [])];
    const toolCallId = running[pick % Math.max(1, running.length)];
    if (toolCallId === undefined) return;
    this.w.running.get(this.id)?.delete(toolCallId);
    if (this.known.delete(toolCallId)) this.holder.readerDone(toolCallId);
  }

  turnEnded(): void {
    this.w.running.get(this.id)?.clear();
    // The turn's end answers its pending requests cancelled (session-machine.ts).
    for (const t of this.inflight) this.cancelled.add(t);
    if (this.known.size === 0) return;
    this.known.clear();
    this.holder.readerDone(null);
  }
}

type Cmd =
  | { op: "ask"; s: number; kind: "read" | "write" | "both" }
  | { op: "done"; s: number; pick: number }
  | { op: "turn"; s: number }
  | { op: "unasked"; s: number }
  | { op: "seen" }
  | { op: "deliver"; pick: number }
  | { op: "lose"; pick: number; acted: boolean }
  | { op: "time"; ms: number }
  | { op: "restartRoot" }
  | { op: "restartSession"; s: number };

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("ask" as const),
      s: fc.nat(2),
      kind: fc.constantFrom("read" as const, "write" as const, "both" as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("done" as const), s: fc.nat(2), pick: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("turn" as const), s: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("unasked" as const), s: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("seen" as const) }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant("deliver" as const), pick: fc.nat(7) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("lose" as const), pick: fc.nat(7), acted: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("time" as const), ms: fc.constantFrom(1, 50, 260, 600, 1100) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("restartRoot" as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("restartSession" as const), s: fc.nat(2) }) },
);

const commands = fc.array(cmd, { minLength: 4, maxLength: 50, size: "max" });

const flush = async () => {
  for (let i = 0; i < 8; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/** Delivers every call and answer, oldest first, until none travels. */
async function drain(w: World): Promise<void> {
  await flush();
  while (w.calls.length > 0) {
    w.calls.shift()!.deliver();
    await flush();
  }
}

async function play(cmds: Cmd[], mutant?: Mutant): Promise<World> {
  const w = new World(mutant);
  let unasked = 0;
  for (const c of cmds) {
    switch (c.op) {
      case "ask":
        w.session(SESSIONS[c.s]!).ask(c.kind);
        break;
      case "done":
        w.session(SESSIONS[c.s]!).done(c.pick);
        break;
      case "turn":
        w.session(SESSIONS[c.s]!).turnEnded();
        break;
      case "unasked": {
        const path = `u${unasked++}`;
        const gen = w.rootGen;
        const root = w.root;
        // The session that saw it run drops its own lease at once (tenant-rules.ts `note`).
        w.session(SESSIONS[c.s]!).holder.changedUnasked();
        void root.note([{ path, sessionId: SESSIONS[c.s]!, toolCallId: path, ruleId: null, at: w.t }]).then(() => {
          if (w.rootGen === gen) w.acknowledge(path);
        });
        break;
      }
      case "seen":
        w.seen();
        break;
      case "deliver":
      case "lose": {
        if (w.calls.length === 0) break;
        const [call] = w.calls.splice(c.pick % w.calls.length, 1);
        if (c.op === "deliver") call!.deliver();
        else call!.fail(c.acted);
        break;
      }
      case "time":
        w.advance(c.ms);
        break;
      case "restartRoot":
        w.newRoot();
        break;
      case "restartSession":
        w.session(SESSIONS[c.s]!).start();
        break;
    }
    await flush();
    if (w.broken) throw new Error(w.broken);
  }
  return w;
}

describe("the unseen-changes gate under clean leases (model)", () => {
  it("no reader is let go while a change is unseen, and no write while a reader runs, in every interleaving", async () => {
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        await play(cmds);
      }),
      { numRuns: RUNS },
    );
  });

  it("a session working alone answers its readers itself: one call to the root, then none while its lease lives", async () => {
    const w = new World();
    const s = w.session("s0");
    s.ask("read");
    await drain(w);
    expect(w.rootCalls).toBe(1);
    for (let i = 0; i < 5; i++) s.ask("read");
    expect(w.calls).toHaveLength(0);
    expect(w.letGo).toBe(6);
  });

  it("a write in the only session holding a lease costs no revocation: its own lease is dropped as it asks", async () => {
    const w = new World();
    const s = w.session("s0");
    s.ask("read");
    await drain(w);
    s.done(0); // its first reader went through the root: the root is told it finished (one report)
    await drain(w);
    const before = w.rootCalls;
    s.ask("write");
    await drain(w);
    expect(w.rootCalls - before).toBe(1);
    expect(w.revocations).toBe(0);
    expect(w.unseen.size).toBe(1);
  });

  it("a write while another session's lease lives revokes it; the reader it answered meanwhile holds the write", async () => {
    const w = new World();
    const a = w.session("s0");
    const b = w.session("s1");
    a.ask("read");
    await drain(w);
    a.ask("read"); // answered under the lease, told to nobody yet
    b.ask("write");
    await drain(w);
    expect(w.revocations).toBe(1);
    expect(w.letGo).toBe(2);
    expect(w.store.changes).toHaveLength(0);
  });
});

/** Each planted bug, with the sequence the property found for it (shrunk, kept). */
const PLANTED: [Mutant, string][] = [
  // The note answered without waiting out a lease whose revocation failed: the holder reads under it.
  [
    "note-skips-lapse",
    '[{"op":"ask","s":0,"kind":"read"},{"op":"deliver","pick":0},{"op":"deliver","pick":0},{"op":"unasked","s":1},{"op":"lose","pick":0,"acted":false},{"op":"ask","s":0,"kind":"read"}]',
  ],
  // A write let go while a holder had not reported: the readers it answered under its lease were unknown.
  [
    "write-ignores-holders",
    '[{"op":"ask","s":0,"kind":"both"},{"op":"ask","s":2,"kind":"read"},{"op":"ask","s":0,"kind":"write"},{"op":"deliver","pick":0},{"op":"ask","s":0,"kind":"write"},{"op":"seen"},{"op":"ask","s":0,"kind":"write"},{"op":"deliver","pick":0},{"op":"lose","pick":0,"acted":false},{"op":"lose","pick":0,"acted":false},{"op":"deliver","pick":0},{"op":"deliver","pick":5},{"op":"done","s":2,"pick":0},{"op":"deliver","pick":0},{"op":"ask","s":2,"kind":"read"},{"op":"deliver","pick":2},{"op":"deliver","pick":0},{"op":"time","ms":1},{"op":"time","ms":1100},{"op":"deliver","pick":0},{"op":"deliver","pick":0}]',
  ],
  // A lease revoked before its grant arrived, installed anyway.
  [
    "install-after-revoke",
    '[{"op":"ask","s":0,"kind":"read"},{"op":"deliver","pick":0},{"op":"unasked","s":0},{"op":"deliver","pick":7},{"op":"deliver","pick":0},{"op":"deliver","pick":0},{"op":"ask","s":0,"kind":"read"},{"op":"ask","s":0,"kind":"read"}]',
  ],
  // A late report (fewer readers) undoing a newer one.
  [
    "reports-unnumbered",
    '[{"op":"ask","s":2,"kind":"write"},{"op":"ask","s":2,"kind":"both"},{"op":"deliver","pick":7},{"op":"deliver","pick":0},{"op":"time","ms":1},{"op":"deliver","pick":0},{"op":"ask","s":0,"kind":"read"},{"op":"time","ms":1}]',
  ],
];

describe("the model catches the bugs planted to try it (fixed cases)", () => {
  for (const [mutant, cmds] of PLANTED) {
    it(`catches ${mutant}`, async () => {
      const sequence = JSON.parse(cmds) as Cmd[];
      await expect(play(sequence, mutant)).rejects.toThrow(/let a (reader|write)\b.* go/);
      // The same sequence keeps every guarantee without the bug.
      await play(sequence);
    });
  }
});
