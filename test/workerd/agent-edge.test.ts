// The stream at the edge (worker/agent-connection.ts, protocol/edge-routing.ts): once the AgentObject
// grants a session, the edge delivers the agent's notifications for it straight to the SessionObject
// (an edge link, or RPC while none is open), and everything else still goes through the AgentObject.
// Whichever path a frame takes, each client must see the agent's frames of a session once and in the
// agent's order, checked by the gateway's rules as before. The edge lives in the Worker invocation,
// out of reach of runInDurableObject: faults are injected on the SessionObject and AgentObject
// instances, and what went which way is counted there.
//
// The workerd tests close links (the AgentObject's and the edge's) unused for 50 ms (vitest.config.ts).

import { env, runInDurableObject } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { type AgentObject, agentTesting } from "../../durable-objects/agent/agent-object";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { CONTROL_MARK, EDGE_LINK_HEADER, decodeControl } from "../../protocol/agent-edge-wire";
import { encodeLink, linkToAgent } from "../../protocol/agent-link-wire";
import { agentStub, crashObject, sessionStub } from "./fuzz-faults";
import {
  AGENT_OBJECT_LOST,
  attachClient,
  barrier,
  clientWithSession,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
  type Peer,
  type ScriptedAgent,
  type SeededTenant,
  ALLOW,
  allowNpmTest,
  withoutCursor,
} from "./helpers";

type Json = Record<string, any>;

// ── what the tests count on the objects' instances ───────────────────────────────────────────────
/** Counters a test keeps on one object instance (set by `watchAgentObject` / `watchSession`). */
interface AgentWatch {
  /** Frames of the agent the edge sent through the AgentObject for a session (`attributed`): what went through it. */
  viaAgentObject: Record<string, number>;
  /** Grants it gave the edge (each reserves a range of numbers). */
  grants: number;
}
type Cut = "close" | "applied" | "hang";
interface SessionWatch {
  /** Batches that came on an edge link, and the open edge links the session had at the last one. */
  edgeBatches: number;
  edgeLinksOpen: number;
  /**
   * What the next edge-link batch meets: applied and acked (as the real object does), or cut: the link
   * closed before applying it (`close`), applied and the link closed before the ack (`applied`), or
   * neither applied nor acked, left hanging (`hang`).
   */
  cut?: Cut;
  cuts: number;
}

/**
 * The large bursts: 2,000 in `npm run test:slow` (BURST_UPDATES set), 600 in `npm test`, which keeps
 * every property (a burst far over a lease, held at the edge, in order, once) at a size that keeps the
 * suite fast. The model-based test runs more sequences there too.
 */
const SLOW = Number(env.BURST_UPDATES) > 0;
const LARGE_BURST = SLOW ? 2000 : 600;
const MODEL_RUNS = SLOW ? 60 : 10;

/** The counters `watchAgentObject` keeps, by AgentObject instance (an evicted object's new instance has none). */
const agentWatches = new WeakMap<AgentObject, AgentWatch>();

/** Counts, on the AgentObject's instance, the frames the edge sends through it for each session and the grants it gives. */
async function watchAgentObject(t: SeededTenant, agent: ScriptedAgent): Promise<void> {
  await runInDurableObject(agentStub(t.tenantId, agent.name), (instance: AgentObject) => {
    if (agentWatches.has(instance)) return;
    const watch: AgentWatch = { viaAgentObject: {}, grants: 0 };
    agentWatches.set(instance, watch);
    const seam = agentTesting(instance);
    seam.controlFrame = (data, _epoch, handle) => {
      const control = decodeControl(data);
      if (control?.t === "attributed") watch.viaAgentObject[control.s] = (watch.viaAgentObject[control.s] ?? 0) + 1;
      handle();
    };
    seam.granted = () => {
      watch.grants++;
    };
  });
}

async function agentWatch(t: SeededTenant, agent: ScriptedAgent): Promise<AgentWatch> {
  return runInDurableObject(agentStub(t.tenantId, agent.name), (instance: AgentObject) =>
    structuredClone(agentWatches.get(instance) as AgentWatch),
  );
}

/** Deliveries to one session held by the test on the AgentObject's instance (the stale-grant case), by instance. */
const staleHolds = new WeakMap<AgentObject, { held: boolean; granted: boolean }>();

/** The counters `watchSession` keeps, by SessionObject instance (an evicted object's new instance has none). */
const sessionWatches = new WeakMap<SessionObject, SessionWatch>();

function watchOf(instance: SessionObject): SessionWatch {
  const watch = sessionWatches.get(instance);
  if (!watch) throw new Error("the session's instance is not watched (watchSession), or was replaced since");
  return watch;
}

