// The edge's account of the agent's open requests (protocol/edge-routing.ts `EdgeAnswers`),
// model-based: a simulated world of the agent, the edge, the sessions and the AgentObject, driven
// through every interleaving fast-check finds.
// - The agent sends requests (ids reused once answered, 1 and "1" among them), each naming a session
//   or none; the edge notes each (`asked`) before it goes on.
// - A session answers a request it was given: on its edge link, which may lose the answer before the
//   edge has it or lose the edge's `sent` after (then the session tries once more, through the
//   AgentObject, which hands the edge `answer`); or through the AgentObject at once (no link). The
//   AgentObject answers a request with no session itself (plain). A hostile session answers a request
//   that is not its own. Each way is a FIFO; any of them may go first.
// After every step: the agent has at most one answer per request asked, each the answer of the
// session the request named (or the AgentObject's, for none); `waiting` and `sessionOf` agree with the
// open requests. After draining every way: each request asked has exactly one answer (never lost).
// FUZZ_RUNS sets the number of generated cases (2,000 by default).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EdgeAnswers } from "../../protocol/edge-routing";

const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
const SESSIONS = ["s0", "s1"];
const IDS: (string | number)[] = [1, "1", 2, "p-2"];

type Op =
  | "ask" // the agent sends a request (the id, when its last asking is answered; the session, or none)
  | "answerEdge" // a session answers on its edge link
  | "answerViaAo" // a session answers through the AgentObject (no edge link)
  | "hostile" // a session answers a request that is not its own, on its edge link
  | "edgeReads" // the edge reads the next answer on a session's edge link (or the link loses it)
  | "sentLost" // ... and the edge's `sent` is lost after: the session's second try goes through the AgentObject
  | "aoReads"; // the edge reads the next frame the AgentObject sent it
interface Step {
  op: Op;
  pick: number;
  flag: number;
}

interface Asking {
  id: string | number;
  session: string | null;
  /** The answers the agent got for this asking. */
  got: string[];
}

class World {
  readonly edge = new EdgeAnswers();
  readonly askings: Asking[] = [];
  /** Per id (as JSON), the asking that is open from the agent's side (not answered yet). */
  private readonly current = new Map<string, Asking>();
  /** Answers given to a session and not yet sent by it. */
  private readonly toAnswer: Asking[] = [];
  private readonly edgeLinks = new Map<string, { asking: Asking; from: string; retry: boolean }[]>(SESSIONS.map((s) => [s, []]));
  private readonly viaAo: { asking: Asking | undefined; id: string | number; from: string | null }[] = [];
  readonly log: string[] = [];

  step({ op, pick, flag }: Step): void {
    switch (op) {
      case "ask": {
        const id = IDS[pick % IDS.length] as string | number;
        // An id is asked again only once answered, and once no try of that answer is on its way: a late
        // second try cannot be told from an answer to the new asking (id and session are all it names; see EdgeAnswers).
        if (this.current.has(JSON.stringify(id)) || this.inFlight(id)) return;
        const session = flag % 3 === 2 ? null : (SESSIONS[flag % 2] as string);
        const asking: Asking = { id, session, got: [] };
        this.askings.push(asking);
        this.current.set(JSON.stringify(id), asking);
        this.edge.asked(id, session ?? undefined);
        this.log.push(`ask ${JSON.stringify(id)} of ${session}`);
        // The AgentObject answers a request with no session itself; a session's goes to it.
        if (session === null) this.viaAo.push({ asking, id, from: null });
        else this.toAnswer.push(asking);
        return;
      }
      case "answerEdge":
      case "answerViaAo": {
        const asking = this.toAnswer.splice(pick % Math.max(1, this.toAnswer.length), 1)[0];
        if (!asking?.session) return;
        this.log.push(
          `${asking.session} answers ${JSON.stringify(asking.id)} ${op === "answerEdge" ? "on its edge link" : "through the AO"}`,
        );
        if (op === "answerEdge") this.edgeLinks.get(asking.session)?.push({ asking, from: asking.session, retry: flag % 2 === 0 });
        else this.viaAo.push({ asking, id: asking.id, from: asking.session });
        return;
      }
      case "hostile": {
        const open = [...this.current.values()].filter((a) => a.session !== null);
        const target = open[pick % Math.max(1, open.length)];
        if (!target) return;
        const from = SESSIONS.find((s) => s !== target.session) as string;
        this.log.push(`${from} answers ${JSON.stringify(target.id)}, which is ${target.session}'s`);
        this.deliver(undefined, target.id, from);
        return;
      }
      case "edgeReads":
      case "sentLost": {
        const session = SESSIONS[pick % SESSIONS.length] as string;
        const item = this.edgeLinks.get(session)?.shift();
        if (!item) return;
        // Lost before the edge read it (flag odd), or read; either way, a lost `sent` or a lost link means a second try through the AO.
        const lostBefore = op === "edgeReads" && flag % 4 === 1;
        if (!lostBefore) this.deliver(item.asking, item.asking.id, item.from);
        if (lostBefore || op === "sentLost") this.viaAo.push({ asking: item.asking, id: item.asking.id, from: item.from });
        this.log.push(
          `edge reads ${JSON.stringify(item.asking.id)} from ${session}${lostBefore ? " (lost before)" : op === "sentLost" ? " (sent lost)" : ""}`,
        );
        return;
      }
      case "aoReads": {
        const item = this.viaAo.shift();
        if (!item) return;
        this.log.push(`edge reads the AO's answer to ${JSON.stringify(item.id)} (${item.from ?? "its own"})`);
        this.deliver(item.asking, item.id, item.from);
        return;
      }
    }
  }

