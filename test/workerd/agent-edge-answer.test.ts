// The answer at the edge (decision 0034; worker/agent-connection.ts, protocol/edge-routing.ts
// `EdgeAnswers`): a session sends its answer to the agent's request on its edge link, and the edge,
// which saw the request, sends it to the agent, once. If the link fails mid-answer, the session's one
// second try goes through the AgentObject, which hands it to the edge, which drops it if the first got
// there. Each test checks the way the answer took (the edge's `sent` on an edge link, as the session's
// test seam sees it) before what the agent got: exactly one answer per request.
//
// The workerd tests close links (the AgentObject's and the edge's) unused for 50 ms (vitest.config.ts).

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { type SessionObject, sessionTesting } from "../../durable-objects/session/session-object";
import { EDGE_LINK_HEADER } from "../../protocol/agent-edge-wire";
import { encodeLink, linkToAgent, linkToSession } from "../../protocol/agent-link-wire";
import { type AgentObject, agentTesting } from "../../durable-objects/agent/agent-object";
import type { FromAgent } from "../../durable-objects/session/contract";
import { agentStub, crashObject, restartObject, sessionStub } from "./fuzz-faults";
import {
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
} from "./helpers";

type Json = Record<string, any>;

/** What the session's instance saw come back on edge links, and what the test does to the next `sent`. */
interface EdgeWatch {
  /** `sent` answers from the edge on an edge link: an answer that went the edge's way. */
  sentOnEdge: number;
  /** Batches that came on an edge link, and the ids of the agent's requests in them (as JSON). */
  edgeBatches: number;
  requestsOnEdge: string[];
  /** Swallow the next `sent` and close that link: the answer reached the agent, the session never hears so. */
  cutAfter?: boolean;
  cuts: number;
}
const watches = new WeakMap<SessionObject, EdgeWatch>();

async function watchSession(t: SeededTenant, sessionId: string): Promise<void> {
  await runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject) => {
    if (watches.has(instance)) return;
    const watch: EdgeWatch = { sentOnEdge: 0, edgeBatches: 0, requestsOnEdge: [], cuts: 0 };
    watches.set(instance, watch);
    sessionTesting(instance).onLinkMessage = (ws, data, apply) => {
      const attachment = ws.deserializeAttachment() as { link?: string } | null;
      const message = typeof data === "string" ? linkToSession(data) : undefined;
      if (attachment?.link === "edge" && message?.t === "batch") {
        watch.edgeBatches++;
        for (const item of message.items as Json[]) {
          const frame = typeof item.text === "string" ? (JSON.parse(item.text) as Json) : undefined;
          if (frame?.method !== undefined && frame.id !== undefined) watch.requestsOnEdge.push(JSON.stringify(frame.id));
        }
      }
      if (attachment?.link !== "edge" || message?.t !== "sent") return apply();
      watch.sentOnEdge++;
      if (!watch.cutAfter) return apply();
      watch.cutAfter = false;
      watch.cuts++;
      ws.close(1011, "cut by a test");
    };
  });
}

async function edgeWatch(t: SeededTenant, sessionId: string): Promise<EdgeWatch> {
  return runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject) => {
    const watch = watches.get(instance);
    if (!watch) throw new Error("the session's instance is not watched, or was replaced since");
    return structuredClone(watch);
  });
}

/**
 * The edge's `sent` for `n` answers reached the session (it comes after the edge sent the answer to
 * the agent, so the agent may have it first): polled, as the session's seam is read from outside.
 */
async function sentOnEdge(t: SeededTenant, sessionId: string, n: number): Promise<void> {
  await vi.waitFor(async () => expect((await edgeWatch(t, sessionId)).sentOnEdge).toBeGreaterThanOrEqual(n), {
    timeout: 5000,
    interval: 10,
  });
}

async function cutAfterNextSent(t: SeededTenant, sessionId: string): Promise<void> {
  await runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject) => {
    const watch = watches.get(instance);
    if (watch) watch.cutAfter = true;
  });
}