/** Counts, on the SessionObject's instance, the batches that come on an edge link; cuts the next one when told (its test seam's link hook). */
async function watchSession(t: SeededTenant, sessionId: string): Promise<void> {
  await runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject, state: DurableObjectState) => {
    if (sessionWatches.has(instance)) return;
    const watch: SessionWatch = { edgeBatches: 0, edgeLinksOpen: 0, cuts: 0 };
    sessionWatches.set(instance, watch);
    sessionTesting(instance).onLinkMessage = (ws, _data, apply) => {
      const attachment = ws.deserializeAttachment() as { link?: string } | null;
      if (attachment?.link !== "edge") return apply();
      watch.edgeBatches++;
      watch.edgeLinksOpen = state.getWebSockets("edge-link").length;
      const cut = watch.cut;
      if (!cut) return apply();
      watch.cut = undefined;
      watch.cuts++;
      // Applied (and committed) with its ack swallowed, or neither: in flight when the link closes.
      if (cut === "applied") apply(false);
      if (cut !== "hang") ws.close(1011, "cut by a test");
    };
  });
}

async function sessionWatch(t: SeededTenant, sessionId: string): Promise<SessionWatch> {
  return runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject) => structuredClone(watchOf(instance)));
}

/**
 * Arms the cut of the next batch on an edge link (undefined: disarms it) and returns the session's
 * logged chunk texts as they are then (`loggedChunks`): one call, so the link has as little time as
 * possible to idle out before the burst that follows.
 */
async function armCut(t: SeededTenant, sessionId: string, cut: Cut | undefined): Promise<string[]> {
  return runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject) => {
    watchOf(instance).cut = cut;
    return chunksOfLog(instance);
  });
}

/**
 * Bursts of `n` updates, each after an edge link was seen, until one of the burst's batches came on
 * an edge link and met `cut`. Tests set AGENT_LINK_IDLE_MS to 50 ms, so on a loaded machine the link
 * can idle out between the check and the burst; the edge then sends the batch by RPC (and opens a new
 * link for later ones), and nothing is cut: that burst is not the case under test, so it is taken
 * whole and another is sent. A cut that `hang`s leaves the burst unseen. Returns the log's chunks just
 * before the burst that was cut, and that burst's texts.
 */
async function burstUntilCut(
  t: SeededTenant,
  agent: ScriptedAgent,
  client: Peer,
  sessionId: string,
  cut: Cut,
  name: string,
  n: number,
): Promise<{ loggedBefore: string[]; texts: string[] }> {
  for (let round = 0; round < 10; round++) {
    await untilEdgeLink(t, agent, client, sessionId);
    const loggedBefore = await armCut(t, sessionId, cut);
    const texts = Array.from({ length: n }, (_, i) => `${name}-${round}-${i}`);
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    let cuts = 0;
    await vi.waitFor(
      async () => {
        cuts = (await sessionWatch(t, sessionId)).cuts;
        expect(cuts > 0 || unclaimedChunks(client).includes(texts.at(-1)!)).toBe(true);
      },
      { timeout: 60_000, interval: 10 },
    );
    if (cuts > 0) return { loggedBefore, texts };
    expect(await chunksSeen(client, n)).toEqual(texts);
    await armCut(t, sessionId, undefined);
  }
  throw new Error("no burst came on an edge link in 10 rounds");
}

/** The texts of a chunk (see `chunk`): each ends with "|". */
const textsOf = (text: string) => text.split("|").slice(0, -1);

/** The session's log as a later session/load replays it: the texts of its agent_message_chunk updates. */
async function loggedChunks(t: SeededTenant, sessionId: string): Promise<string[]> {
  return runInDurableObject(sessionStub(t.tenantId, sessionId), chunksOfLog);
}

function chunksOfLog(instance: SessionObject): string[] {
  const texts: string[] = [];
  for (const entry of sessionTesting(instance).store.replayable()) {
    const body = JSON.parse(entry.body) as Json;
    if (body.params?.update?.sessionUpdate === "agent_message_chunk") texts.push(...textsOf(body.params.update.content.text as string));
  }
  return texts;
}

// ── the agent's frames and what the client sees of them ──────────────────────────────────────────
/** An update whose text ends with "|": the log (and a replay) merges consecutive chunks, and the texts stay apart. */
function chunk(sessionId: string, text: string) {
  return { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `${text}|` } } };
}

const isChunk = (m: Json) => m.method === "session/update" && m.params?.update?.sessionUpdate === "agent_message_chunk";

/**
 * The texts of the next `n` updates the client sees (a replayed chunk may carry several). The wait is
 * a bound for a failure, not a measure: generous, so a machine under load is never mistaken for a loss.
 */
async function chunksSeen(client: Peer, n: number, timeoutMs = 60_000): Promise<string[]> {
  const seen: string[] = [];
  while (seen.length < n) seen.push(...textsOf((await client.next(isChunk, timeoutMs)).params.update.content.text as string));
  return seen;
}

