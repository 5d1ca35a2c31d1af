// The AgentObject's relay (protocol/agent-relay.ts), model-based: a simulated world of one agent, its
// connections (each a new epoch), three sessions, the object's tables (which outlive an instance, as
// SQLite does) and its instances (an eviction keeps the agent's dial-in socket; a crash loses it),
// driven through random interleavings fast-check finds:
// - the agent connects (replacing a connection), leaves, sends a session's notification or request,
//   answers a session's request, cancels one of its requests;
// - a client creates a session; a session sends a request, answers one of the agent's requests (and
//   may try the same answer twice, as a session whose first try's outcome was lost does);
// - a delivery to a session succeeds, fails before the session applied it, or fails after (its ack
//   lost on a closing link); the alarm fires; the object is evicted or crashes.
// A session applies a frame only if its number is above the highest it applied, and its answers and
// departures idempotently (session/agent-link.ts `firstTime`). After every step: at most one delivery per
// session is in flight; each session's applied frames are, in order, a prefix of what the agent sent
// it; the agent gets at most one answer per request. After a last quiet phase (every delivery
// succeeds, the alarm fires until nothing waits): each session applied exactly the frames the agent
// sent it, every request a session handed on was answered or named in a departure, and nothing waits.
// FUZZ_RUNS sets the number of generated cases (500 by default, which `npm test` runs in about a
// second; 24,000 were run while writing it).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AgentInfo,
  type AgentInitFailure,
  type AgentNotice,
  AgentRelay,
  type AgentTables,
  type Outbound,
  agentFailingError,
  withAgentNotice,
} from "../../protocol/agent-relay";
import type { OutboxRows, Stamped } from "../../protocol/agent-outbox";
import { RpcError } from "../../protocol/jsonrpc";

const RUNS = Number(process.env.FUZZ_RUNS ?? 500);
/** 500 runs take about a second on a quiet core; a busy machine may take many times that. */
const PROPERTY_TIMEOUT_MS = 60_000;
const SESSIONS = ["s0", "s1", "s2"];
/** Deliveries fail in a row at most this often per session, so the outbox never gives up (20 tries). */
const MAX_FAILS_IN_A_ROW = 10;

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(message);
}

/** The object's SQLite, as the relay's ports see it: outlives every instance. */
class Tables implements AgentTables {
  meta: { tenantId: string; name: string } | undefined = { tenantId: "t", name: "a" };
  epoch = 0;
  goneEpoch = 0;
  info: AgentInfo | undefined;
  initFailure: AgentInitFailure | null = null;
  notices: AgentNotice[] = [];
  lastId = 0;
  readonly sessions = new Map<string, number>();
  readonly outbounds = new Map<number, Outbound>();
  nextId(): number {
    return ++this.lastId;
  }
  addSession(sessionId: string, epoch: number): void {
    this.sessions.set(sessionId, epoch);
  }
  ownsSession(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }
  markActive(sessionId: string, epoch: number): void {
    if (this.sessions.has(sessionId)) this.sessions.set(sessionId, epoch);
  }
  activeSessions(epoch: number): string[] {
    return [...this.sessions].filter(([, e]) => e === epoch).map(([s]) => s);
  }
  addOutbound(o: Outbound): void {
    this.outbounds.set(o.agentId, { ...o });
  }
  outbound(agentId: number): Outbound | undefined {
    return this.outbounds.get(agentId);
  }
  takeOutbound(agentId: number): Outbound | undefined {
    const o = this.outbounds.get(agentId);
    this.outbounds.delete(agentId);
    return o;
  }
  outboundFor(sessionId: string, gwId: number): Outbound | undefined {
    for (const o of this.outbounds.values()) if (o.sessionId === sessionId && o.gwId === gwId) return o;
    return undefined;
  }
  awaitsAgent(): boolean {
    return [...this.outbounds.values()].some((o) => o.kind === "forward");
  }
  takeOutboundOfEpoch(epoch: number): Outbound[] {
    const taken = [...this.outbounds.values()].filter((o) => o.epoch <= epoch);
    for (const o of taken) this.outbounds.delete(o.agentId);
    return taken;
  }
}

