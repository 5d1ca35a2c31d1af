// The draft RFD "Durable & Resumable HTTP/WS Transport" over Streamable HTTP (decision 0050), against
// the real Worker, ConnectionObject and SessionObject: a cursor on every message, resume by
// Last-Event-ID, a cursor the gateway cannot resume from refused with 409 and never a live stream,
// and the turn's state on the resume acknowledgement.
import { describe, expect, it } from "vitest";
import { type ScriptedAgent, type SeededTenant, attachClient, dialInAgent, isMethod, isResponseTo, seedTenant } from "./helpers";
import { SseReader, getStream, httpConnect } from "./http-helpers";

type Json = Record<string, any>;

async function sessionOn(t: SeededTenant, agent: ScriptedAgent) {
  const http = await httpConnect(t.clientKey, agent.name);
  const created = await http.request("session/new", { cwd: "/w", mcpServers: [] });
  const sessionId = await agent.acceptNewSession();
  await http.stream.next(isResponseTo(created.id));
  const stream = await http.openSession(sessionId);
  return { http, sessionId, stream };
}

const say = (agent: ScriptedAgent, sessionId: string, text: string) =>
  agent.update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
const textOf = (m: Json) => m.params?.update?.content?.text;
const isText = (text: string) => (m: Json) => textOf(m) === text;

/** Reopens a stream with Last-Event-ID; a 409 says why in its JSON error code. */
async function resume(key: string, connectionId: string, sessionId: string | undefined, cursor: string) {
  const response = await getStream(key, connectionId, sessionId, cursor);
  if (response.status === 200) return { status: 200, reader: new SseReader(response) };
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, code: body.error.code, message: body.error.message };
}