/** The texts of the chunks the client holds and no test has taken yet, in the order it got them. */
function unclaimedChunks(client: Peer): string[] {
  return client
    .unclaimed()
    .filter(isChunk)
    .flatMap((m) => textsOf(m.params.update.content.text as string));
}

function noMoreChunks(client: Peer): void {
  expect(client.unclaimed().filter(isChunk)).toEqual([]);
}

/** A tenant, a dial-in agent and a client whose session has a turn going; both objects watched. */
async function turnGoing(settings: Record<string, unknown> = {}) {
  const t = await seedTenant(settings);
  const agent = await dialInAgent(t);
  await watchAgentObject(t, agent);
  const { client, sessionId } = await clientWithSession(t, agent);
  await watchSession(t, sessionId);
  const prompt = await startTurn(client, agent, sessionId);
  return { t, agent, client, sessionId, prompt };
}

/**
 * The session's notifications go direct: updates sent one at a time (each awaited by the client)
 * until one reached the client without the AgentObject queuing it. The first goes through the
 * AgentObject (nothing is granted before), and its grant follows once the session applied it.
 */
async function untilDirect(t: SeededTenant, agent: ScriptedAgent, client: Peer, sessionId: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const before = (await agentWatch(t, agent)).viaAgentObject[sessionId] ?? 0;
    agent.peer.notify("session/update", chunk(sessionId, `warm-${i}`));
    expect(await chunksSeen(client, 1)).toEqual([`warm-${i}`]);
    if (((await agentWatch(t, agent)).viaAgentObject[sessionId] ?? 0) === before) return;
  }
  throw new Error("no update of the session went direct after 50 tries");
}

/** Direct, and over the edge link (the first direct batch goes by RPC and opens it). */
async function untilEdgeLink(t: SeededTenant, agent: ScriptedAgent, client: Peer, sessionId: string): Promise<void> {
  await untilDirect(t, agent, client, sessionId);
  for (let i = 0; i < 50; i++) {
    if ((await sessionWatch(t, sessionId)).edgeBatches > 0) return;
    agent.peer.notify("session/update", chunk(sessionId, `link-${i}`));
    expect(await chunksSeen(client, 1)).toEqual([`link-${i}`]);
  }
  throw new Error("no batch came on an edge link after 50 tries");
}

