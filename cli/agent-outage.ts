import { ErrorCode } from "../core/rpc-errors.ts";
import { AGENT_BRIDGE_NOTIFICATIONS } from "../core/gateway-notifications.ts";
// What the agent bridge does with the agent's output while its socket to the gateway is down.
//
// The gateway treats a new connection as a new epoch: answers meant for the old connection are
// dropped, and the requests the agent had made on it were withdrawn from the clients. So, while down:
// - the agent's notifications (session/update, extensions) are kept in a bounded buffer and sent
//   after reconnecting: the sessions are still the agent's, and the clients see what it did;
// - the agent's requests cannot be answered by anyone: they are answered at once (a permission
//   request `cancelled`, anything else an error), and so are those still open when the socket drops;
// - its answers to the gateway's requests belong to the old connection and are dropped.
// When the buffer is full the oldest messages go (the latest state of a tool call is worth more than
// its first report), and after reconnecting each session is told how many of its messages were dropped.

type Json = Record<string, unknown>;

export interface BufferLimits {
  messages: number;
  bytes: number;
}

const DEFAULT_BUFFER_LIMITS: BufferLimits = { messages: 10_000, bytes: 16 * 1024 * 1024 };

export class OutageBuffer {
  private readonly lines: { text: string; sessionId: string | undefined }[] = [];
  private bytes = 0;
  private readonly dropped = new Map<string, number>();

  private readonly limits: BufferLimits;

  constructor(limits: BufferLimits = DEFAULT_BUFFER_LIMITS) {
    this.limits = limits;
  }

  /** Keeps a line of the agent's output; drops the oldest when a limit is passed. */
  push(text: string, sessionId: string | undefined): void {
    this.lines.push({ text, sessionId });
    this.bytes += byteLength(text);
    while (this.lines.length > this.limits.messages || (this.bytes > this.limits.bytes && this.lines.length > 0)) {
      const oldest = this.lines.shift();
      if (!oldest) break;
      this.bytes -= byteLength(oldest.text);
      const key = oldest.sessionId ?? "";
      this.dropped.set(key, (this.dropped.get(key) ?? 0) + 1);
    }
  }

  get size(): number {
    return this.lines.length;
  }

  /** What to send after reconnecting, in order: the kept lines, then a notice per session that lost some. */
  drain(): string[] {
    const out = this.lines.splice(0).map((l) => l.text);
    for (const [sessionId, count] of this.dropped) {
      if (sessionId === "") continue; // no session to tell; the bridge logs it
      out.push(
        JSON.stringify({
          jsonrpc: "2.0",
          method: AGENT_BRIDGE_NOTIFICATIONS.outputDropped,
          params: {
            sessionId,
            dropped: count,
            message: `${count} message(s) of the agent were dropped while its connection to the gateway was down (the bridge's buffer was full)`,
          },
        }),
      );
    }
    this.dropped.clear();
    this.bytes = 0;
    return out;
  }

  /** How many messages were dropped in total since the last drain. */
  droppedCount(): number {
    let n = 0;
    for (const count of this.dropped.values()) n += count;
    return n;
  }
}

export type AgentLine =
  | { kind: "request"; id: string | number; method: string; sessionId: string | undefined }
  | { kind: "notification"; method: string; sessionId: string | undefined }
  | { kind: "response"; id: unknown }
  | { kind: "unparsed" };

/** What one line from the agent is. */
export function classify(line: string): AgentLine {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return { kind: "unparsed" };
  }
  if (!isJson(message)) return { kind: "unparsed" };
  const params = isJson(message.params) ? message.params : undefined;
  const sessionId = typeof params?.sessionId === "string" ? params.sessionId : undefined;
  if (typeof message.method === "string") {
    const id = message.id;
    if (typeof id === "string" || typeof id === "number") return { kind: "request", id, method: message.method, sessionId };
    return { kind: "notification", method: message.method, sessionId };
  }
  return { kind: "response", id: message.id };
}

/** The answer the bridge gives the agent for one of its requests that nobody can answer any more. */
export function unanswerable(id: string | number, method: string): string {
  if (method === "session/request_permission") {
    return JSON.stringify({ jsonrpc: "2.0", id, result: { outcome: { outcome: "cancelled" } } });
  }
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    error: {
      code: ErrorCode.internalError,
      message: `The connection to the gateway dropped; ${method} cannot be answered (the clients that could serve it were on the old connection)`,
      data: { reason: "gateway_disconnected" },
    },
  });
}

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const encoder = new TextEncoder();
function byteLength(text: string): number {
  return encoder.encode(text).length;
}
