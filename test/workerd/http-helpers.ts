// A byte-level Streamable HTTP client for the workerd tests: POSTs to /acp and SSE readers whose
// events are buffered, so `next` never misses one. The SDK's own client is driven in test/e2e.

import { SELF } from "cloudflare:test";

type Json = Record<string, any>;

const URL_ = "http://gateway.test/acp";

export function post(key: string | undefined, body: unknown, headers: Record<string, string> = {}, query = ""): Promise<Response> {
  return SELF.fetch(`${URL_}${query}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export function getStream(key: string, connectionId: string, sessionId?: string, lastEventId?: number): Promise<Response> {
  return SELF.fetch(URL_, {
    headers: {
      Authorization: `Bearer ${key}`,
      Accept: "text/event-stream",
      "Acp-Connection-Id": connectionId,
      ...(sessionId ? { "Acp-Session-Id": sessionId } : {}),
      ...(lastEventId !== undefined ? { "Last-Event-ID": String(lastEventId) } : {}),
    },
  });
}

/** The events of one SSE response; comments are counted, not returned. */
export class SseReader {
  private readonly inbox: Json[] = [];
  private readonly waiters: { match: (m: Json) => boolean; resolve: (m: Json) => void }[] = [];
  comments = 0;
  /** The id of the last event received (SSE `id:`), for Last-Event-ID. */
  lastEventId: number | undefined;
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
          const id = event.split("\n").find((l) => l.startsWith("id: "));
          if (id) this.lastEventId = Number(id.slice(4));
          if (event.startsWith(":")) this.comments++;
          else if (data) this.deliver(JSON.parse(data) as Json);
        }
      }
    } catch {
      // cancelled
    }
  }

  private deliver(message: Json): void {
    const i = this.waiters.findIndex((w) => w.match(message));
    if (i >= 0) this.waiters.splice(i, 1)[0]?.resolve(message);
    else this.inbox.push(message);
  }

  next(match: (m: Json) => boolean = () => true, timeoutMs = 5000): Promise<Json> {
    const i = this.inbox.findIndex(match);
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0] as Json);
    return new Promise((resolve, reject) => {
      const waiter = {
        match,
        resolve: (m: Json) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no matching SSE event within ${timeoutMs} ms; unclaimed: ${JSON.stringify(this.inbox).slice(0, 2000)}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  unclaimed(): Json[] {
    return [...this.inbox];
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