class Rows implements OutboxRows {
  reserved = 0;
  readonly rows = new Map<number, { sessionId: string; items: Stamped[]; attempts: number }>();
  load() {
    const rows = [...this.rows].sort(([a], [b]) => a - b).map(([, row]) => structuredClone(row));
    return { reservedUpTo: this.reserved, rows };
  }
  reserve(last: number): void {
    this.reserved = last;
  }
  insert(sessionId: string, items: Stamped[], attempts: number): void {
    const last = items.at(-1);
    check(last !== undefined && !this.rows.has(last.seq), "a row is keyed by a number not used by another row");
    this.rows.set(last.seq, { sessionId, items: structuredClone(items), attempts });
  }
  deleteUpTo(sessionId: string, seq: number): void {
    for (const [key, row] of this.rows) if (row.sessionId === sessionId && key <= seq) this.rows.delete(key);
  }
  setAttempts(sessionId: string, attempts: number): void {
    for (const row of this.rows.values()) if (row.sessionId === sessionId) row.attempts = attempts;
  }
}

/** One connection of the agent: what it received. */
interface Line {
  epoch: number;
  open: boolean;
  received: Record<string, unknown>[];
  /** The sessions' requests it received and has not answered (agent-side ids). */
  toAnswer: number[];
  /** Its own requests, by id, not cancelled yet. */
  asked: number[];
}

interface Delivery {
  s: string;
  items: Stamped[];
  instance: number;
}

interface SessionModel {
  /** The texts of the agent's frames, as the session applied them. */
  frames: string[];
  highest: number;
  /** The agent's requests it received, `${epoch}:${id}`, not answered yet. */
  agentRequests: { epoch: number; id: number }[];
  /** Its answers to the agent's requests, with the instance that took the first try. */
  answeredOnce: { epoch: number; id: number; instance: number }[];
  nextGw: number;
  /** Its requests handed on to the agent (gwId), and those answered or named in a departure. */
  handedOn: Set<number>;
  settled: Set<number>;
}

type Op =
  | "connect"
  | "leave"
  | "notify"
  | "agentRequest"
  | "agentAnswer"
  | "agentCancel"
  | "create"
  | "sessionRequest"
  | "sessionAnswer"
  | "settle"
  | "alarm"
  | "evict"
  | "crash";

class World {
  readonly tables = new Tables();
  readonly rows = new Rows();
  relay!: AgentRelay;
  instance = 0;
  line: Line | undefined;
  readonly lines: Line[] = [];
  readonly deliveries: Delivery[] = [];
  readonly sessions = new Map<string, SessionModel>();
  /** What the agent sent each session, in order (frames only). */
  readonly given = new Map<string, string[]>(SESSIONS.map((s) => [s, []]));
  /**
   * Frames a crash may have lost: taken by the instance and not yet applied nor in the table (the
   * crash closes the agent's connection too, and the sessions hear it is gone); and sessions'
   * requests whose answer or departure notice was in memory only (`excused`).
   */
  readonly mayLose = new Set<string>();
  readonly excused = new Set<string>();
  readonly failsInARow = new Map<string, number>(SESSIONS.map((s) => [s, 0]));
  private counter = 0;
  readonly log: string[] = [];

  constructor() {
    this.start();
  }