/** How many frames for the agent wait in the session behind an answer on an edge link (its seam). */
async function heldAfterEdgeAnswer(t: SeededTenant, sessionId: string): Promise<number> {
  return runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject) =>
    sessionTesting(instance).heldAfterEdgeAnswer(),
  );
}

/** A dial-in agent (through the edge), a client, a session with a turn going; the session watched. */
async function turnGoing() {
  const t = await seedTenant();
  const agent = await dialInAgent(t);
  const { client, sessionId } = await clientWithSession(t, agent);
  await watchSession(t, sessionId);
  const prompt = await startTurn(client, agent, sessionId);
  return { t, agent, client, sessionId, prompt };
}

/** The agent asks; the client answers its copy; the agent's answer (the first to arrive). */
async function askAndAnswer(
  agent: ScriptedAgent,
  client: Peer,
  sessionId: string,
  toolCallId: string,
): Promise<{ reqId: unknown; answer: Json }> {
  const reqId = agent.askPermission(sessionId, { toolCallId, title: "Run", kind: "execute" });
  const copy = await client.next(isMethod("session/request_permission"));
  client.respond(copy.id, ALLOW);
  const answer = await agent.peer.next(isResponseTo(reqId));
  return { reqId, answer };
}

/** Nothing more for `reqId` reached the agent: after a barrier (which follows every way an answer takes), none is left. */
async function answeredOnce(client: Peer, agent: ScriptedAgent, sessionId: string, reqId: unknown): Promise<void> {
  await barrier(client, agent, sessionId);
  // A second answer through the AgentObject would come after the barrier's way; a second request and its answer settle that too.
  const { answer } = await askAndAnswer(agent, client, sessionId, `after-${String(reqId)}`);
  expect(answer.result).toEqual(ALLOW);
  await barrier(client, agent, sessionId);
  expect(agent.peer.unclaimed().filter((m) => m.id === reqId)).toEqual([]);
}

/** An edge link the test holds (as a stale edge's would be): only the session's own agent may open one. */
async function staleEdgeLink(t: SeededTenant, sessionId: string, agent: ScriptedAgent): Promise<WebSocket> {
  const response = await sessionStub(t.tenantId, sessionId).fetch("https://session.internal/edge-link", {
    headers: { Upgrade: "websocket", [EDGE_LINK_HEADER]: agent.name },
  });
  expect(response.status).toBe(101);
  const link = response.webSocket as WebSocket;
  link.accept();
  return link;
}

/** The session's updates go direct, on its edge link: sent one at a time (each awaited by the client) until one came on it. */
async function untilEdgeBatches(t: SeededTenant, agent: ScriptedAgent, client: Peer, sessionId: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if ((await edgeWatch(t, sessionId)).edgeBatches > 0) return;
    agent.peer.notify("session/update", {
      sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `warm-${i}` } },
    });
    await client.next((m) => m.method === "session/update" && m.params?.update?.content?.text === `warm-${i}`);
  }
  throw new Error("no batch came on an edge link after 50 updates");
}

async function endTurn(agent: ScriptedAgent, client: Peer, prompt: Json): Promise<void> {
  agent.peer.respond(prompt.id, { stopReason: "end_turn" });
  expect((await client.next(isResponseTo("turn"))).result.stopReason).toBe("end_turn");
}