describe("agent edge: the direct path", () => {
  it("once granted, a session's updates reach the client without the AgentObject handling them, over an edge link", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    await untilEdgeLink(t, agent, client, sessionId);
    const before = await agentWatch(t, agent);
    const batchesBefore = (await sessionWatch(t, sessionId)).edgeBatches;
    expect(before.grants).toBeGreaterThanOrEqual(1);
    const texts = Array.from({ length: 10 }, (_, i) => `direct-${i}`);
    for (const text of texts) {
      agent.peer.notify("session/update", chunk(sessionId, text));
      expect(await chunksSeen(client, 1)).toEqual([text]);
    }
    // None of the ten went through the AgentObject; they came over the session's edge link.
    expect((await agentWatch(t, agent)).viaAgentObject[sessionId]).toBe(before.viaAgentObject[sessionId]);
    const after = await sessionWatch(t, sessionId);
    expect(after.edgeBatches).toBeGreaterThan(batchesBefore);
    expect(after.edgeLinksOpen).toBe(1);
    // The edge link is no client.
    expect((await sessionStub(t.tenantId, sessionId).snapshot())?.clients).toHaveLength(1);
    // The prompt's answer goes through the AgentObject, after the updates.
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("turn"))).result).toEqual({ stopReason: "end_turn" });
    await barrier(client, agent, sessionId);
    noMoreChunks(client);
  });

  it("a second client that loads the session in the middle of a direct burst gets every update once, in order (replay, then live)", async () => {
    const { t, agent, client, sessionId } = await turnGoing();
    await untilEdgeLink(t, agent, client, sessionId);
    const batchesBefore = (await sessionWatch(t, sessionId)).edgeBatches;
    const texts = Array.from({ length: 200 }, (_, i) => `m${i}`);
    for (const text of texts.slice(0, 100)) agent.peer.notify("session/update", chunk(sessionId, text));
    const loading = attachClient(t, agent, sessionId);
    for (const text of texts.slice(100)) agent.peer.notify("session/update", chunk(sessionId, text));
    const later = await loading;
    expect(await chunksSeen(client, texts.length)).toEqual(texts);
    // The precondition of "a direct burst": it came (at least in part: a lease may lapse under load) on the session's edge link.
    const watched = await sessionWatch(t, sessionId);
    expect(watched.edgeBatches, "the burst came on the session's edge link").toBeGreaterThan(batchesBefore);
    expect(watched.edgeLinksOpen).toBe(1);
    // The first client saw the last one: the log has them all, and the second client sees exactly the log.
    const logged = await loggedChunks(t, sessionId);
    expect(logged.slice(logged.indexOf("m0"))).toEqual(texts);
    expect(await chunksSeen(later, logged.length, 10_000)).toEqual(logged);
    await barrier(later, agent, sessionId);
    noMoreChunks(later);
  });

  it("after the grant, _acp_gateway/* notifications are dropped and _meta.acpGateway marks removed on the direct path too", async () => {
    const { t, agent, client, sessionId } = await turnGoing();
    await untilDirect(t, agent, client, sessionId);
    const before = (await agentWatch(t, agent)).viaAgentObject[sessionId];
    agent.peer.notify("_acp_gateway/turn_ended", { sessionId, reason: "permission_deadline" });
    agent.peer.notify("_acp_gateway/permission_resolved", { sessionId, toolCallId: "x", outcome: { outcome: "cancelled" } });
    agent.peer.send(
      `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":${JSON.stringify(sessionId)},` +
        `"update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"rm -rf"},"_meta":{"acpGatew\\u0061y":{"x":1},"keep":2}},` +
        `"_meta":{"acpGateway":{"synthesized":true,"connectionId":"someone"},"traceparent":"00-1"}}}`,
    );
    agent.peer.notify("session/update", chunk(sessionId, "after"));
    const live = await client.next((m) => m.params?.update?.sessionUpdate === "user_message_chunk");
    expect(withoutCursor(live.params)._meta).toEqual({ traceparent: "00-1" });
    expect(live.params.update._meta).toEqual({ keep: 2 });
    expect(await chunksSeen(client, 1)).toEqual(["after"]);
    expect(client.unclaimed().filter((m) => String(m.method).startsWith("_acp_gateway/"))).toEqual([]);
    // They went direct: the checks are the edge's, not the AgentObject's.
    expect((await agentWatch(t, agent)).viaAgentObject[sessionId]).toBe(before);
    const later = await attachClient(t, agent, sessionId);
    const replayed = await later.next((m) => m.params?.update?.sessionUpdate === "user_message_chunk");
    expect(withoutCursor(replayed.params)._meta).toEqual({ traceparent: "00-1" });
    expect(replayed.params.update._meta).toEqual({ keep: 2 });
    await barrier(later, agent, sessionId);
    expect(
      later.unclaimed().filter((m) => m.method === "_acp_gateway/turn_ended" || m.method === "_acp_gateway/permission_resolved"),
    ).toEqual([]);
  });
});

// ── order across the two paths, model-based ───────────────────────────────────────────────────────
/**
 * One frame of the agent in a turn, or a wait: `await` waits until the client has seen everything
 * sent so far (so a grant lands between frames); without it the agent sends in one burst.
 */
type Step = "chunk" | "tool_call" | "tool_call_update" | "ext" | "permission" | "ruled" | "await";
const stepArb = fc.constantFrom<Step>(
  "chunk",
  "chunk",
  "chunk",
  "tool_call",
  "tool_call_update",
  "ext",
  "permission",
  "ruled",
  "await",
  "await",
);

/** What the client sees of an agent's frame, as a key; the gateway's own notifications are none. */
function keyOf(m: Json): string | undefined {
  if (String(m.method).startsWith("_acp_gateway/")) return undefined;
  if (m.method === "session/request_permission") return `p:${m.params.toolCall.toolCallId}`;
  if (m.method === "_vendor/note") return `x:${m.params.n}`;
  const update = m.method === "session/update" ? m.params?.update : undefined;
  if (update?.sessionUpdate === "agent_message_chunk") return `c:${textsOf(update.content.text as string).join(",")}`;
  if (update?.sessionUpdate === "tool_call") return `tc:${update.toolCallId}`;
  if (update?.sessionUpdate === "tool_call_update") return `tcu:${update.toolCallId}:${update.title}`;
  return `?:${JSON.stringify(m)}`;
}

/** The client's side of a turn: records what it sees, answers every permission request, until the prompt's answer. */
class Watcher {
  readonly seen: string[] = [];
  private readonly waiting: { n: number; wake(): void }[] = [];
  readonly done: Promise<void>;

  constructor(private readonly client: Peer) {
    this.done = this.run();
  }

  private async run(): Promise<void> {
    for (;;) {
      const m = await this.client.next(() => true, 10_000);
      if (m.id === "turn" && !("method" in m)) return this.record("answer");
      if (m.method === "session/request_permission") this.client.respond(m.id, ALLOW);
      const key = keyOf(m);
      if (key !== undefined) this.record(key);
    }
  }

  private record(key: string): void {
    this.seen.push(key);
    for (const w of this.waiting.filter((w) => this.seen.length >= w.n)) w.wake();
  }