  /** A new instance over the same tables (its memory gone): the shell's constructor. */
  start(): void {
    this.instance++;
    const instance = this.instance;
    this.relay = new AgentRelay({
      agent: {
        current: () => {
          const line = this.line;
          if (!line || !line.open || line.epoch !== this.tables.epoch) return undefined;
          return { edge: false, send: (text: string) => this.agentGets(line, text) };
        },
        admit: () => "ok",
      },
      tables: this.tables,
      outbox: this.rows,
      sessions: {
        deliver: (s, items) => {
          check(!this.deliveries.some((d) => d.s === s && d.instance === instance), `one delivery in flight to ${s}`);
          check(items.length > 0, "a delivery has items");
          this.deliveries.push({ s, items: structuredClone(items), instance });
        },
      },
      alarm: { redeliverSoon: () => undefined, watch: () => undefined },
      waits: { opened: () => undefined, initialized: () => undefined, gone: () => undefined },
    });
    this.relay.started();
  }

  private agentGets(line: Line, text: string): void {
    check(line.open, "nothing is sent on a closed connection");
    const message = JSON.parse(text) as Record<string, unknown>;
    line.received.push(message);
    if (message.method === "initialize") {
      // The agent answers its initialize at once.
      this.relay.agentFrame(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: { protocolVersion: 1 } }), line.epoch);
    } else if (message.method === "session/prompt") line.toAnswer.push(message.id as number);
    else if (message.id !== undefined && message.method === undefined) {
      const answers = line.received.filter((m) => m.method === undefined && m.id === message.id).length;
      check(answers === 1, `the agent's request ${String(message.id)} on epoch ${line.epoch} is answered once (got ${answers})`);
    }
  }

  step(op: Op, pick: number, flag: number): void {
    const s = SESSIONS[pick % SESSIONS.length] as string;
    const owned = this.tables.ownsSession(s);
    switch (op) {
      case "connect": {
        const replacing = this.line?.open === true;
        if (this.line) this.line.open = false;
        const line: Line = { epoch: this.tables.epoch + 1, open: true, received: [], toAnswer: [], asked: [] };
        this.line = line;
        this.lines.push(line);
        const epoch = this.relay.connected(replacing);
        check(epoch === line.epoch, "a connection is the next epoch");
        this.relay.initialize(epoch);
        return this.note(`connect epoch ${epoch}`);
      }
      case "leave": {
        if (!this.line?.open) return;
        this.line.open = false;
        this.relay.gone(this.line.epoch, "left");
        return this.note(`leave epoch ${this.line.epoch}`);
      }
      case "notify": {
        if (!this.line?.open) return;
        const text = JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: s, update: { n: ++this.counter } } });
        if (owned) this.given.get(s)?.push(text);
        this.relay.agentFrame(text, this.line.epoch);
        return this.note(`notify ${s} ${this.counter}`);
      }
      case "agentRequest": {
        if (!this.line?.open) return;
        const id = ++this.counter;
        const text = JSON.stringify({ jsonrpc: "2.0", id, method: "session/request_permission", params: { sessionId: s } });
        if (owned) {
          this.given.get(s)?.push(text);
          this.line.asked.push(id);
        }
        this.relay.agentFrame(text, this.line.epoch);
        if (!owned) {
          const answer = this.line.received.at(-1);
          check(answer?.id === id && answer.error !== undefined, "a request of a session not the agent's is answered with an error");
        }
        return this.note(`agent request ${s} ${id}`);
      }
      case "agentCancel": {
        const line = this.line;
        const id = line?.asked[flag % Math.max(1, line.asked.length)];
        if (!line?.open || id === undefined) return;
        line.asked = line.asked.filter((x) => x !== id);
        const text = JSON.stringify({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: id } });
        // It goes to the session the request went to, or (from a woken instance) to every active one, or
        // nowhere once the request is answered: the sessions ignore an id they do not hold.
        this.relay.agentFrame(text, line.epoch);
        return this.note(`agent cancel ${id}`);
      }
      case "agentAnswer": {
        const line = this.line;
        const id = line?.toAnswer[flag % Math.max(1, line.toAnswer.length)];
        if (!line?.open || id === undefined) return;
        line.toAnswer = line.toAnswer.filter((x) => x !== id);
        this.relay.agentFrame(JSON.stringify({ jsonrpc: "2.0", id, result: { stopReason: "end_turn" } }), line.epoch);
        return this.note(`agent answers ${id}`);
      }
      case "create": {
        if (owned || !this.line?.open || !this.relay.initialized) return;
        const { epoch } = this.relay.opening();
        this.relay.sessionOpened(s, epoch);
        this.sessions.set(s, {
          frames: [],
          highest: 0,
          agentRequests: [],
          answeredOnce: [],
          nextGw: 0,
          handedOn: new Set(),
          settled: new Set(),
        });
        return this.note(`create ${s}`);
      }
      case "sessionRequest": {
        const session = this.sessions.get(s);
        if (!session || !this.relay.mayHandOn("t", "a", s)) return;
        // The shell waits for the agent's initialize before it hands anything on.
        if (this.connected() && !this.relay.initialized) return;
        const gwId = ++session.nextGw;
        session.handedOn.add(gwId);
        const frame = { type: "request" as const, gwId, method: "session/prompt", params: { sessionId: s } };
        if (!this.connected()) {
          this.relay.unreachable(s, gwId, RpcError.internal("not connected"));
        } else check(this.relay.handOn(s, frame), "a request with a connection is handed on");
        return this.note(`session ${s} request ${gwId}`);
      }
      case "sessionAnswer": {
        const session = this.sessions.get(s);
        if (!session) return;
        // A second try comes within seconds of the first (its outcome was lost with a link or a call),
        // before an idle object can be evicted: the instance that took the first try takes it.
        const last = session.answeredOnce.at(-1);
        const again = flag % 3 === 0 && last?.instance === this.instance ? last : undefined;
        const request = again ?? session.agentRequests[flag % Math.max(1, session.agentRequests.length)];
        if (!request) return;
        if (!again) {
          session.agentRequests = session.agentRequests.filter((r) => r !== request);
          session.answeredOnce.push({ ...request, instance: this.instance });
        }
        this.relay.handOn(s, { type: "response", epoch: request.epoch, id: request.id, result: { outcome: "cancelled" } });
        return this.note(`session ${s} answers ${request.epoch}:${request.id}${again ? " again" : ""}`);
      }
      case "settle": {
        const live = this.deliveries.filter((d) => d.instance === this.instance);
        const delivery = live[pick % Math.max(1, live.length)];
        if (!delivery) return;
        this.deliveries.splice(this.deliveries.indexOf(delivery), 1);
        const fails = this.failsInARow.get(delivery.s) ?? 0;
        const outcome = fails >= MAX_FAILS_IN_A_ROW ? "ok" : (["ok", "ok", "before", "after"] as const)[flag % 4];
        if (outcome !== "before") this.apply(delivery.s, delivery.items);
        this.failsInARow.set(delivery.s, outcome === "ok" ? 0 : fails + 1);
        if (outcome === "ok") this.relay.delivered(delivery.s, delivery.items);
        else this.relay.deliveryFailed(delivery.s);
        return this.note(`settle ${delivery.s} [${delivery.items.map((i) => i.seq).join(",")}] ${outcome}`);
      }
      case "alarm":
        this.relay.alarm();
        return this.note("alarm");
      case "evict": {
        // An object is evicted only while idle: no call of it in flight.
        if (this.deliveries.some((d) => d.instance === this.instance)) return;
        this.start();
        return this.note(op);
      }
      case "crash": {
        // What the instance had in flight is lost with it (its deliveries end unheard), and so is
        // what it held in memory only; the runtime closes the agent's socket with the instance.
        for (const d of this.deliveries.filter((x) => x.instance === this.instance)) this.deliveries.splice(this.deliveries.indexOf(d), 1);
        for (const [session, texts] of this.given) {
          const applied = new Set(this.sessions.get(session)?.frames ?? []);
          for (const text of texts) if (!applied.has(text)) this.mayLose.add(text);
        }
        // A session's request whose answer or departure notice was in memory only (its entry in the
        // tables taken already) is lost with it: the session's turn watch ends its turn (session/turn-watch.ts).
        for (const [session, model] of this.sessions) {
          for (const gwId of model.handedOn) {
            if (!model.settled.has(gwId) && !this.tables.outboundFor(session, gwId)) this.excused.add(`${session}:${gwId}`);
          }
        }
        if (this.line) this.line.open = false;
        this.start();
        return this.note(op);
      }
    }
  }

  private note(entry: string): void {
    this.log.push(entry);
    this.checkPrefixes();
  }

  /** The session applies what is above the highest frame number it applied; answers and departures idempotently. */
  private apply(s: string, items: Stamped[]): void {
    const session = this.sessions.get(s);
    check(session !== undefined, `a delivery goes only to a session the agent owns (${s})`);
    for (const item of items) {
      if (item.kind === "frame") {
        if (item.seq <= session.highest) continue;
        session.highest = item.seq;
        session.frames.push(item.text);
        const message = JSON.parse(item.text) as { id?: number; method?: string };
        if (message.id !== undefined && message.method === "session/request_permission") {
          session.agentRequests.push({ epoch: item.epoch, id: message.id });
        }
      } else if (item.kind === "response") session.settled.add(item.gwId);
      else {
        for (const gwId of item.gwIds) session.settled.add(gwId);
        // Requests of a connection that is gone cannot be answered any more.
        session.agentRequests = session.agentRequests.filter((r) => r.epoch > item.epoch);
      }
    }
  }

  /**
   * Each session applied, in order and once, the agent's frames for it (its cancels the session may
   * be sent or not): every frame it passed over is one a crash may have lost.
   */
  private checkPrefixes(): void {
    for (const [s, session] of this.sessions) {
      const given = this.given.get(s) ?? [];
      let k = 0;
      for (const text of session.frames.filter((t) => !t.includes("$/cancel_request"))) {
        while (k < given.length && given[k] !== text) {
          check(this.mayLose.has(given[k] as string), `${s} applied ${text} and passed over ${given[k]}, which no crash lost`);
          k++;
        }
        check(k < given.length, `${s} applied, in order and once, what the agent sent it: ${text} is out of place`);
        k++;
      }
    }
  }

  /** The current instance holds the agent's connection. */
  private connected(): boolean {
    return this.line?.open === true && this.line.epoch === this.tables.epoch;
  }

  /** A quiet phase: every delivery succeeds and the alarm fires until nothing waits. */
  quiet(): void {
    for (let round = 0; round < 50; round++) {
      this.relay.alarm();
      let live = this.deliveries.filter((d) => d.instance === this.instance);
      while (live.length > 0) {
        const delivery = live[0] as Delivery;
        this.deliveries.splice(this.deliveries.indexOf(delivery), 1);
        this.apply(delivery.s, delivery.items);
        this.relay.delivered(delivery.s, delivery.items);
        live = this.deliveries.filter((d) => d.instance === this.instance);
      }
      if (this.rows.rows.size === 0 && !this.deliveries.some((d) => d.instance === this.instance)) break;
    }
  }

  /** After the quiet phase, with the agent gone: nothing lost, nothing left pending. */
  checkEnd(): void {
    check(this.rows.rows.size === 0, "nothing waits in the outbox table");
    for (const [s, session] of this.sessions) {
      const applied = new Set(session.frames);
      for (const text of this.given.get(s) ?? []) check(applied.has(text) || this.mayLose.has(text), `${s} applied ${text}`);
      for (const gwId of session.handedOn) {
        check(session.settled.has(gwId) || this.excused.has(`${s}:${gwId}`), `${s}'s request ${gwId} was answered or named in a departure`);
      }
    }
    check(!this.tables.awaitsAgent(), "no session's request waits on the agent");
  }
}

