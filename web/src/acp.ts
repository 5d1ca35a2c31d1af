import { CLOSE } from "../../core/close-codes";
import { ErrorCode } from "../../core/rpc-errors";
import type { Api } from "./api";
import { AcpRequestError, type RpcError } from "./rpc-error";
// An ACP client over the gateway's WebSocket, speaking raw JSON-RPC 2.0: requests with their
// answers, notifications, and requests from the gateway (permission requests) answered by id.
// Browsers cannot set headers on a WebSocket, and a key in a subprotocol or URL is kept by proxies
// and logs: the console gets a single-use ticket over fetch (POST /v1/tickets, its key or the person's
// token in the Authorization header) and offers `acp.ticket.<TICKET>` beside `acp.v1` (decision 0025). The gateway
// refuses a bad ticket with 401 before the upgrade, which a browser only reports as close code 1006:
// the ticket's request says what is wrong with the key first.
// Resumable streams (decision 0050): the client keeps each session's last stream cursor, and the
// requests a resumed stream would answer (a session's, not the edge's own) outlive a dropped socket
// until a new client adopts them (`adopt`) or they are failed (`failWaiting`).

export type JsonObject = { [key: string]: unknown };

/** How long one attempt to open the WebSocket may take. */
const OPEN_TIMEOUT_MS = 15_000;

/** A request or notification from the gateway: `id` is set for requests that want an answer. */
export interface Incoming {
  id?: number | string;
  method: string;
  params: JsonObject;
}

export interface AcpHandlers {
  onMessage(message: Incoming): void;
  onClose(code: number, reason: string): void;
}

/** Requests the gateway's edge answers itself: no resumed stream brings their answer. */
const EDGE_ANSWERED = new Set([
  "initialize",
  "session/new",
  "session/load",
  "session/list",
  "session/attach",
  "session/detach",
  "stream/resume",
]);

interface Waiter {
  method: string;
  sessionId?: string;
  resolve(result: unknown): void;
  reject(error: Error): void;
}

export class AcpClient {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiter>();
  /** Each session's last stream cursor (`_meta["acp/cursor"]`): where a resume starts. */
  private readonly cursors = new Map<string, string>();
  /** Requests from the gateway not answered yet: their ids are this socket's, void on any other. */
  private readonly unanswered = new Set<number | string>();
  private closed = false;

  private constructor(
    private readonly ws: WebSocket,
    private readonly handlers: AcpHandlers,
  ) {
    ws.addEventListener("message", (event) => this.receive(String(event.data)));
    ws.addEventListener("close", (event) => {
      this.closed = true;
      // What a resumed stream could still answer waits for the next client; the rest fails now.
      this.failWaiting(`the connection closed (${event.code})`, (w) => !this.resumable(w));
      handlers.onClose(event.code, event.reason);
    });
  }

  /** Each session's last cursor, for `stream/resume`. */
  get streams(): Record<string, string> {
    return Object.fromEntries(this.cursors);
  }

  /** The gateway's requests this socket left unanswered (a new socket never answers them). */
  get unansweredRequests(): (number | string)[] {
    return [...this.unanswered];
  }

  /** Fails the requests still waiting (all, or those `which` names): their answer will not come. */
  failWaiting(why: string, which: (waiter: { method: string; sessionId?: string }) => boolean = () => true): void {
    for (const [id, waiter] of this.waiting) {
      if (!which(waiter)) continue;
      this.waiting.delete(id);
      waiter.reject(new Error(`${why} before ${waiter.method} was answered`));
    }
  }

  /**
   * Takes over a dropped client's requests that a resumed stream may answer, and its numbering (its
   * ids are the connection's, which a resume keeps). Called before this client sends anything.
   */
  adopt(previous: AcpClient): void {
    this.nextId = Math.max(this.nextId, previous.nextId);
    for (const [id, waiter] of previous.waiting) this.waiting.set(id, waiter);
    previous.waiting.clear();
    for (const [sessionId, cursor] of previous.cursors) if (!this.cursors.has(sessionId)) this.cursors.set(sessionId, cursor);
  }

  /** Notes the stream cursor a session's frame carries (`_meta` of its params, or of a response's envelope). */
  private noteCursor(sessionId: unknown, meta: unknown): void {
    const cursor = isObject(meta) ? meta["acp/cursor"] : undefined;
    if (typeof sessionId === "string" && typeof cursor === "string") this.cursors.set(sessionId, cursor);
  }