describe("the permission round trip through one object", () => {
  it("a granted session's permission request goes to it on the edge link and its answer comes back on the edge link: the AgentObject handles neither", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    await untilEdgeBatches(t, agent, client, sessionId);
    const { reqId, answer } = await askAndAnswer(agent, client, sessionId, "t1");
    expect(answer.result).toEqual(ALLOW);
    const watch = await edgeWatch(t, sessionId);
    // The preconditions: the request came on the edge link, and the edge said `sent` for the answer.
    expect(watch.requestsOnEdge).toContain(JSON.stringify(reqId));
    await sentOnEdge(t, sessionId, 1);
    await answeredOnce(client, agent, sessionId, reqId);
    await endTurn(agent, client, prompt);
  });

  it("a rule answers a granted session's requests the same way, each once, the stream around them in order", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    await allowNpmTest(t);
    await untilEdgeBatches(t, agent, client, sessionId);
    const ids = [1, "1", 2, "two"];
    for (const [k, id] of ids.entries()) {
      agent.peer.notify("session/update", {
        sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `before-${k}` } },
      });
      agent.askPermission(
        sessionId,
        { toolCallId: `r${k}`, title: "npm test", kind: "execute", rawInput: { command: "npm test" } },
        undefined,
        id,
      );
    }
    for (const id of ids) expect((await agent.peer.next(isResponseTo(id))).result.outcome.outcome).toBe("selected");
    for (const k of ids.keys())
      expect(
        (await client.next((m) => m.method === "session/update" && m.params?.update?.content?.text === `before-${k}`)).params.sessionId,
      ).toBe(sessionId);
    const watch = await edgeWatch(t, sessionId);
    expect(watch.requestsOnEdge.filter((id) => ids.map((i) => JSON.stringify(i)).includes(id)).length).toBeGreaterThanOrEqual(1);
    await barrier(client, agent, sessionId);
    for (const id of ids) expect(agent.peer.unclaimed().filter((m) => m.id === id)).toEqual([]);
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
    await endTurn(agent, client, prompt);
  });

  it("the agent cancels a granted session's request that went direct ($/cancel_request): the session withdraws it and answers -32800, once", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    await untilEdgeBatches(t, agent, client, sessionId);
    const reqId = agent.askPermission(sessionId, { toolCallId: "c1", title: "Run", kind: "execute" });
    await client.next(isMethod("session/request_permission"));
    expect((await edgeWatch(t, sessionId)).requestsOnEdge).toContain(JSON.stringify(reqId));
    agent.peer.notify("$/cancel_request", { requestId: reqId });
    const answer = await agent.peer.next(isResponseTo(reqId));
    expect(answer.error.code).toBe(-32800);
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === reqId)).toEqual([]);
    expect((await sessionStub(t.tenantId, sessionId).snapshot())?.pendingPermissions).toEqual([]);
    await endTurn(agent, client, prompt);
  });

  it("the agent leaves with a direct request pending: the session withdraws it (the agent is gone, nothing is answered), and the turn ends", async () => {
    const { t, agent, client, sessionId } = await turnGoing();
    await untilEdgeBatches(t, agent, client, sessionId);
    const reqId = agent.askPermission(sessionId, { toolCallId: "g1", title: "Run", kind: "execute" });
    await client.next(isMethod("session/request_permission"));
    expect((await edgeWatch(t, sessionId)).requestsOnEdge).toContain(JSON.stringify(reqId));
    agent.peer.close();
    const done = await client.next(isResponseTo("turn"));
    expect(done.error.data.reason).toBe("agent_disconnected");
    expect((await sessionStub(t.tenantId, sessionId).snapshot())?.pendingPermissions).toEqual([]);
  });
});