  /** Resolves once the client has seen `n` frames (or rejects when the watcher stopped). */
  until(n: number): Promise<void> {
    if (this.seen.length >= n) return Promise.resolve();
    const reached = new Promise<void>((wake) => this.waiting.push({ n, wake }));
    return Promise.race([reached, this.done.then(() => reached)]);
  }
}

/**
 * The client saw the agent's frames once each, and the prompt's answer last. The notifications in the
 * agent's order exactly; a permission request after every frame the agent sent before it, though
 * not always before those after it: the session shows it to people once the tenant's rules are
 * consulted, which may mean loading them (protocol/permission-machine.ts `rulesAnswered`; so on the
 * AgentObject's path alone too), while the updates after it are fanned out as they come.
 */
function expectAgentOrder(seen: string[], expected: string[]): void {
  const isAsk = (key: string) => key.startsWith("p:");
  expect(seen.filter((key) => !isAsk(key))).toEqual([...expected.filter((key) => !isAsk(key)), "answer"]);
  expect(seen.filter(isAsk).sort()).toEqual(expected.filter(isAsk).sort());
  for (const [j, key] of expected.entries()) {
    if (!isAsk(key)) continue;
    const shownAt = seen.indexOf(key);
    for (const before of expected.slice(0, j)) expect(seen.indexOf(before), `${before} before ${key}`).toBeLessThan(shownAt);
  }
}

/** Over the runs: frames the agent sent in them, and how many of them the AgentObject queued (the rest went direct). */
const pathCounts = { frames: 0, viaAgentObject: 0 };

/** One turn: the agent's frames as the steps say, then the prompt's answer; the client must see exactly them, in order. */
async function turnInOrder(steps: Step[]): Promise<void> {
  const { t, agent, client, sessionId, prompt } = await turnGoing();
  if (steps.includes("ruled")) await allowNpmTest(t);
  const watcher = new Watcher(client);
  const expected: string[] = [];
  const permissions: (string | number)[] = [];
  const ruled: (string | number)[] = [];
  const toolCalls: string[] = [];
  let frames = 0;
  for (const [i, step] of steps.entries()) {
    if (step === "await") {
      await watcher.until(expected.length);
      continue;
    }
    frames++;
    if (step === "ruled") {
      // Answered by the tenant's rule: no person is asked, so the client sees only the gateway's notice.
      ruled.push(agent.askPermission(sessionId, { toolCallId: `ruled-${i}`, kind: "execute", rawInput: { command: "npm test" } }));
      continue;
    }
    if (step === "permission") {
      permissions.push(agent.askPermission(sessionId, { toolCallId: `perm-${i}`, title: "Run", kind: "execute" }));
      expected.push(`p:perm-${i}`);
      continue;
    }
    if (step === "chunk") {
      agent.peer.notify("session/update", chunk(sessionId, `t${i}`));
      expected.push(`c:t${i}`);
    } else if (step === "ext") {
      agent.peer.notify("_vendor/note", { sessionId, n: i });
      expected.push(`x:${i}`);
    } else if (step === "tool_call" || toolCalls.length === 0) {
      toolCalls.push(`tc-${i}`);
      agent.update(sessionId, { sessionUpdate: "tool_call", toolCallId: `tc-${i}`, title: "Read", kind: "read", status: "pending" });
      expected.push(`tc:tc-${i}`);
    } else {
      const id = toolCalls[i % toolCalls.length] as string;
      agent.update(sessionId, { sessionUpdate: "tool_call_update", toolCallId: id, title: `u${i}`, status: "in_progress" });
      expected.push(`tcu:${id}:u${i}`);
    }
  }
  // The agent ends its turn once every person has answered it.
  for (const id of permissions) await agent.peer.next(isResponseTo(id), 10_000);
  for (const id of ruled) expect((await agent.peer.next(isResponseTo(id), 10_000)).result).toEqual(ALLOW);
  agent.peer.respond(prompt.id, { stopReason: "end_turn" });
  await watcher.done;
  expectAgentOrder(watcher.seen, expected);
  await barrier(client, agent, sessionId);
  expect(client.unclaimed().filter((m) => keyOf(m) !== undefined)).toEqual([]);
  pathCounts.frames += frames;
  pathCounts.viaAgentObject += (await agentWatch(t, agent)).viaAgentObject[sessionId] ?? 0;
}