  private inFlight(id: string | number): boolean {
    const same = (asking: Asking | undefined) => asking !== undefined && JSON.stringify(asking.id) === JSON.stringify(id);
    return (
      this.toAnswer.some(same) ||
      this.viaAo.some((item) => same(item.asking)) ||
      [...this.edgeLinks.values()].some((l) => l.some((item) => same(item.asking)))
    );
  }

  /** The edge takes an answer (`from`: a session, or null for the AgentObject's own): to the agent if `take` says so. */
  private deliver(asking: Asking | undefined, id: string | number, from: string | null): void {
    if (!this.edge.take(id, from)) return;
    const open = this.current.get(JSON.stringify(id));
    check(open !== undefined, `an answer to ${JSON.stringify(id)} reached the agent with no request of that id open`);
    if (!open) return;
    check(asking === undefined || asking === open, `an answer to an earlier asking of ${JSON.stringify(id)} answered the current one`);
    check(from === null || from === open.session, `${from} answered ${JSON.stringify(id)}, which is ${open.session}'s`);
    open.got.push(from ?? "ao");
    this.current.delete(JSON.stringify(id));
  }

  /** The invariants that hold after every step. */
  checkNow(): void {
    for (const asking of this.askings)
      check(asking.got.length <= 1, `${JSON.stringify(asking.id)} was answered ${asking.got.length} times`);
    for (const s of SESSIONS) {
      const open = [...this.current.values()].some((a) => a.session === s);
      check(this.edge.waiting(s) === open, `waiting(${s}) is ${this.edge.waiting(s)} with ${open ? "a" : "no"} request open`);
    }
    for (const id of IDS) {
      const open = this.current.get(JSON.stringify(id));
      check(this.edge.sessionOf(id) === (open?.session ?? undefined), `sessionOf(${JSON.stringify(id)}) is ${this.edge.sessionOf(id)}`);
    }
    check(this.edge.size === this.current.size, `${this.edge.size} open at the edge, ${this.current.size} in the model`);
  }

  /** Every session answers what it holds and every way is read: each request asked has its one answer. */
  drain(): void {
    while (this.toAnswer.length > 0) this.step({ op: "answerEdge", pick: 0, flag: 1 });
    for (let busy = true; busy;) {
      busy = false;
      for (const s of SESSIONS) {
        while ((this.edgeLinks.get(s)?.length ?? 0) > 0) {
          this.step({ op: "edgeReads", pick: SESSIONS.indexOf(s), flag: 0 });
          busy = true;
        }
      }
      while (this.viaAo.length > 0) {
        this.step({ op: "aoReads", pick: 0, flag: 0 });
        busy = true;
      }
    }
    this.checkNow();
    for (const asking of this.askings)
      check(asking.got.length === 1, `${JSON.stringify(asking.id)} of ${asking.session} was answered ${asking.got.length} times`);
  }
}

