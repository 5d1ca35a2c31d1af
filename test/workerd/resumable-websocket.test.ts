// The draft RFD "Durable & Resumable HTTP/WS Transport" over a WebSocket (decision 0050), against the
// real Worker and SessionObject: a cursor on every message a session sends, `stream/resume` as a new
// socket's first frame, `stream/resume_failed {reason}` for a cursor the gateway cannot resume from.
import { describe, expect, it } from "vitest";
import {
  type Peer,
  type ScriptedAgent,
  attachClient,
  clientWithSession,
  connect,
  dialInAgent,
  isMethod,
  isResponseTo,
  seedTenant,
  startTurn,
} from "./helpers";

type Json = Record<string, any>;

const say = (agent: ScriptedAgent, sessionId: string, text: string) =>
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
const textOf = (m: Json) => m.params?.update?.content?.text;
const isText = (text: string) => (m: Json) => textOf(m) === text;
const cursorOf = (m: Json): string | undefined => ("method" in m ? m.params?._meta?.["acp/cursor"] : m._meta?.["acp/cursor"]);

/** A new socket whose first frame resumes `streams` of the dropped connection `connectionId`. */
async function resumeOn(key: string, agent: string, connectionId: string, streams: Record<string, string>) {
  const peer = await connect(`/acp?agent=${agent}`, key);
  peer.send({ jsonrpc: "2.0", id: "resume", method: "stream/resume", params: { connectionId, streams } });
  return { peer, answer: peer.next(isResponseTo("resume")) };
}

function connectionIdOf(peer: Peer): string {
  const id = peer.response.headers.get("Acp-Connection-Id");
  if (!id) throw new Error("no Acp-Connection-Id on the upgrade");
  return id;
}