describe("agent edge: order across the two paths", () => {
  it("model-based: the client sees exactly the agent's frames of a turn, in the agent's order, each once, and the prompt's answer last", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 2, maxLength: 30, size: "max" }), (steps) => turnInOrder(steps)),
      { numRuns: MODEL_RUNS },
    );
    // Not vacuous: some frames went direct, others through the AgentObject.
    expect(pathCounts.viaAgentObject).toBeGreaterThan(0);
    expect(pathCounts.viaAgentObject).toBeLessThan(pathCounts.frames);
  }, 120_000);

  it.each<[string, Step[]]>([
    [
      "a permission request between direct updates",
      ["chunk", "await", "chunk", "chunk", "await", "chunk", "permission", "chunk", "chunk", "await", "chunk"],
    ],
    ["a burst with no waits", ["chunk", "tool_call", "tool_call_update", "ext", "permission", "chunk", "tool_call_update", "chunk"]],
    [
      "the grant between every frame",
      ["chunk", "await", "ext", "await", "tool_call", "await", "tool_call_update", "await", "permission", "await", "chunk"],
    ],
    [
      "requests answered by a rule between direct updates",
      ["chunk", "await", "chunk", "ruled", "chunk", "await", "ruled", "permission", "chunk"],
    ],
  ])("fixed: %s", async (_, steps) => {
    await turnInOrder(steps);
  });
});

describe("agent edge: grants", () => {
  it("a grant that names an older count than the edge's (it sent a frame since) is ignored: the next update waits behind that frame", async () => {
    const { t, agent, client, sessionId } = await turnGoing();
    // The AgentObject grants nothing by itself; when the session's second frame comes, its delivery is
    // held, and the edge gets a grant naming the count before that frame (as if it had crossed it).
    await runInDurableObject(agentStub(t.tenantId, agent.name), (instance: AgentObject) => {
      const seam = agentTesting(instance);
      const stale = { held: false, granted: false };
      staleHolds.set(instance, stale);
      seam.grants = false;
      seam.held = (id) => id === sessionId && stale.held;
      const watched = seam.controlFrame; // watchAgentObject's count
      seam.controlFrame = (data, epoch, handle) => {
        const control = decodeControl(data);
        const next = () => (watched ? watched(data, epoch, handle) : handle());
        if (control?.t !== "attributed" || control.s !== sessionId || control.c !== 2) return next();
        stale.held = true;
        next();
        stale.granted = seam.grant(sessionId, 1);
      };
    });
    agent.peer.notify("session/update", chunk(sessionId, "one"));
    expect(await chunksSeen(client, 1)).toEqual(["one"]);
    agent.peer.notify("session/update", chunk(sessionId, "two"));
    const held = () =>
      runInDurableObject(agentStub(t.tenantId, agent.name), (instance: AgentObject) => {
        return staleHolds.get(instance)?.held;
      });
    await vi.waitFor(async () => expect(await held()).toBe(true), { timeout: 5000, interval: 10 });
    agent.peer.notify("session/update", chunk(sessionId, "three"));
    // "three" went through the AgentObject too (it counts 3 frames), queued behind "two".
    await vi.waitFor(async () => expect((await agentWatch(t, agent)).viaAgentObject[sessionId]).toBe(3), { timeout: 5000, interval: 10 });
    await runInDurableObject(agentStub(t.tenantId, agent.name), (instance: AgentObject) => {
      const stale = staleHolds.get(instance);
      expect(stale?.held).toBe(true); // the precondition: the same instance still holds the delivery
      expect(stale?.granted).toBe(true); // and sent the edge the stale grant
      if (stale) stale.held = false;
      agentTesting(instance).deliver(sessionId);
    });
    expect(await chunksSeen(client, 2)).toEqual(["two", "three"]);
    await barrier(client, agent, sessionId);
    noMoreChunks(client);
  });
});