/** How often each operation comes: mostly traffic, now and then a connection's end or an instance's. */
const WEIGHTS: [Op, number][] = [
  ["connect", 2],
  ["leave", 1],
  ["crash", 1],
  ["evict", 2],
  ["notify", 8],
  ["agentRequest", 3],
  ["agentAnswer", 3],
  ["agentCancel", 1],
  ["create", 3],
  ["sessionRequest", 4],
  ["sessionAnswer", 3],
  ["settle", 10],
  ["alarm", 2],
];
const step = fc.record({
  op: fc.oneof(...WEIGHTS.map(([op, weight]) => ({ arbitrary: fc.constant(op), weight }))),
  pick: fc.nat(8),
  flag: fc.nat(11),
});

function run(steps: { op: Op; pick: number; flag: number }[]): World {
  const world = new World();
  try {
    world.step("connect", 0, 0);
    for (const { op, pick, flag } of steps) world.step(op, pick, flag);
    // The agent leaves for good; everything settles.
    world.step("leave", 0, 0);
    world.quiet();
    world.checkEnd();
  } catch (error) {
    throw new Error(`${(error as Error).message}\nafter:\n${world.log.join("\n")}`, { cause: error });
  }
  return world;
}

describe("the AgentObject's relay, model-based", () => {
  it(
    "over every interleaving of connections, sessions, requests and answers, deliveries and their failures, and evictions: in order, once, nothing lost or left pending",
    () => {
      fc.assert(
        fc.property(fc.array(step, { minLength: 10, maxLength: 120, size: "max" }), (steps) => {
          run(steps);
        }),
        { numRuns: RUNS },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it("fixed: the agent leaves mid-turn: the session's request is named in the departure, behind the update the agent sent first", () => {
    const world = run([
      { op: "create", pick: 0, flag: 0 },
      { op: "sessionRequest", pick: 0, flag: 0 },
      { op: "notify", pick: 0, flag: 0 },
      { op: "leave", pick: 0, flag: 0 },
    ]);
    const session = world.sessions.get("s0");
    expect(session?.frames).toHaveLength(1);
    expect([...(session?.settled ?? [])]).toEqual([1]);
  });

  it("fixed: a crash with a delivery failed and stored: the next instance re-sends it and tells the session the connection is gone", () => {
    const world = run([
      { op: "create", pick: 1, flag: 0 },
      { op: "sessionRequest", pick: 1, flag: 0 },
      { op: "notify", pick: 1, flag: 0 },
      { op: "settle", pick: 0, flag: 2 }, // failed before the session applied it: stored
      { op: "notify", pick: 1, flag: 0 },
      { op: "crash", pick: 0, flag: 0 },
    ]);
    expect(world.sessions.get("s1")?.frames).toHaveLength(2);
    expect([...(world.sessions.get("s1")?.settled ?? [])]).toEqual([1]);
  });

  it("fixed: an instance woken during the connection answers the agent's request once, also when the session tries twice", () => {
    const world = run([
      { op: "create", pick: 2, flag: 0 },
      { op: "agentRequest", pick: 2, flag: 0 },
      { op: "settle", pick: 0, flag: 0 },
      { op: "evict", pick: 0, flag: 0 },
      { op: "sessionAnswer", pick: 2, flag: 1 },
      { op: "sessionAnswer", pick: 2, flag: 0 }, // the second try
    ]);
    const answers = world.lines[0]?.received.filter((m) => m.method === undefined && m.id === 1);
    expect(answers).toHaveLength(1);
  });
});

describe("the agent's initialize (decision 0042)", () => {
  /** A relay over fresh tables whose agent line records what it is sent. */
  function relayWithLine() {
    const tables = new Tables();
    const sent: Record<string, unknown>[] = [];
    let woken = 0;
    const relay = new AgentRelay({
      agent: {
        current: () => ({ edge: false, send: (text: string) => void sent.push(JSON.parse(text) as Record<string, unknown>) }),
        admit: () => "ok",
      },
      tables,
      outbox: new Rows(),
      sessions: { deliver: () => undefined },
      alarm: { redeliverSoon: () => undefined, watch: () => undefined },
      waits: { opened: () => undefined, initialized: () => void woken++, gone: () => undefined },
    });
    relay.started();
    /** A new connection: the gateway's initialize goes out; its id. */
    const connect = (replacing: boolean) => {
      const epoch = relay.connected(replacing);
      relay.initialize(epoch);
      const init = sent.at(-1) as { id: number; method: string; params: { protocolVersion: unknown } };
      expect(init.method).toBe("initialize");
      return { epoch, init };
    };
    return { relay, tables, connect, woken: () => woken };
  }

  it("sends protocolVersion 1, and an error answer (-32022, a v2-only agent) is a failing connection with the agent's message, never its capabilities", () => {
    const { relay, tables, connect, woken } = relayWithLine();
    const { epoch, init } = connect(false);
    expect(init.params.protocolVersion).toBe(1);
    relay.agentFrame(
      JSON.stringify({ jsonrpc: "2.0", id: init.id, error: { code: -32022, message: "Unsupported protocol version" } }),
      epoch,
    );
    expect(relay.initialized).toBe(false);
    expect(tables.info).toBeUndefined();
    expect(relay.failing).toMatchObject({ epoch, code: -32022, message: "Unsupported protocol version" });
    expect(woken()).toBe(1); // whoever waited on initialize goes on, and finds it failing
    const error = agentFailingError("qwen", relay.failing as AgentInitFailure);
    expect(error.message).toBe(`The agent "qwen" refused the gateway's initialize: Unsupported protocol version (-32022)`);
    expect(error.data).toMatchObject({ reason: "agent_failing", agentError: { code: -32022 } });
  });

  it("a failure is of its connection: the next one that answers is initialized and the failure is forgotten; a hostile message is bounded and shown as it is", () => {
    const { relay, tables, connect } = relayWithLine();
    const first = connect(false);
    relay.agentFrame(
      JSON.stringify({ jsonrpc: "2.0", id: first.init.id, error: { code: 1, message: `no\u202e${"x".repeat(2000)}` } }),
      first.epoch,
    );
    const failure = relay.failing as AgentInitFailure;
    expect(failure.message.length).toBeLessThan(520);
    expect(failure.message).not.toContain("\u202e");
    const second = connect(true);
    expect(relay.failing).toBeUndefined(); // a new epoch is not failing until it answers so
    relay.agentFrame(
      JSON.stringify({ jsonrpc: "2.0", id: second.init.id, result: { protocolVersion: 1, agentCapabilities: {} } }),
      second.epoch,
    );
    expect(relay.initialized).toBe(true);
    expect(tables.initFailure).toBeNull();
  });
});

describe("the agent's notifications that name no session (decision 0042)", () => {
  it("keeps the newest of each method, at most eight methods, and a large one's size instead of its params", () => {
    let kept: AgentNotice[] = [];
    kept = withAgentNotice(kept, "_auth/status_update", { status: "expired" }, 1);
    kept = withAgentNotice(kept, "_auth/status_update", { status: "ok" }, 2);
    expect(kept).toEqual([{ method: "_auth/status_update", params: { status: "ok" }, at: 2 }]);
    for (let i = 0; i < 10; i++) kept = withAgentNotice(kept, `_x/${i}`, undefined, 10 + i);
    expect(kept).toHaveLength(8);
    expect(kept[0]).toEqual({ method: "_x/9", params: null, at: 19 });
    expect(kept.some((n) => n.method === "_auth/status_update")).toBe(false);
    kept = withAgentNotice(kept, "_big", { text: "y".repeat(5000) }, 30);
    expect(kept[0]?.params).toEqual({ omitted: 5011 });
  });
});