describe("the answer at the edge", () => {
  it("the client cancels the turn with a request pending: the agent gets session/cancel first, then the request's `cancelled` answer, on the same path", async () => {
    const { agent, client, sessionId, prompt } = await turnGoing();
    const reqId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    await client.next(isMethod("session/request_permission"));
    client.notify("session/cancel", { sessionId });
    const first = await agent.peer.next((m) => m.id === reqId || m.method === "session/cancel");
    expect(first.method).toBe("session/cancel");
    const answer = await agent.peer.next(isResponseTo(reqId));
    expect(answer.result).toEqual({ outcome: { outcome: "cancelled" } });
    await endTurn(agent, client, prompt);
  });

  it("the edge has not replied to an earlier answer on its link when the client cancels the turn: session/cancel and the pending request's `cancelled` wait behind it in the session, in that order", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const answeredId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    const answeredCopy = await client.next(isMethod("session/request_permission"));
    const pendingId = agent.askPermission(sessionId, { toolCallId: "t2", title: "Run", kind: "execute" });
    await client.next(isMethod("session/request_permission"));
    // Opened after the edge's own: the newest, so the answer goes on it, and waits there until the test replies.
    const link = await staleEdgeLink(t, sessionId, agent);
    const onLink: Json[] = [];
    link.addEventListener("message", (event) => {
      const message = linkToAgent(String(event.data));
      if (message?.t === "toAgent") onLink.push(message);
    });
    client.respond(answeredCopy.id, ALLOW);
    await vi.waitFor(() => expect(onLink).toHaveLength(1), { timeout: 5000, interval: 10 });
    // The precondition: the person's answer is the one on the held link.
    expect(onLink[0]).toEqual({
      t: "toAgent",
      n: expect.any(Number),
      frame: expect.objectContaining({ type: "response", id: answeredId, result: ALLOW }),
    });
    client.notify("session/cancel", { sessionId });
    await vi.waitFor(async () => expect(await heldAfterEdgeAnswer(t, sessionId)).toBe(2), { timeout: 5000, interval: 10 });
    // The edge fails it (as one of another connection would): the one second try goes through the AgentObject, and what waited after it.
    link.send(encodeLink({ t: "failed", n: onLink[0]?.n }));
    await agent.peer.next(isResponseTo(pendingId));
    const order = agent.peer.raw
      .map((text) => JSON.parse(text) as Json)
      .filter((m) => m.id === answeredId || m.id === pendingId || m.method === "session/cancel")
      .map((m) => (m.method as string | undefined) ?? `${m.id === answeredId ? "answered" : "pending"}:${JSON.stringify(m.result)}`);
    expect(order).toEqual([
      `answered:${JSON.stringify(ALLOW)}`,
      "session/cancel",
      `pending:${JSON.stringify({ outcome: { outcome: "cancelled" } })}`,
    ]);
    link.close(1000, "done");
    await endTurn(agent, client, prompt);
  });

  it("a client's answer to the agent's permission request goes on the session's edge link, and reaches the agent once", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const { reqId, answer } = await askAndAnswer(agent, client, sessionId, "t1");
    expect(answer.result).toEqual(ALLOW);
    // The precondition: it went the edge's way (the edge said `sent` on an edge link).
    await sentOnEdge(t, sessionId, 1);
    const resolved = await client.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params.outcome).toEqual(ALLOW.outcome);
    await answeredOnce(client, agent, sessionId, reqId);
    await endTurn(agent, client, prompt);
  });

  it('an answer by a rule goes on the edge link too, under the agent\'s own id (1 and "1" kept apart)', async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    await allowNpmTest(t);
    const npmTest = (toolCallId: string) => ({ toolCallId, title: "npm test", kind: "execute", rawInput: { command: "npm test" } });
    agent.askPermission(sessionId, npmTest("a1"), undefined, 1);
    expect((await agent.peer.next(isResponseTo(1))).result.outcome.outcome).toBe("selected");
    await sentOnEdge(t, sessionId, 1);
    const before = (await edgeWatch(t, sessionId)).sentOnEdge;
    agent.askPermission(sessionId, npmTest("a2"), undefined, "1");
    expect((await agent.peer.next(isResponseTo("1"))).result.outcome.outcome).toBe("selected");
    await sentOnEdge(t, sessionId, before + 1);
    await barrier(client, agent, sessionId);
    expect(agent.peer.unclaimed().filter((m) => m.id === 1 || m.id === "1")).toEqual([]);
    // Nobody was asked: the rule answered both.
    expect(client.unclaimed().filter((m) => m.method === "session/request_permission")).toEqual([]);
    await endTurn(agent, client, prompt);
  });

  it("the edge link closes after the answer reached the agent (its `sent` lost): the second try through the AgentObject is dropped at the edge; the agent has it once", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    await cutAfterNextSent(t, sessionId);
    const { reqId, answer } = await askAndAnswer(agent, client, sessionId, "t1");
    expect(answer.result).toEqual(ALLOW);
    await vi.waitFor(async () => expect((await edgeWatch(t, sessionId)).cuts).toBe(1), { timeout: 5000, interval: 10 });
    // The session learns the agent has it (through the AgentObject's second try): the clients hear it resolved, once.
    const resolved = await client.next(isMethod("_acp_gateway/permission_resolved"));
    expect(resolved.params.outcome).toEqual(ALLOW.outcome);
    await answeredOnce(client, agent, sessionId, reqId);
    expect(client.unclaimed().filter((m) => m.method === "_acp_gateway/permission_resolved" && m.params.toolCallId === "t1")).toEqual([]);
    expect((await sessionStub(t.tenantId, sessionId).snapshot())?.pendingPermissions).toEqual([]);
    await endTurn(agent, client, prompt);
  });

  it("the edge link closes before the answer reached the agent (a link of no edge, newest, takes it and closes): the AgentObject's way delivers it, once", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const reqId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    const copy = await client.next(isMethod("session/request_permission"));
    // Opened after the edge's own (which opened as the request went by): the newest, so the answer goes on it.
    const link = await staleEdgeLink(t, sessionId, agent);
    const onLink: unknown[] = [];
    link.addEventListener("message", (event) => {
      onLink.push(linkToAgent(String(event.data)));
      link.close(1011, "gone mid-answer");
    });
    client.respond(copy.id, ALLOW);
    expect((await agent.peer.next(isResponseTo(reqId))).result).toEqual(ALLOW);
    // The precondition: the answer was on that link (the session's frame for the agent, nothing a client gets).
    expect(onLink).toEqual([{ t: "toAgent", n: expect.any(Number), frame: expect.objectContaining({ type: "response", id: reqId }) }]);
    await answeredOnce(client, agent, sessionId, reqId);
    await endTurn(agent, client, prompt);
  });

  it("an edge link of no connection answers `failed` (as an edge does for an answer not of its epoch): the AgentObject's way delivers it, once", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const reqId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    const copy = await client.next(isMethod("session/request_permission"));
    const link = await staleEdgeLink(t, sessionId, agent);
    let failed = 0;
    link.addEventListener("message", (event) => {
      const message = linkToAgent(String(event.data));
      if (message?.t !== "toAgent") return;
      failed++;
      link.send(encodeLink({ t: "failed", n: message.n }));
    });
    client.respond(copy.id, ALLOW);
    expect((await agent.peer.next(isResponseTo(reqId))).result).toEqual(ALLOW);
    expect(failed).toBe(1);
    await answeredOnce(client, agent, sessionId, reqId);
    link.close(1000, "done");
    await endTurn(agent, client, prompt);
  });

  it("the AgentObject evicted while the request waits: the answer reaches the agent once, on the edge link", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const reqId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    const copy = await client.next(isMethod("session/request_permission"));
    await restartObject(agentStub(t.tenantId, agent.name));
    const before = (await edgeWatch(t, sessionId)).sentOnEdge;
    client.respond(copy.id, ALLOW);
    expect((await agent.peer.next(isResponseTo(reqId))).result).toEqual(ALLOW);
    await sentOnEdge(t, sessionId, before + 1);
    await answeredOnce(client, agent, sessionId, reqId);
    await endTurn(agent, client, prompt);
  });

  it("the SessionObject crashes while the request waits: a client that comes back answers it, and the agent has it once", async () => {
    const { t, agent, client, sessionId, prompt } = await turnGoing();
    const reqId = agent.askPermission(sessionId, { toolCallId: "t1", title: "Run", kind: "execute" });
    await client.next(isMethod("session/request_permission"));
    await crashObject(sessionStub(t.tenantId, sessionId));
    // The client's socket to the session closed with it: a client that loads the session again is asked again.
    const again = await attachClient(t, agent, sessionId);
    const copy = await again.next(isMethod("session/request_permission"));
    again.respond(copy.id, ALLOW);
    expect((await agent.peer.next(isResponseTo(reqId))).result).toEqual(ALLOW);
    await answeredOnce(again, agent, sessionId, reqId);
    agent.peer.respond(prompt.id, { stopReason: "end_turn" });
    await barrier(again, agent, sessionId);
  });
});

