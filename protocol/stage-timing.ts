// Stage timing for the bench (issue 15, "measure first"): where one frame's time goes inside the
// gateway. Off unless the deployment sets STAGE_TIMING=1 (`npm run bench` does, for its own gateway);
// off, a hook costs one boolean check. On, a hook that sees a frame carrying a probe mark
// (`stagemark-<n>`, put in by the bench: an update's text, a permission request's toolCallId and
// optionIds, so a client's or a rule's answer carries it too) records the stage, the marks and the
// isolate's clock; a frame carrying `stageflush` (the bench sends one after its probes) prints what
// the isolate recorded as log lines `STAGE {"stage":…,"marks":[…],"t":…}`. Printing only then keeps
// the log's own cost (about a millisecond a line under wrangler dev) out of the stages it measures.
// On, an unmarked frame costs a substring search of its text (of the strings a few levels into an
// object). A hook never changes the frame it sees. The clock: on Cloudflare it stands still while code
// runs and advances only at I/O (a reading is when the event began); in local workerd, where the bench
// runs, it runs with the code, in whole milliseconds (docs/decisions/0008-performance.md, "Measuring the path").
// Pure: no Cloudflare imports, so the entry points' constructors switch it on and Node tests it.

/** The boundaries a frame crosses, in the order an update or a permission request meets them. */
export type Stage =
  /** The AgentObject has the agent's frame (webSocketMessage). */
  | "agent.in"
  /** The SessionObject has the AgentObject's batch (fromAgentBatch). */
  | "session.in"
  /** The SessionObject sent a frame to a client's socket (held by the output gate until its writes commit). */
  | "session.out"
  /** The edge (ClientConnection) has a frame from the session. */
  | "edge.in"
  /** The edge sent a frame to the client. */
  | "edge.out"
  /** The edge has a frame from the client (a permission answer). */
  | "edge.answer"
  /** The SessionObject has a frame from a client (webSocketMessage). */
  | "session.answer"
  /** The SessionObject hands a frame to the AgentObject (a client's or a rule's answer, decided in this event). */
  | "session.toAgent"
  /** The AgentObject has the session's frame (toAgent). */
  | "agent.toAgent"
  /** The edge has the session's answer to the agent's request (its edge link). */
  | "edge.toAgent"
  /** The AgentObject sent a frame to the agent's socket. */
  | "agent.out";

/** What the bench puts in a probe frame, followed by the probe's number. */
export const STAGE_MARK = "stagemark-";
/** What the bench puts in the frame after its probes: each isolate it crosses prints its records. */
export const STAGE_FLUSH = "stageflush";
/** The start of a stage log line. */
export const STAGE_LINE = "STAGE ";
/** Records held at most (the oldest are kept): a gateway left on with no flush does not grow without bound. */
const MAX_HELD = 100_000;

const MARKS = /stagemark-(\d+)/g;
/** Deep enough for a batch item's text, and a permission answer's result.outcome.optionId. */
const MAX_DEPTH = 4;

let on = false;
const held: string[] = [];
let sink: (line: string) => void = (line) => {
  // eslint-disable-next-line no-console -- the bench reads these lines from the gateway's output
  console.log(line);
};

/** Each entry point (the edge's ClientConnection, the objects) calls this with its env when it is made. */
export function stageTimingFrom(env: { STAGE_TIMING?: string }): void {
  on = env.STAGE_TIMING === "1";
}

/** One boundary crossed by `frame` (a frame's text, or the value that carries it). */
export function stage(name: Stage, frame: unknown): void {
  if (!on) return;
  const t = Date.now();
  const found = { marks: new Set<string>(), flush: false };
  scan(frame, found, 0);
  if (found.marks.size > 0 && held.length < MAX_HELD)
    held.push(`${STAGE_LINE}${JSON.stringify({ stage: name, marks: [...found.marks], t })}`);
  if (found.flush && held.length > 0) sink(held.splice(0).join("\n"));
}

/** Where the lines go (tests); the default is console.log, which wrangler prints. */
export function setStageSink(next: (line: string) => void): void {
  sink = next;
}

function scan(value: unknown, found: { marks: Set<string>; flush: boolean }, depth: number): void {
  if (typeof value === "string") {
    if (value.includes(STAGE_FLUSH)) found.flush = true;
    if (!value.includes(STAGE_MARK)) return;
    for (const match of value.matchAll(MARKS)) if (match[1] !== undefined) found.marks.add(match[1]);
  } else if (depth < MAX_DEPTH && typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) scan(inner, found, depth + 1);
  }
}