describe("resumable streams over a WebSocket", { timeout: 20_000 }, () => {
  it("initialize advertises the sessions' retention under _meta['acp/transport'], and no keepalive (a Worker cannot ping)", async () => {
    const t = await seedTenant();
    const client = await connect("/acp?agent=x", t.clientKey);
    const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(init.result._meta["acp/transport"]).toEqual({ resumable: { retentionMessages: 500, retentionSeconds: 30 } });
  });

  it("every message from a session carries its cursor in _meta['acp/cursor'], distinct within the stream", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const forwarded = await startTurn(client, agent, sessionId);
    for (const text of ["a", "b"]) say(agent, sessionId, text);
    await client.next(isText("b"));
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    const answer = await client.next(isResponseTo("turn"));
    expect(answer.result).toEqual({ stopReason: "end_turn" });
    const fromSession = client.raw.map((text) => JSON.parse(text) as Json).filter((m) => textOf(m) !== undefined || m.id === "turn");
    const cursors = fromSession.map(cursorOf);
    expect(cursors.every((c) => typeof c === "string")).toBe(true);
    expect(new Set(cursors).size).toBe(cursors.length);
  });

  it("a socket dropped mid-turn resumes with stream/resume: what it missed with the cursors it had, stream/resumed with the turn's state, then live; the prompt's answer reaches it", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const connectionId = connectionIdOf(client);
    const forwarded = await startTurn(client, agent, sessionId);
    say(agent, sessionId, "one");
    say(agent, sessionId, "two");
    const one = await client.next(isText("one"));
    const two = await client.next(isText("two"));
    client.close(); // the network drops
    say(agent, sessionId, "three");
    const permissionId = agent.askPermission(sessionId, { toolCallId: "c1", title: "Edit", kind: "edit", status: "pending" });
    // Another client seeing the request: the session asks people now.
    const watcher = await attachClient(t, agent, sessionId);
    await watcher.next(isMethod("session/request_permission"));

    const { peer, answer } = await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: cursorOf(one) ?? "" });
    expect((await answer).result).toEqual({ connectionId, resumed: [sessionId], refused: [] });
    const replayedTwo = await peer.next(isText("two"));
    expect(cursorOf(replayedTwo)).toBe(cursorOf(two));
    await peer.next(isText("three"));
    const ask = await peer.next(isMethod("session/request_permission"));
    const ack = await peer.next(isMethod("stream/resumed"));
    expect(ack.params).toMatchObject({ sessionId, _meta: { "acp/turnState": { state: "requires_action", promptRequestId: "turn" } } });
    expect(cursorOf(ack)).toBeUndefined();
    // Live after the acknowledgement, on the same stream.
    say(agent, sessionId, "four");
    await peer.next(isText("four"));
    peer.respond(ask.id, { outcome: { outcome: "selected", optionId: "allow" } });
    expect((await agent.peer.next((m) => m.id === permissionId && !("method" in m))).result.outcome.optionId).toBe("allow");
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    expect((await peer.next(isResponseTo("turn"))).result).toEqual({ stopReason: "end_turn" });
    // Nothing twice, nothing lost.
    const messages = peer.raw.map((text) => JSON.parse(text) as Json);
    expect(messages.filter((m) => textOf(m) !== undefined).map(textOf)).toEqual(["two", "three", "four"]);
    expect(messages.filter((m) => m.method === "session/request_permission")).toHaveLength(1);
    const cursors = messages.map(cursorOf).filter((c) => c !== undefined);
    expect(new Set(cursors).size).toBe(cursors.length);
  });

  it("a resume after the turn ended while away gets the prompt's answer in the replay; another client's turn since shows running, with no prompt id of its own", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const connectionId = connectionIdOf(client);
    const forwarded = await startTurn(client, agent, sessionId);
    say(agent, sessionId, "working");
    const seen = await client.next(isText("working"));
    client.close();
    say(agent, sessionId, "done");
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    // The turn is over at the session once a client attaching later sees it idle (its prompt is accepted).
    const watcher = await attachClient(t, agent, sessionId);
    watcher.send({ jsonrpc: "2.0", id: "w", method: "session/prompt", params: { sessionId, prompt: [] } });
    const next = await agent.peer.next(isMethod("session/prompt"));
    const { peer, answer } = await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: cursorOf(seen) ?? "" });
    expect((await answer).result.resumed).toEqual([sessionId]);
    await peer.next(isText("done"));
    expect((await peer.next(isResponseTo("turn"))).result).toEqual({ stopReason: "end_turn" });
    const ack = await peer.next(isMethod("stream/resumed"));
    // Another client's turn runs now: running, and not this client's prompt.
    expect(ack.params._meta["acp/turnState"]).toEqual({ state: "running", promptRequestId: null });
    agent.peer.respond(next.id, { stopReason: "end_turn" });
  });

  it("refuses with stream/resume_failed and attaches nothing: another key's stream, another session's cursor, a forged one, an unknown connection, another tenant", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const connectionId = connectionIdOf(client);
    const other = await clientWithSession(t, agent);
    say(agent, sessionId, "x");
    say(agent, other.sessionId, "y");
    const cursor = cursorOf(await client.next(isText("x"))) ?? "";
    const otherCursor = cursorOf(await other.client.next(isText("y"))) ?? "";
    client.close();
    const foreignTenant = await seedTenant();
    const attempts = [
      await resumeOn(t.clientKey2, agent.name, connectionId, { [sessionId]: cursor }),
      await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: otherCursor }),
      await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: `${cursor}0` }),
      await resumeOn(t.clientKey, agent.name, crypto.randomUUID(), { [sessionId]: cursor }),
      await resumeOn(foreignTenant.clientKey, agent.name, connectionId, { [sessionId]: cursor }),
    ];
    for (const { peer, answer } of attempts) {
      expect((await answer).result).toMatchObject({ resumed: [], refused: [{ sessionId, reason: "unknown_cursor" }] });
      expect((await peer.next(isMethod("stream/resume_failed"))).params).toEqual({ sessionId, reason: "unknown_cursor" });
      // The fallback: initialize, then session/load, on the same socket.
      expect((await peer.request("initialize", { protocolVersion: 1, clientCapabilities: {} })).error).toBeUndefined();
    }
    // The rightful client still can: nothing above took its stream.
    const { peer, answer } = await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: cursor });
    expect((await answer).result.resumed).toEqual([sessionId]);
    say(agent, sessionId, "after");
    await peer.next(isText("after"));
    for (const { peer: refused } of attempts) expect(refused.unclaimed().filter((m) => textOf(m) !== undefined)).toEqual([]);
  });

  it("a refused resume leaves a socket that is still open untouched; a good one takes its stream over", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const connectionId = connectionIdOf(client);
    say(agent, sessionId, "x");
    const cursor = cursorOf(await client.next(isText("x"))) ?? "";
    const bad = await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: `${cursor}0` });
    expect((await bad.answer).result.refused).toEqual([{ sessionId, reason: "unknown_cursor" }]);
    say(agent, sessionId, "still");
    await client.next(isText("still"));
    const good = await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: cursor });
    expect((await good.answer).result.resumed).toEqual([sessionId]);
    await good.peer.next(isText("still"));
    say(agent, sessionId, "moved");
    await good.peer.next(isText("moved"));
  });

  it("a cursor the stream no longer holds (more than its retention came meanwhile) is refused expired_cursor", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    const connectionId = connectionIdOf(client);
    say(agent, sessionId, "first");
    const cursor = cursorOf(await client.next(isText("first"))) ?? "";
    client.close();
    for (let i = 0; i < 510; i++) say(agent, sessionId, `m${i}`);
    const watcher = await attachClient(t, agent, sessionId);
    await watcher.next(isText("m509"));
    const { peer, answer } = await resumeOn(t.clientKey, agent.name, connectionId, { [sessionId]: cursor });
    expect((await answer).result.refused).toEqual([{ sessionId, reason: "expired_cursor" }]);
    expect((await peer.next(isMethod("stream/resume_failed"))).params.reason).toBe("expired_cursor");
  });

  it("stream/resume with bad params is -32602 and names what is wrong", async () => {
    const t = await seedTenant();
    const peer = await connect("/acp?agent=x", t.clientKey);
    const bad = await peer.request("stream/resume", { connectionId: "nope", streams: {} });
    expect(bad.error.code).toBe(-32602);
    expect(bad.error.message).toMatch(/connectionId/);
  });
});