  private resumable(waiter: { method: string; sessionId?: string }): boolean {
    return !EDGE_ANSWERED.has(waiter.method) && waiter.sessionId !== undefined && this.cursors.has(waiter.sessionId);
  }

  static async open(agent: string, api: Api, handlers: AcpHandlers): Promise<AcpClient> {
    const { subprotocol } = await api.post<{ subprotocol: string }>("/v1/tickets", {});
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}/acp?agent=${encodeURIComponent(agent)}`, ["acp.v1", subprotocol]);
    return new Promise((resolve, reject) => {
      // A gateway that is restarting may hold the upgrade without answering: give up on this attempt
      // (the link tries again) rather than wait for ever.
      const timer = setTimeout(() => {
        ws.removeEventListener("error", failed);
        ws.close();
        reject(new Error("The gateway did not answer the connection in time."));
      }, OPEN_TIMEOUT_MS);
      const failed = () => {
        clearTimeout(timer);
        reject(new Error("The gateway refused the connection."));
      };
      ws.addEventListener("error", failed, { once: true });
      ws.addEventListener(
        "open",
        () => {
          clearTimeout(timer);
          ws.removeEventListener("error", failed);
          resolve(new AcpClient(ws, handlers));
        },
        { once: true },
      );
    });
  }

  get isOpen(): boolean {
    return !this.closed && this.ws.readyState === WebSocket.OPEN;
  }

  request<T = JsonObject>(method: string, params: JsonObject): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const sessionId = typeof params.sessionId === "string" ? params.sessionId : undefined;
      // SAFETY: the caller names the result type of the method it calls; the gateway answers that method.
      this.waiting.set(id, { method, ...(sessionId !== undefined ? { sessionId } : {}), resolve: (r) => resolve(r as T), reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method: string, params: JsonObject): void {
    this.send({ jsonrpc: "2.0", method, params });
  }

  respond(id: number | string, result: JsonObject): void {
    this.send({ jsonrpc: "2.0", id, result });
    this.unanswered.delete(id);
  }

  respondError(id: number | string, error: RpcError): void {
    this.send({ jsonrpc: "2.0", id, error });
    this.unanswered.delete(id);
  }

  close(): void {
    this.closed = true;
    this.failWaiting("the console closed the connection");
    this.ws.close(CLOSE.normal, "signed out");
  }

  private send(message: JsonObject): void {
    if (this.ws.readyState !== WebSocket.OPEN) throw new Error("Not connected to the gateway.");
    this.ws.send(JSON.stringify(message));
  }

  private receive(data: string): void {
    let message: unknown;
    try {
      message = JSON.parse(data);
    } catch {
      return;
    }
    for (const one of Array.isArray(message) ? message : [message]) this.dispatch(one);
  }

  private dispatch(message: unknown): void {
    if (!isObject(message)) return;
    if (typeof message.method === "string") {
      const id = typeof message.id === "number" || typeof message.id === "string" ? message.id : undefined;
      if (isObject(message.params)) this.noteCursor(message.params.sessionId, message.params._meta);
      if (id !== undefined) this.unanswered.add(id);
      const withdrawn = message.method === "$/cancel_request" && isObject(message.params) ? message.params.requestId : undefined;
      if (typeof withdrawn === "number" || typeof withdrawn === "string") this.unanswered.delete(withdrawn);
      this.handlers.onMessage({
        ...(id !== undefined ? { id } : {}),
        method: message.method,
        params: isObject(message.params) ? message.params : {},
      });
      return;
    }
    if (typeof message.id !== "number") return;
    const waiter = this.waiting.get(message.id);
    if (!waiter) return;
    this.waiting.delete(message.id);
    this.noteCursor(waiter.sessionId, message._meta);
    if (isObject(message.error)) {
      const error = message.error;
      waiter.reject(
        new AcpRequestError(waiter.method, {
          code: typeof error.code === "number" ? error.code : ErrorCode.internalError,
          message: typeof error.message === "string" ? error.message : "the gateway answered with an error",
          data: error.data,
        }),
      );
    } else waiter.resolve(message.result);
  }
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