function check(ok: boolean, why: string): void {
  if (!ok) throw new Error(why);
}

const steps = fc.array(
  fc.record({
    op: fc.constantFrom<Op>(
      "ask",
      "ask",
      "answerEdge",
      "answerViaAo",
      "hostile",
      "edgeReads",
      "edgeReads",
      "sentLost",
      "aoReads",
      "aoReads",
    ),
    pick: fc.nat(7),
    flag: fc.nat(7),
  }),
  { minLength: 10, maxLength: 80, size: "large" },
);

function run(list: Step[]): World {
  const world = new World();
  try {
    for (const step of list) {
      world.step(step);
      world.checkNow();
    }
    world.drain();
  } catch (error) {
    throw new Error(`${(error as Error).message}\n  ${world.log.join("\n  ")}`, { cause: error });
  }
  return world;
}

describe("edge answers: each of the agent's requests answered once, whichever way the answer came", () => {
  it("over every interleaving of requests, answers on the edge link and through the AgentObject, lost links and lost `sent`s: once, by its own session, never lost", () => {
    fc.assert(
      fc.property(steps, (list) => {
        run(list);
      }),
      { numRuns: RUNS },
    );
  });

  it("the edge link loses the `sent` after the edge sent the answer: the second try through the AgentObject is dropped", () => {
    const world = run([
      { op: "ask", pick: 0, flag: 0 },
      { op: "answerEdge", pick: 0, flag: 0 },
      { op: "sentLost", pick: 0, flag: 0 },
      { op: "aoReads", pick: 0, flag: 0 },
    ]);
    expect(world.askings.map((a) => a.got)).toEqual([["s0"]]);
  });

  it("the edge link loses the answer before the edge had it: the second try through the AgentObject delivers it", () => {
    const world = run([
      { op: "ask", pick: 0, flag: 1 },
      { op: "answerEdge", pick: 0, flag: 0 },
      { op: "edgeReads", pick: 1, flag: 1 },
      { op: "aoReads", pick: 0, flag: 0 },
    ]);
    expect(world.askings.map((a) => a.got)).toEqual([["s1"]]);
  });

  it('1 and "1" are two requests; an id answered may be asked again, and a late second try from another session does not answer the new asking', () => {
    const edge = new EdgeAnswers();
    edge.asked(1, "s0");
    edge.asked("1", "s1");
    expect(edge.take("1", "s0")).toBe(false);
    expect(edge.take(1, "s0")).toBe(true);
    edge.asked(1, "s1");
    expect(edge.take(1, "s0")).toBe(false); // s0's late second try of the first asking
    expect(edge.take(1, "s1")).toBe(true);
    expect(edge.take("1", null)).toBe(true); // the AgentObject's own answer (an error in place of one) answers any open request
    expect(edge.size).toBe(0);
    expect(edge.waiting("s0") || edge.waiting("s1")).toBe(false);
  });

  it("a request sent again under an id still open (never valid JSON-RPC) replaces the first: one answer, by the session it names now", () => {
    const edge = new EdgeAnswers();
    edge.asked(7, "s0");
    edge.asked(7, "s1");
    expect(edge.waiting("s0")).toBe(false);
    expect(edge.take(7, "s0")).toBe(false);
    expect(edge.take(7, "s1")).toBe(true);
    expect(edge.take(7, null)).toBe(false);
    expect(edge.waiting("s1")).toBe(false);
  });

  it("the generated cases exercise every way (the test drives what it claims)", () => {
    const counts = { edge: 0, ao: 0, dropped: 0 };
    fc.assert(
      fc.property(steps, (list) => {
        const world = run(list);
        for (const line of world.log) {
          if (line.includes("on its edge link")) counts.edge++;
          if (line.includes("sent lost")) counts.dropped++;
          if (line.includes("the AO's answer")) counts.ao++;
        }
      }),
      { numRuns: 400 },
    );
    expect(counts.edge).toBeGreaterThan(100);
    expect(counts.ao).toBeGreaterThan(100);
    expect(counts.dropped).toBeGreaterThan(20);
  });
});