/** Every agent-side frame the session has been sent for the agent's departure, held back by the test (see `holdGone`). */
interface GoneHold {
  /** The batches with a `gone` item that came on the agent link: applied (without a second ack) by `release`. */
  onLink: (() => void)[];
  /** The `gone` items that came by RPC: delivered to the session by `release`. */
  byRpc: FromAgent[];
}

/**
 * Keeps the session from hearing that the agent's connection left: the AgentObject's `gone` for it,
 * on the agent link (the session's seam) or by RPC (the AgentObject's stub seam), is held, and the
 * AgentObject is told it was applied, so what it delivers next (the agent's next connection's
 * frames) reaches the session. `release` hands the held ones to the session.
 */
async function holdGone(t: SeededTenant, sessionId: string, agentName: string): Promise<{ hold: GoneHold; release(): Promise<void> }> {
  const hold: GoneHold = { onLink: [], byRpc: [] };
  const hasGone = (items: unknown) => Array.isArray(items) && items.some((item: Json) => item?.kind === "gone");
  await runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject) => {
    const seam = sessionTesting(instance);
    const before = seam.onLinkMessage;
    seam.onLinkMessage = (ws, data, apply) => {
      const attachment = ws.deserializeAttachment() as { link?: string } | null;
      const message = typeof data === "string" ? linkToSession(data) : undefined;
      if (attachment?.link !== "edge" && message?.t === "batch" && hasGone(message.items)) {
        hold.onLink.push(() => apply(false));
        ws.send(encodeLink({ t: "ack" }));
        return;
      }
      return before ? before(ws, data, apply) : apply();
    };
  });
  await runInDurableObject(agentStub(t.tenantId, agentName), (instance: AgentObject) => {
    agentTesting(instance).session = (id, real) =>
      id !== sessionId
        ? real
        : new Proxy(real, {
            get(target, prop) {
              if (prop === "fromAgentBatch")
                return (items: FromAgent[]) => {
                  const rest = items.filter((item) => item.kind !== "gone");
                  hold.byRpc.push(...items.filter((item) => item.kind === "gone"));
                  return rest.length > 0 ? target.fromAgentBatch(rest) : Promise.resolve();
                };
              const value: unknown = Reflect.get(target, prop);
              return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
            },
          });
  });
  const release = async () => {
    await runInDurableObject(sessionStub(t.tenantId, sessionId), () => {
      for (const apply of hold.onLink.splice(0)) apply();
    });
    const items = hold.byRpc.splice(0);
    if (items.length > 0) await sessionStub(t.tenantId, sessionId).fromAgentBatch(items);
  };
  return { hold, release };
}