describe("resumable streams over Streamable HTTP", { timeout: 20_000 }, () => {
  it("initialize advertises the retention and keepalive under _meta['acp/transport'] until the RFD lands", async () => {
    const t = await seedTenant();
    const http = await httpConnect(t.clientKey, "x");
    // The test environment's window (vitest.config.ts HTTP_STREAM_WINDOW_MS 1500, HTTP_KEEPALIVE_MS 200).
    expect(http.initialize.result._meta["acp/transport"]).toEqual({
      resumable: { retentionMessages: 1000, retentionSeconds: 1 },
      keepaliveSeconds: 0.2,
    });
    expect(http.initialize.result.capabilities).toBeUndefined();
  });

  it("every message carries its cursor as the SSE id and in _meta['acp/cursor'], distinct and in order within its stream", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { http, sessionId, stream } = await sessionOn(t, agent);
    const prompt = await http.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] }, sessionId);
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    for (const text of ["a", "b", "c"]) say(agent, sessionId, text);
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    await stream.next(isResponseTo(prompt.id));
    const events = stream.events;
    expect(events.length).toBeGreaterThanOrEqual(4);
    for (const { id, message } of events) {
      const meta = "method" in message ? message.params._meta : message._meta;
      expect(meta["acp/cursor"]).toBe(id);
    }
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Opaque to the client, but one stream's: the connection's stream has cursors of its own.
    const connectionIds = http.stream.events.map((e) => e.id);
    expect(connectionIds.some((id) => ids.includes(id))).toBe(false);
  });

  it("a session stream dropped mid-turn resumes by Last-Event-ID: what was missed with the cursors it had, then stream/resumed (running, the prompt's id), then live", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { http, sessionId, stream } = await sessionOn(t, agent);
    const prompt = await http.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] }, sessionId);
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    say(agent, sessionId, "one");
    say(agent, sessionId, "two");
    await stream.next(isText("two"));
    const one = stream.events.find((e) => textOf(e.message) === "one");
    const two = stream.events.find((e) => textOf(e.message) === "two");
    await stream.cancel();
    say(agent, sessionId, "three");
    say(agent, sessionId, "four");
    // The RFD's flow: resume after the last cursor durably processed (here "one": "two" is replayed too).
    const resumed = await resume(t.clientKey, http.connectionId, sessionId, one?.id ?? "");
    if (!resumed.reader) throw new Error(`resume refused: ${JSON.stringify(resumed)}`);
    const reader = resumed.reader;
    const ack = await reader.next(isMethod("stream/resumed"));
    expect(ack.params._meta["acp/turnState"]).toEqual({ state: "running", promptRequestId: prompt.id });
    say(agent, sessionId, "five");
    await reader.next(isText("five"));
    const seen = reader.events.map((e) => ({ id: e.id, text: textOf(e.message) ?? e.message.method }));
    // Replayed first, with the cursor it had; the acknowledgement has none; nothing twice, nothing lost.
    expect(seen[0]).toEqual({ id: two?.id, text: "two" });
    expect(seen.filter((e) => e.id !== undefined).map((e) => e.text)).toEqual(["two", "three", "four", "five"]);
    expect(seen.filter((e) => e.id === undefined).map((e) => e.text)).toEqual(["stream/resumed"]);
    expect(seen.findIndex((e) => e.text === "stream/resumed")).toBeLessThan(seen.findIndex((e) => e.text === "five"));
    // Resuming twice from the same cursor gives the same messages under the same cursors.
    const again = await resume(t.clientKey, http.connectionId, sessionId, one?.id ?? "");
    if (!again.reader) throw new Error(`second resume refused: ${JSON.stringify(again)}`);
    await again.reader.next(isText("five"));
    expect(again.reader.events.filter((e) => e.id !== undefined)).toEqual(reader.events.filter((e) => e.id !== undefined));
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    expect((await again.reader.next(isResponseTo(prompt.id))).result.stopReason).toBe("end_turn");
  });

  it("after a resume the turn's state says requires_action while a request waits on a person, and idle once the turn ended", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { http, sessionId, stream } = await sessionOn(t, agent);
    const prompt = await http.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] }, sessionId);
    const forwarded = await agent.peer.next(isMethod("session/prompt"));
    say(agent, sessionId, "before");
    await stream.next(isText("before"));
    const cursor = stream.lastEventId ?? "";
    await stream.cancel();
    agent.askPermission(sessionId, { toolCallId: "c1", title: "Edit", kind: "edit", status: "pending" });
    // Another client seeing the request means the session asks people now.
    const watcher = await attachClient(t, agent, sessionId);
    await watcher.next(isMethod("session/request_permission"));
    const waiting = await resume(t.clientKey, http.connectionId, sessionId, cursor);
    if (!waiting.reader) throw new Error(`resume refused: ${JSON.stringify(waiting)}`);
    const ask = await waiting.reader.next(isMethod("session/request_permission"));
    const ack = await waiting.reader.next(isMethod("stream/resumed"));
    expect(ack.params._meta["acp/turnState"]).toEqual({ state: "requires_action", promptRequestId: prompt.id });
    await http.send({ id: ask.id, result: { outcome: { outcome: "selected", optionId: "allow" } } }, sessionId);
    agent.peer.respond(forwarded.id, { stopReason: "end_turn" });
    await waiting.reader.next(isResponseTo(prompt.id));
    // Every client is told who answered once the agent has the answer: that notice may come after the
    // prompt's answer (the agent may end its turn first), so the stream's last message is the later of the two.
    await waiting.reader.next(isMethod("_acp_gateway/permission_resolved"));
    const last = waiting.reader.lastEventId ?? "";
    await waiting.reader.cancel();
    const after = await resume(t.clientKey, http.connectionId, sessionId, last);
    if (!after.reader) throw new Error(`resume refused: ${JSON.stringify(after)}`);
    const idle = await after.reader.next(isMethod("stream/resumed"));
    expect(idle.params._meta["acp/turnState"]).toEqual({ state: "idle", promptRequestId: null });
    expect(after.reader.events).toHaveLength(1);
  });

  it("refuses with 409 and opens no stream: another session's cursor, another connection's, a forged one, an unknown connection's, another tenant's", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const a = await sessionOn(t, agent);
    const created = await a.http.request("session/new", { cwd: "/w2", mcpServers: [] });
    const otherSession = await agent.acceptNewSession();
    await a.http.stream.next(isResponseTo(created.id));
    const b = await sessionOn(t, agent);
    say(agent, a.sessionId, "a");
    say(agent, b.sessionId, "b");
    await a.stream.next(isText("a"));
    await b.stream.next(isText("b"));
    const cursorA = a.stream.lastEventId ?? "";
    const cursorB = b.stream.lastEventId ?? "";

    const refusals = [
      await resume(t.clientKey, a.http.connectionId, otherSession, cursorA),
      await resume(t.clientKey, a.http.connectionId, a.sessionId, cursorB),
      await resume(t.clientKey, a.http.connectionId, undefined, cursorA),
      await resume(t.clientKey, a.http.connectionId, a.sessionId, `${cursorA.split(".")[0]}x.1`),
      await resume(t.clientKey, a.http.connectionId, a.sessionId, "1"),
    ];
    for (const refused of refusals) expect(refused).toMatchObject({ status: 409, code: "unknown_cursor" });
    const gone = await resume(t.clientKey, crypto.randomUUID(), a.sessionId, cursorA);
    expect(gone).toMatchObject({ status: 409, code: "unknown_connection" });
    const other = await seedTenant();
    expect(await resume(other.clientKey, a.http.connectionId, a.sessionId, cursorA)).toMatchObject({
      status: 409,
      code: "unknown_connection",
    });
    // None of them took the stream: the reader still attached gets what comes next.
    say(agent, a.sessionId, "still");
    await a.stream.next(isText("still"));
  });

  it("a cursor older than the retention window is refused with 409 expired_cursor, and the stream stays as it was", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { http, sessionId, stream } = await sessionOn(t, agent);
    say(agent, sessionId, "old");
    await stream.next(isText("old"));
    const old = stream.lastEventId ?? "";
    const writtenAt = Date.now();
    // Time itself is what is tested: the window (1.5 s here) passes, with a second to spare, while later messages are written.
    let n = 0;
    while (Date.now() - writtenAt < 2500) {
      say(agent, sessionId, `m${++n}`);
      await stream.next(isText(`m${n}`));
    }
    expect(await resume(t.clientKey, http.connectionId, sessionId, old)).toMatchObject({ status: 409, code: "expired_cursor" });
    say(agent, sessionId, "live");
    await stream.next(isText("live"));
  });

  it("a session given up past the window refuses its old cursor with 409 expired_cursor (the client falls back to session/load)", async () => {
    const t = await seedTenant();
    const agent = await dialInAgent(t);
    const { http, sessionId, stream } = await sessionOn(t, agent);
    say(agent, sessionId, "seen");
    await stream.next(isText("seen"));
    const cursor = stream.lastEventId ?? "";
    await stream.cancel();
    say(agent, sessionId, "missed");
    // The window passes with the message unread: the session is given up (its POSTs answer 409).
    while ((await http.request("session/set_mode", { sessionId, modeId: "code" }, sessionId)).response.status !== 409) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const refused = await resume(t.clientKey, http.connectionId, sessionId, cursor);
    expect(refused).toMatchObject({ status: 409, code: "expired_cursor" });
  });
});
