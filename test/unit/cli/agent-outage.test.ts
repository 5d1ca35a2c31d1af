import { describe, expect, it } from "vitest";
import { OutageBuffer, classify, unanswerable } from "../../../cli/agent-outage";
import { AGENT_BRIDGE_NOTIFICATIONS } from "../../../core/gateway-notifications";

const update = (sessionId: string, text: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    method: "session/update",
    params: { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } },
  });

describe("the agent bridge while its socket is down", () => {
  it("keeps the agent's messages in order and sends them all when nothing had to be dropped", () => {
    const buffer = new OutageBuffer({ messages: 10, bytes: 10_000 });
    buffer.push(update("s1", "a"), "s1");
    buffer.push(update("s2", "b"), "s2");
    expect(buffer.drain()).toEqual([update("s1", "a"), update("s2", "b")]);
    expect(buffer.drain()).toEqual([]);
  });

  it("drops the oldest beyond the message bound and tells each session how many it lost", () => {
    const buffer = new OutageBuffer({ messages: 2, bytes: 10_000 });
    for (const text of ["1", "2", "3"]) buffer.push(update("s1", text), "s1");
    buffer.push(update("s2", "4"), "s2");
    const out = buffer.drain();
    expect(out.slice(0, 2)).toEqual([update("s1", "3"), update("s2", "4")]);
    const notice = JSON.parse(out[2] as string);
    expect(notice).toMatchObject({ method: AGENT_BRIDGE_NOTIFICATIONS.outputDropped, params: { sessionId: "s1", dropped: 2 } });
    expect(notice.params.message).toMatch(/dropped while its connection to the gateway was down/);
    expect(out).toHaveLength(3);
  });

  it("drops the oldest beyond the byte bound, never keeping more bytes than allowed", () => {
    const line = update("s1", "x".repeat(100));
    const buffer = new OutageBuffer({ messages: 1000, bytes: Buffer.byteLength(line) * 3 });
    for (let i = 0; i < 10; i++) buffer.push(line, "s1");
    expect(buffer.size).toBe(3);
    expect(buffer.droppedCount()).toBe(7);
  });

  it("answers a permission request cancelled and any other request with an error naming the cause", () => {
    expect(JSON.parse(unanswerable(7, "session/request_permission"))).toEqual({
      jsonrpc: "2.0",
      id: 7,
      result: { outcome: { outcome: "cancelled" } },
    });
    const error = JSON.parse(unanswerable("r", "fs/read_text_file"));
    expect(error).toMatchObject({ id: "r", error: { code: -32603, data: { reason: "gateway_disconnected" } } });
    expect(error.error.message).toMatch(/fs\/read_text_file cannot be answered/);
  });

  it("tells requests, notifications and answers apart", () => {
    expect(classify('{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s"}}')).toEqual({
      kind: "request",
      id: 1,
      method: "session/request_permission",
      sessionId: "s",
    });
    expect(classify(update("s", "t"))).toEqual({ kind: "notification", method: "session/update", sessionId: "s" });
    expect(classify('{"jsonrpc":"2.0","id":3,"result":{}}')).toEqual({ kind: "response", id: 3 });
    expect(classify("not json")).toEqual({ kind: "unparsed" });
  });
});