describe("agent edge: the edge link", () => {
  it("a session accepts an edge link only from its own agent (404 for another name, 101 for its own), and never takes it for a client", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const stub = sessionStub(t.tenantId, sessionId);
    const open = (name: string) =>
      stub.fetch("https://session.internal/edge-link", { headers: { Upgrade: "websocket", [EDGE_LINK_HEADER]: name } });
    const other = await open("other-agent");
    expect(other.status).toBe(404);
    const own = await open(agent.name);
    expect(own.status).toBe(101);
    const link = own.webSocket as WebSocket;
    link.accept();
    const onLink: string[] = [];
    link.addEventListener("message", (e) => {
      const text = String(e.data);
      // The session's answer to the agent's request may come on the newest edge link: this one fails it,
      // as an edge fails one not of its connection, and the answer goes through the AgentObject.
      const answer = linkToAgent(text);
      if (answer?.t === "toAgent" && (answer.frame as Json).type === "response") link.send(encodeLink({ t: "failed", n: answer.n }));
      else onLink.push(text);
    });
    // Traffic both ways, on both of the agent's paths: none of it is fanned out to the link.
    await untilDirect(t, agent, client, sessionId);
    const reqId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    const copy = await client.next(isMethod("session/request_permission"));
    client.respond(copy.id, { outcome: { outcome: "selected", optionId: "allow" } });
    await agent.peer.next(isResponseTo(reqId));
    agent.peer.notify("session/update", chunk(sessionId, "last"));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect(await chunksSeen(client, 1)).toEqual(["last"]);
    await client.next(isResponseTo("turn"));
    await barrier(client, agent, sessionId);
    const snapshot = await stub.snapshot();
    expect(snapshot?.clients).toHaveLength(1);
    expect(onLink).toEqual([]);
    link.close(1000, "done");
  });

  it.each([
    ["before the session applied it", "close"],
    ["after the session applied it, before its ack", "applied"],
  ] as const)(
    "a direct batch cut by the edge link closing %s reaches the client once and in order (handed back through the AgentObject), and so do later updates",
    async (_, cut) => {
      const { t, agent, client, sessionId, prompt } = await turnGoing();
      const { loggedBefore, texts } = await burstUntilCut(t, agent, client, sessionId, cut, "burst", 20);
      expect(await chunksSeen(client, texts.length)).toEqual(texts);
      expect((await sessionWatch(t, sessionId)).cuts).toBe(1);
      const later = Array.from({ length: 5 }, (_, i) => `later-${i}`);
      for (const text of later) agent.peer.notify("session/update", chunk(sessionId, text));
      agent.peer.respond(prompt.id, { stopReason: "end_turn" });
      expect(await chunksSeen(client, later.length)).toEqual(later);
      expect((await client.next(isResponseTo("turn"))).result).toEqual({ stopReason: "end_turn" });
      await barrier(client, agent, sessionId);
      noMoreChunks(client);
      expect(await loggedChunks(t, sessionId)).toEqual([...loggedBefore, ...texts, ...later]);
    },
  );

  it("the session crashes with a direct batch in flight: a reloading client gets every update once, the log holds each once", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const { loggedBefore: seenBefore, texts: inFlight } = await burstUntilCut(t, agent, client, sessionId, "hang", "flight", 10);
    expect((await sessionWatch(t, sessionId)).cuts).toBe(1);
    await crashObject(sessionStub(t.tenantId, sessionId));
    // The client's session socket dropped: it reconnects and loads the session.
    await client.closed;
    const reloaded = await attachClient(t, agent, sessionId);
    const after = Array.from({ length: 5 }, (_, i) => `after-${i}`);
    for (const text of after) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    const expected = [...seenBefore, ...inFlight, ...after];
    expect(await chunksSeen(reloaded, expected.length)).toEqual(expected);
    await barrier(reloaded, agent, sessionId);
    noMoreChunks(reloaded);
    expect(await loggedChunks(t, sessionId)).toEqual(expected);
  });
});