/** The session's open edge links (only the session's own agent's edge opens one, and this test opens none). */
async function edgeLinksOpen(t: SeededTenant, sessionId: string): Promise<number> {
  // SAFETY: a SessionObject; only its state is used.
  return runInDurableObject(
    sessionStub(t.tenantId, sessionId) as DurableObjectStub<never>,
    (_instance: unknown, state: DurableObjectState) => {
      return state.getWebSockets("edge-link").filter((ws) => ws.readyState === WebSocket.OPEN).length;
    },
  );
}

/** What came back on edge links to the session's answers (`sent`, `failed`), and how many edge links were open then. */
async function watchEdgeReplies(t: SeededTenant, sessionId: string): Promise<{ t: string; links: number; onOpenLink: boolean }[]> {
  const replies: { t: string; links: number; onOpenLink: boolean }[] = [];
  // SAFETY: a SessionObject; its seam and state are used.
  await runInDurableObject(sessionStub(t.tenantId, sessionId), (instance: SessionObject, state: DurableObjectState) => {
    const seam = sessionTesting(instance);
    const before = seam.onLinkMessage;
    seam.onLinkMessage = (ws, data, apply) => {
      const attachment = ws.deserializeAttachment() as { link?: string } | null;
      const message = typeof data === "string" ? linkToSession(data) : undefined;
      if (attachment?.link === "edge" && (message?.t === "sent" || message?.t === "failed")) {
        const open = state.getWebSockets("edge-link").filter((link) => link.readyState === WebSocket.OPEN);
        replies.push({ t: message.t, links: open.length, onOpenLink: open.includes(ws) });
      }
      return before ? before(ws, data, apply) : apply();
    };
  });
  return replies;
}

