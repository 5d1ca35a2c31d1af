// A byte-level Streamable HTTP client for the workerd tests: POSTs to /acp and SSE readers whose
// events are buffered, so `next` never misses one. The SDK's own client is driven in test/e2e.

import { SELF } from "cloudflare:test";
import { Inbox } from "./helpers";

export { withoutCursor } from "./helpers";

type Json = Record<string, any>;

const URL_ = "http://gateway.test/acp";

export function post(key: string | undefined, body: unknown, headers: Record<string, string> = {}, query = ""): Promise<Response> {
  return SELF.fetch(`${URL_}${query}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export function getStream(key: string, connectionId: string, sessionId?: string, lastEventId?: string): Promise<Response> {
  return SELF.fetch(URL_, {
    headers: {
      Authorization: `Bearer ${key}`,
      Accept: "text/event-stream",
      "Acp-Connection-Id": connectionId,
      ...(sessionId ? { "Acp-Session-Id": sessionId } : {}),
      ...(lastEventId !== undefined ? { "Last-Event-ID": lastEventId } : {}),
    },
  });
}

/** The events of one SSE response; comments are counted, not returned. */
export class SseReader {
  private readonly inbox = new Inbox("SSE event");
  comments = 0;
  /** The id of the last event received (SSE `id:`, the stream cursor), for Last-Event-ID. */
  lastEventId: string | undefined;
  /** Every event received, in order, with its SSE id (undefined for an event without one). */
  readonly events: { id: string | undefined; message: Json }[] = [];
  readonly ended: Promise<void>;
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(response: Response) {
    if (!response.body) throw new Error("SSE response without a body");
    this.reader = response.body.getReader();
    this.ended = this.pump();
  }

  private async pump(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await this.reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = event
            .split("\n")
            .filter((l) => l.startsWith("data: "))
            .map((l) => l.slice(6))
            .join("\n");
          const idLine = event.split("\n").find((l) => l.startsWith("id: "));
          const id = idLine?.slice(4);
          if (id !== undefined) this.lastEventId = id;
          if (event.startsWith(":")) this.comments++;
          else if (data) {
            const message = JSON.parse(data) as Json;
            this.events.push({ id, message });
            this.inbox.deliver(message);
          }
        }
      }
    } catch {
      // cancelled
    }
  }

  next(match: (m: Json) => boolean = () => true, timeoutMs = 10_000): Promise<Json> {
    return this.inbox.next(match, timeoutMs);
  }

  unclaimed(): Json[] {
    return this.inbox.unclaimed();
  }

  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => undefined);
  }
}

/** An initialized HTTP connection with its connection stream open. */
export async function httpConnect(key: string, agent: string) {
  const init = await post(
    key,
    { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } },
    {},
    `?agent=${agent}`,
  );
  if (init.status !== 200) throw new Error(`initialize failed: ${init.status} ${await init.text()}`);
  const connectionId = init.headers.get("Acp-Connection-Id");
  if (!connectionId) throw new Error("no Acp-Connection-Id");
  const initialize = (await init.json()) as Json;
  const stream = new SseReader(await getStream(key, connectionId));
  let nextId = 1;
  const send = (message: Json, sessionId?: string) =>
    post(key, { jsonrpc: "2.0", ...message }, { "Acp-Connection-Id": connectionId, ...(sessionId ? { "Acp-Session-Id": sessionId } : {}) });
  return {
    connectionId,
    initialize,
    stream,
    send,
    async request(method: string, params: Json | undefined, sessionId?: string) {
      const id = nextId++;
      const response = await send({ id, method, ...(params ? { params } : {}) }, sessionId);
      return { id, response };
    },
    async openSession(id: string) {
      return new SseReader(await getStream(key, connectionId, id));
    },
    del: () => SELF.fetch(URL_, { method: "DELETE", headers: { Authorization: `Bearer ${key}`, "Acp-Connection-Id": connectionId } }),
  };
}
