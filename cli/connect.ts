// Opening a WebSocket to the gateway, telling a refused key (which retrying cannot fix) from an
// unreachable gateway (which it can).

import { WebSocket } from "ws";
import { backoff, log } from "./ndjson.ts";

type OpenResult =
  | { ok: true; socket: WebSocket; connectionId: string | null }
  | { ok: false; refused: true; status: number; message: string }
  | { ok: false; refused: false; message: string };

function openSocket(url: string, key: string): Promise<OpenResult> {
  return new Promise((resolve) => {
    const socket = new WebSocket(url, { headers: { Authorization: `Bearer ${key}` }, maxPayload: 64 * 1024 * 1024 });
    let connectionId: string | null = null;
    socket.once("upgrade", (response) => {
      const header = response.headers["acp-connection-id"];
      connectionId = typeof header === "string" ? header : null;
    });
    let answered = false; // an HTTP answer instead of an upgrade: its status says what went wrong
    socket.once("open", () => resolve({ ok: true, socket, connectionId }));
    socket.once("unexpected-response", (_request, response) => {
      answered = true;
      let body = "";
      response.on("data", (d: Buffer) => (body += d.toString()));
      response.on("end", () => {
        const status = response.statusCode ?? 0;
        let message = body;
        try {
          message = (JSON.parse(body) as { error?: { message?: string } }).error?.message ?? body;
        } catch {
          // not JSON
        }
        const refused = status === 401 || status === 403;
        resolve(
          refused
            ? { ok: false, refused, status, message: `the gateway refused the key (HTTP ${status}): ${message}` }
            : { ok: false, refused: false, message: `HTTP ${status}: ${message}` },
        );
        socket.terminate();
      });
    });
    socket.on("error", (error) => {
      if (!answered) resolve({ ok: false, refused: false, message: error.message });
    });
  });
}

/** Attempts before a bridge that never connected gives up on an unreachable gateway. */
const MAX_FIRST_ATTEMPTS = 5;

/**
 * Opens the socket, retrying with backoff while the gateway is unreachable. A refused key is final
 * (exit 2); a gateway never reached gives up after a few attempts (exit 1); one that was reached
 * before is retried for as long as `keepTrying` says. A failure carries the line it logged.
 */
export async function connectWithRetry(
  url: string,
  key: string,
  opts: { everConnected: boolean; keepTrying?: () => boolean },
): Promise<{ ok: true; socket: WebSocket; connectionId: string | null } | { ok: false; exitCode: 1 | 2; message: string }> {
  for (let attempt = 0; opts.keepTrying?.() ?? true; attempt++) {
    const result = await openSocket(url, key);
    if (result.ok) return result;
    if (result.refused) {
      log(result.message);
      return { ok: false, exitCode: 2, message: result.message };
    }
    if (!opts.everConnected && attempt + 1 >= MAX_FIRST_ATTEMPTS) {
      const message = `cannot reach the gateway at ${url}: ${result.message}`;
      log(message);
      return { ok: false, exitCode: 1, message };
    }
    const wait = backoff(attempt);
    log(`cannot reach the gateway (${result.message}); retrying in ${wait} ms`);
    await new Promise((r) => setTimeout(r, wait));
  }
  return { ok: false, exitCode: 1, message: "stopped" };
}