describe("an answer meant for the agent's previous connection", () => {
  it("a client answers a request of the agent's old connection after it reconnected and asked again under the same id: the new connection's request is not answered by it (the edge checks the epoch)", async () => {
    const REJECT = { outcome: { outcome: "selected", optionId: "reject" } };
    const { t, agent, client, sessionId } = await turnGoing();
    const N = 7;
    agent.askPermission(sessionId, { toolCallId: "old", title: "Run old", kind: "execute" }, undefined, N);
    const oldCopy = await client.next((m) => m.method === "session/request_permission" && m.params?.toolCall?.toolCallId === "old");
    // The session does not hear that connection 1 left: its request stays open there.
    const { hold, release } = await holdGone(t, sessionId, agent.name);
    agent.peer.close();
    await vi.waitFor(() => expect(hold.onLink.length + hold.byRpc.length).toBeGreaterThanOrEqual(1), { timeout: 5000, interval: 10 });
    // Connection 1's edge closed its edge links as it ended: any edge link open later is connection 2's.
    await vi.waitFor(async () => expect(await edgeLinksOpen(t, sessionId)).toBe(0), { timeout: 5000, interval: 10 });

    const again = await dialInAgent(t, agent.name);
    again.askPermission(sessionId, { toolCallId: "new", title: "Run new", kind: "execute" }, undefined, N);
    const newCopy = await client.next((m) => m.method === "session/request_permission" && m.params?.toolCall?.toolCallId === "new");
    // The preconditions: both requests (the same agent id, two connections) are open in the session,
    // and the session has one edge link, connection 2's (opened as its request went by).
    const pending = (await sessionStub(t.tenantId, sessionId).snapshot())?.pendingPermissions ?? [];
    expect(pending.map((p: Json) => p.toolCall?.toolCallId ?? p.toolCallId).sort()).toEqual(["new", "old"]);
    expect(await edgeLinksOpen(t, sessionId)).toBe(1);

    const replies = await watchEdgeReplies(t, sessionId);
    client.respond(oldCopy.id, ALLOW);
    // The answer to connection 1's request went on connection 2's edge link (the only one open), which did not send it.
    await vi.waitFor(() => expect(replies.length).toBeGreaterThanOrEqual(1), { timeout: 5000, interval: 10 });
    expect(replies[0]).toMatchObject({ links: 1, onOpenLink: true });
    // Connection 1's answer reaches nobody, also by the AgentObject's way: after a barrier it has not come.
    await barrier(client, again, sessionId);
    expect(again.peer.unclaimed().filter((m) => m.id === N && !("method" in m))).toEqual([]);
    // How: connection 2's edge failed it (not of its epoch), and the AgentObject's way dropped it (the connection is gone).
    expect(replies[0]?.t).toBe("failed");

    // Connection 2's request N gets its own answer, and it is the first and only answer to N.
    client.respond(newCopy.id, REJECT);
    const answer = await again.peer.next(isResponseTo(N));
    expect(answer.result).toEqual(REJECT);
    await barrier(client, again, sessionId);
    expect(again.peer.unclaimed().filter((m) => m.id === N && !("method" in m))).toEqual([]);
    await release();
  });
});
