import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConnectionIds } from "../../protocol/connection-ids";
import type { JsonRpcId } from "../../protocol/jsonrpc";

const jsonRpcId: fc.Arbitrary<JsonRpcId> = fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }));
const sessionId = fc.string({ minLength: 1, maxLength: 8 });

function request(id: JsonRpcId, method = "session/request_permission"): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method, params: { sessionId: "s", options: [] } });
}

function answer(id: unknown): string {
  return JSON.stringify({ jsonrpc: "2.0", id, result: { outcome: { outcome: "cancelled" } } });
}

/** The client's answer as the edge parsed it (parseFrame). */
function answerOf(id: JsonRpcId | null): { id: JsonRpcId | null; jsonrpc: string; result: unknown } {
  return JSON.parse(answer(id)) as { id: JsonRpcId | null; jsonrpc: string; result: unknown };
}

function cancel(requestId: JsonRpcId): string {
  return JSON.stringify({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId } });
}

function refusal(requestId: JsonRpcId): string {
  return JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32602, message: "refused", data: { requestId, sessionId: "s" } } });
}

/** The id the client sees for a request a session sent. */
function outId(ids: ConnectionIds, session: string, id: JsonRpcId): number {
  const text = ids.toClient(session, request(id));
  if (text === undefined) throw new Error("a request was dropped");
  return (JSON.parse(text) as { id: number }).id;
}

describe("a connection's id maps", () => {
  it("maps a session's request id out and back to the same id and session, for any JSON-RPC id", () => {
    fc.assert(
      fc.property(sessionId, jsonRpcId, (session, id) => {
        const ids = new ConnectionIds();
        const out = outId(ids, session, id);
        const back = ids.toSession(answerOf(out));
        expect(back?.sessionId).toBe(session);
        expect(JSON.parse(back?.text ?? "null")).toEqual(JSON.parse(answer(id)));
      }),
      { numRuns: 1000 },
    );
  });

  it("never gives two requests the same connection id, across sessions sharing ids on one connection", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom("s1", "s2", "s3"), fc.constantFrom<JsonRpcId>(0, 1, "1", "a")), { maxLength: 40 }),
        (sent) => {
          const ids = new ConnectionIds();
          const outs = sent.map(([session, id]) => outId(ids, session, id));
          expect(new Set(outs).size).toBe(outs.length);
          // Each answer reaches the session that asked, under the id it asked with.
          outs.forEach((out, i) => {
            const back = ids.toSession(answerOf(out));
            expect(back?.sessionId).toBe(sent[i]?.[0]);
            expect((JSON.parse(back?.text ?? "null") as { id: JsonRpcId }).id).toEqual(sent[i]?.[1]);
          });
        },
      ),
      { numRuns: 500 },
    );
  });

  it("refuses an answer under an id it never gave out, and a second answer to the same request", () => {
    fc.assert(
      fc.property(fc.oneof(jsonRpcId, fc.constant(null)), (foreign) => {
        const ids = new ConnectionIds();
        const out = outId(ids, "s", 5);
        if (foreign !== out) expect(ids.toSession(answerOf(foreign))).toBeUndefined();
        expect(ids.toSession(answerOf(out))).toBeDefined();
        expect(ids.toSession(answerOf(out))).toBeUndefined();
      }),
    );
  });

  it("refuses the string form of a connection id", () => {
    const ids = new ConnectionIds();
    const out = outId(ids, "s", 5);
    expect(ids.toSession(answerOf(String(out)))).toBeUndefined();
    expect(ids.toSession(answerOf(out))).toBeDefined();
  });

  it("withdraws a pending request under the connection's id, and the client's later answer reaches no one", () => {
    const ids = new ConnectionIds();
    const out = outId(ids, "s", "perm-1");
    const withdrawal = ids.toClient("s", cancel("perm-1"));
    expect(JSON.parse(withdrawal ?? "null")).toEqual({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: out } });
    expect(ids.toSession(answerOf(out))).toBeUndefined();
  });

  it("drops a withdrawal of a request the client answered already, or of another session's request", () => {
    const ids = new ConnectionIds();
    const out = outId(ids, "s", 1);
    outId(ids, "other", 2);
    ids.toSession(answerOf(out));
    expect(ids.toClient("s", cancel(1))).toBeUndefined();
    expect(ids.toClient("s", cancel(2))).toBeUndefined();
  });

  it("names the connection's id in error.data.requestId when the session refuses an answer", () => {
    const ids = new ConnectionIds();
    const out = outId(ids, "s", 42);
    ids.toSession(answerOf(out));
    const notice = JSON.parse(ids.toClient("s", refusal(42)) ?? "null") as { error: { data: { requestId: unknown; sessionId: string } } };
    expect(notice.error.data).toEqual({ requestId: out, sessionId: "s" });
  });

  it("names no id (null) in error.data.requestId for a request this connection never saw", () => {
    const ids = new ConnectionIds();
    outId(ids, "other", 42);
    const notice = JSON.parse(ids.toClient("s", refusal(42)) ?? "null") as { error: { data: { requestId: unknown } } };
    expect(notice.error.data.requestId).toBeNull();
  });

  it("remembers the last 64 answered requests for such errors, and forgets older ones", () => {
    const ids = new ConnectionIds();
    const outs = Array.from({ length: 65 }, (_, i) => outId(ids, "s", i));
    for (const out of outs) ids.toSession(answerOf(out));
    const requestIdOf = (id: number) =>
      (JSON.parse(ids.toClient("s", refusal(id)) ?? "null") as { error: { data: { requestId: unknown } } }).error.data.requestId;
    expect(requestIdOf(0)).toBeNull();
    expect(requestIdOf(1)).toBe(outs[1]);
    expect(requestIdOf(64)).toBe(outs[64]);
  });

  it("passes any other marked frame through, re-serialised and unchanged", () => {
    const ids = new ConnectionIds();
    const text = JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", _meta: { x: 1 } } });
    expect(ids.toClient("s", text)).toBe(text);
  });
});
