// A loopback HTTP server for one scripted model: it records every request (method, path, body) so a
// test can show what the agent asked, and hands each to the wire format's handler.

import { type IncomingMessage, type ServerResponse, createServer } from "node:http";

export interface ModelRequest {
  method: string;
  path: string;
  body: unknown;
  /** When it arrived (ms since the epoch), to line it up with the agent's log in a failure report. */
  at: number;
}

export type Handler = (request: ModelRequest, res: ServerResponse) => void;

export interface ModelServer {
  url: string;
  requests: ModelRequest[];
  close(): Promise<void>;
}

export async function startModelServer(handle: Handler): Promise<ModelServer> {
  const requests: ModelRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // Not JSON: kept as text.
      }
      const request = { method: req.method ?? "GET", path: req.url ?? "/", body, at: Date.now() };
      requests.push(request);
      try {
        handle(request, res);
      } catch (error) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: String(error) } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Server-sent events: `event:` lines when named (Anthropic), bare `data:` lines otherwise (OpenAI). */
export function sse(res: ServerResponse, events: { event?: string; data: unknown }[], done?: string): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const { event, data } of events) res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  if (done) res.write(`data: ${done}\n\n`);
  res.end();
}

export function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
