import { CLOSE } from "../../core/close-codes";
import { ErrorCode } from "../../core/rpc-errors";
import type { Api } from "./api";
// An ACP client over the gateway's WebSocket, speaking raw JSON-RPC 2.0: requests with their
// answers, notifications, and requests from the gateway (permission requests) answered by id.
// Browsers cannot set headers on a WebSocket, and a key in a subprotocol or URL is kept by proxies
// and logs: the console gets a single-use ticket over fetch (POST /v1/tickets, its key or the person's
// token in the Authorization header) and offers `acp.ticket.<TICKET>` beside `acp.v1` (decision 0025). The gateway
// refuses a bad ticket with 401 before the upgrade, which a browser only reports as close code 1006:
// the ticket's request says what is wrong with the key first.

export type JsonObject = { [key: string]: unknown };

/** How long one attempt to open the WebSocket may take. */
const OPEN_TIMEOUT_MS = 15_000;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

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

class AcpRequestError extends Error {
  constructor(
    readonly method: string,
    readonly error: RpcError,
  ) {
    super(error.message);
  }
}

export class AcpClient {
  private nextId = 1;
  private readonly waiting = new Map<number, { method: string; resolve(result: unknown): void; reject(error: Error): void }>();
  private closed = false;

  private constructor(
    private readonly ws: WebSocket,
    private readonly handlers: AcpHandlers,
  ) {
    ws.addEventListener("message", (event) => this.receive(String(event.data)));
    ws.addEventListener("close", (event) => {
      this.closed = true;
      for (const waiter of this.waiting.values())
        waiter.reject(new Error(`the connection closed (${event.code}) before ${waiter.method} was answered`));
      this.waiting.clear();
      handlers.onClose(event.code, event.reason);
    });
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
      // SAFETY: the caller names the result type of the method it calls; the gateway answers that method.
      this.waiting.set(id, { method, resolve: (r) => resolve(r as T), reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method: string, params: JsonObject): void {
    this.send({ jsonrpc: "2.0", method, params });
  }

  respond(id: number | string, result: JsonObject): void {
    this.send({ jsonrpc: "2.0", id, result });
  }

  respondError(id: number | string, error: RpcError): void {
    this.send({ jsonrpc: "2.0", id, error });
  }

  close(): void {
    this.closed = true;
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