describe("agent edge: the agent's end", () => {
  it("the agent closes its socket right after a burst of direct updates: the turn's end reaches the client after the burst's last update", async () => {
    const { t, agent, client, sessionId } = await turnGoing();
    await untilEdgeLink(t, agent, client, sessionId);
    const texts = Array.from({ length: 50 }, (_, i) => `final-${i}`);
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.close();
    expect(await chunksSeen(client, texts.length)).toEqual(texts);
    const answer = await client.next(isResponseTo("turn"));
    expect(answer.error?.data?.reason).toBe("agent_disconnected");
    expect((await client.next(isMethod("_acp_gateway/turn_ended"))).params.reason).toBe("agent_disconnected");
    // In the order the client received them: the burst, then the prompt's error, then turn_ended.
    const order = client.raw.map((text) => JSON.parse(text) as Json);
    const lastUpdate = order.findLastIndex(isChunk);
    expect(order.findIndex((m) => m.id === "turn" && !("method" in m))).toBeGreaterThan(lastUpdate);
    expect(order.findIndex(isMethod("_acp_gateway/turn_ended"))).toBeGreaterThan(lastUpdate);
  }, 90_000);

  it(`the agent closes its socket right after a burst of ${LARGE_BURST.toLocaleString("en")} (some waiting at the edge for the tenant's lease): all arrive, then the turn's end`, async () => {
    const { agent, client, sessionId } = await turnGoing();
    const texts = Array.from({ length: LARGE_BURST }, (_, i) => `b${i}`);
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.close();
    const answer = await client.next(isResponseTo("turn"), 150_000);
    expect(answer.error?.data?.reason).toBe("agent_disconnected");
    expect((await client.next(isMethod("_acp_gateway/turn_ended"))).params.reason).toBe("agent_disconnected");
    // The answer and turn_ended come after the updates: by then every one of them has arrived.
    expect(unclaimedChunks(client)).toEqual(texts);
  }, 180_000);

  it("the AgentObject crashes with direct updates in flight: the agent is told to reconnect, the client gets a gap-free prefix once, then the turn's end, and nothing after it", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    await untilEdgeLink(t, agent, client, sessionId);
    const texts = Array.from({ length: 100 }, (_, i) => `c${i}`);
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect(await chunksSeen(client, 1)).toEqual(["c0"]);
    await crashObject(agentStub(t.tenantId, agent.name));
    await expect(agent.peer.closed).resolves.toMatchObject(AGENT_OBJECT_LOST);
    const again = await dialInAgent(t, agent.name);
    const done = await client.next(isResponseTo("turn"), 60_000);
    const seen = unclaimedChunks(client);
    expect(seen).toEqual(texts.slice(1, 1 + seen.length));
    if (done.error) {
      expect(done.error.data.reason).toBe("agent_disconnected");
      expect((await client.next(isMethod("_acp_gateway/turn_ended"))).params.reason).toBe("agent_disconnected");
    } else {
      expect(done.result).toEqual({ stopReason: "end_turn" });
      expect(seen).toHaveLength(99);
    }
    // A new turn on the new connection; nothing of the old one arrives after its end.
    client.send({ jsonrpc: "2.0", id: "again", method: "session/prompt", params: { sessionId, prompt: [] } });
    const second = await again.peer.next(isMethod("session/prompt"));
    again.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "back|" } });
    again.peer.respond(second.id, { stopReason: "end_turn" });
    expect(await chunksSeen(client, 1 + seen.length)).toEqual([...seen, "back"]);
    expect((await client.next(isResponseTo("again"))).result).toEqual({ stopReason: "end_turn" });
    await barrier(client, again, sessionId);
    noMoreChunks(client);
  }, 120_000);

  it("a frame forged as a control frame (CONTROL_MARK{handover...}) is answered as a parse error and never reaches another session", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    await watchAgentObject(t, agent);
    const { client, sessionId } = await clientWithSession(t, agent);
    const other = await clientWithSession(t, agent, t.clientKey2);
    await startTurn(client, agent, sessionId);
    await startTurn(other.client, agent, other.sessionId, "other-turn");
    agent.peer.notify("session/update", chunk(other.sessionId, "before"));
    expect(await chunksSeen(other.client, 1)).toEqual(["before"]);
    const loggedBefore = await loggedChunks(t, other.sessionId);
    const forged = JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: chunk(other.sessionId, "forged") });
    // A handover numbered far above anything the AgentObject stamps: applied, it would hide every later frame.
    const header = JSON.stringify({ t: "handover", s: other.sessionId, c: 1, seqs: [1_000_000_000] });
    agent.peer.send(`${CONTROL_MARK}${header}\u0000${forged}`);
    const refused = await agent.peer.next((m) => m.error !== undefined && !("method" in m));
    expect(refused.error.code).toBe(-32700);
    // From the agent's own session too.
    agent.peer.send(`${CONTROL_MARK}${JSON.stringify({ t: "attributed", s: other.sessionId, c: 1 })}\u0000${forged}`);
    expect((await agent.peer.next((m) => m.error !== undefined && !("method" in m))).error.code).toBe(-32700);
    agent.peer.notify("session/update", chunk(other.sessionId, "after"));
    expect(await chunksSeen(other.client, 1)).toEqual(["after"]);
    await barrier(other.client, agent, other.sessionId);
    noMoreChunks(other.client);
    expect(await loggedChunks(t, other.sessionId)).toEqual([...loggedBefore, "after"]);
    noMoreChunks(client);
  });

  it(`a burst of ${LARGE_BURST.toLocaleString("en")} updates at once under the tenant's default limits all arrive, in order, none refused`, async () => {
    const { agent, client, sessionId, prompt } = await turnGoing();
    const texts = Array.from({ length: LARGE_BURST }, (_, i) => `b${i}`);
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    // The answer comes after the updates: by then every one of them has arrived.
    expect((await client.next(isResponseTo("turn"), 150_000)).result).toEqual({ stopReason: "end_turn" });
    await barrier(client, agent, sessionId);
    // Each once, in order, and nothing more.
    expect(unclaimedChunks(client)).toEqual(texts);
    // Nothing was refused or dropped for the rate: no error, no notice, the connection open.
    expect(agent.peer.unclaimed()).toEqual([]);
  }, 180_000);

  it("a burst far over both rates (the tenant's share in batches of 8, the connection's 50 a second) is held and drained whole, in order, none refused", async () => {
    const { agent, client, sessionId, prompt } = await turnGoing({
      limits: { messagesPerSecondPerTenant: 100, messagesPerSecondPerAgentConnection: 50 },
    });
    const texts = Array.from({ length: 300 }, (_, i) => `f${i}`);
    for (const text of texts) agent.peer.notify("session/update", chunk(sessionId, text));
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    expect((await client.next(isResponseTo("turn"), 60_000)).result).toEqual({ stopReason: "end_turn" });
    expect(unclaimedChunks(client)).toEqual(texts);
    expect(agent.peer.unclaimed().filter((m) => m.error?.code === -32029)).toEqual([]);
  }, 90_000);
});
