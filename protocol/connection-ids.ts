// The id maps of one client connection. Requests its sessions send to the client (permission
// requests, routed fs/terminal requests) carry each session's own ids, which two sessions may share;
// the client sees them under ids of this connection instead (1, 2, 3… never reused), and its answer
// goes back to the session under the session's id. Three kinds of session frame name such an id and
// are rewritten (they reach the edge behind REWRITE_MARK, protocol/session-wire.ts):
//   - a request: gets a fresh connection id;
//   - `$/cancel_request` withdrawing one: names the connection id, or is dropped if the client
//     already answered (there is nothing left to withdraw);
//   - an error whose `error.data.requestId` names one (the session refused the client's answer to
//     it): names the connection id the client answered, still known for the last ANSWERED_MEMORY.
// Pure: unit-tested in test/unit/connection-ids.test.ts.

import { type JsonRpcId, isObject } from "./jsonrpc";
import { CANCEL_REQUEST } from "./methods";

/** Ids of answered requests kept so that an error notice about one can still be rewritten. */
const ANSWERED_MEMORY = 64;

interface Outstanding {
  sessionId: string;
  sessionRequestId: JsonRpcId;
}

export class ConnectionIds {
  /** This connection's ids for requests the sessions sent to the client, not yet answered or withdrawn. */
  private readonly outstanding = new Map<number, Outstanding>();
  private readonly byRequestKey = new Map<string, number>();
  private readonly answered = new Map<string, number>();
  private nextId = 0;

  /**
   * A rewritable frame from a session (its mark removed), as the client must see it; undefined when
   * the client must not see it at all (a withdrawal of a request it answered already).
   */
  toClient(sessionId: string, text: string): string | undefined {
    const message = JSON.parse(text) as Record<string, unknown>;
    if (typeof message.method === "string" && message.id !== undefined) {
      const id = ++this.nextId;
      const sessionRequestId = message.id as JsonRpcId;
      this.outstanding.set(id, { sessionId, sessionRequestId });
      this.byRequestKey.set(requestKey(sessionId, sessionRequestId), id);
      return JSON.stringify({ ...message, id });
    }
    if (message.method === CANCEL_REQUEST && isObject(message.params)) {
      const key = requestKey(sessionId, message.params.requestId as JsonRpcId);
      const id = this.byRequestKey.get(key);
      if (id === undefined) return undefined; // already answered by this client: nothing to withdraw
      this.byRequestKey.delete(key);
      this.outstanding.delete(id);
      return JSON.stringify({ ...message, params: { ...message.params, requestId: id } });
    }
    if (isObject(message.error) && isObject(message.error.data) && message.error.data.requestId !== undefined) {
      const key = requestKey(sessionId, message.error.data.requestId as JsonRpcId);
      const id = this.answered.get(key) ?? this.byRequestKey.get(key);
      return JSON.stringify({ ...message, error: { ...message.error, data: { ...message.error.data, requestId: id ?? null } } });
    }
    return JSON.stringify(message);
  }

  /**
   * The client's answer, as the edge parsed it (parsed once: the text is not read again), as its
   * session must see it: under the session's own id. Undefined for an id this connection did not give
   * out, or one already answered or withdrawn.
   */
  toSession(answer: { id: JsonRpcId | null }): { sessionId: string; text: string } | undefined {
    const id = answer.id;
    if (typeof id !== "number") return undefined;
    const target = this.outstanding.get(id);
    if (!target) return undefined;
    this.outstanding.delete(id);
    const key = requestKey(target.sessionId, target.sessionRequestId);
    this.byRequestKey.delete(key);
    this.remember(key, id);
    return { sessionId: target.sessionId, text: JSON.stringify({ ...answer, id: target.sessionRequestId }) };
  }

  private remember(key: string, id: number): void {
    this.answered.set(key, id);
    if (this.answered.size > ANSWERED_MEMORY) {
      const oldest = this.answered.keys().next().value;
      if (oldest !== undefined) this.answered.delete(oldest);
    }
  }
}

function requestKey(sessionId: string, id: JsonRpcId | undefined): string {
  return `${sessionId}\u0000${JSON.stringify(id)}`;
}
