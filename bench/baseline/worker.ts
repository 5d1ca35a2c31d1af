// Baselines for the benchmark, one hop at a time:
// - /echo: a Durable Object that accepts a hibernatable WebSocket and echoes each frame;
// - /relay?room=R&role=a|b: client → Worker → Durable Object → Worker → the other client, the
//   gateway's own topology (the Worker terminates the client socket and opens one to the object),
//   with no ACP logic at all;
// - /prelay?room=R&role=a|b: the same, but the object inserts each frame into its SQLite log before
//   it sends it on: the persisted relay, the floor for any relay that keeps a log (the output gate
//   holds the send until the insert commits, exactly as it does in the gateway).
// - /hop?via=rpc|ws|wsp&role=a|b: the plain relay with a second object in the middle, as the gateway
//   has (client → Worker → HopEntry → HopExit → Worker → client), the entry reaching the exit by an
//   RPC call or over a WebSocket it opened: what one object-to-object hop costs each way. `wsp`: over
//   a WebSocket, and the exit inserts each frame into SQLite before it sends it on (the persisted
//   relay with the gateway's two objects: the floor for its stream).
import { DurableObject } from "cloudflare:workers";

interface Env {
  HOP_ENTRY: DurableObjectNamespace<HopEntry>;
  HOP_EXIT: DurableObjectNamespace<HopExit>;
  ECHO: DurableObjectNamespace<Echo>;
  ROOMS: DurableObjectNamespace<Room>;
  PERSISTED: DurableObjectNamespace<PersistedRoom>;
}

export class Echo extends DurableObject<Env> {
  override async fetch(): Promise<Response> {
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    ws.send(data);
  }
}

export class Room extends DurableObject<Env> {
  override async fetch(request: Request): Promise<Response> {
    return accepted(this.ctx, new URL(request.url).searchParams.get("role") ?? "a");
  }
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const [role] = this.ctx.getTags(ws);
    for (const other of this.ctx.getWebSockets(role === "a" ? "b" : "a")) other.send(data);
  }
}

export class PersistedRoom extends Room {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createLog(ctx.storage.sql);
  }
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    insertFrame(this.ctx.storage.sql, data);
    super.webSocketMessage(ws, data);
  }
}

export class HopExit extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createLog(ctx.storage.sql);
  }
  override async fetch(request: Request): Promise<Response> {
    return accepted(this.ctx, new URL(request.url).searchParams.get("role") ?? "b");
  }
  /** A frame from the entry over one of its WebSockets (the `persist` one: inserted first). */
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    if (this.ctx.getTags(ws).includes("persist")) insertFrame(this.ctx.storage.sql, data);
    this.deliver(data);
  }
  /** A frame from the entry by RPC. */
  deliver(data: string | ArrayBuffer): void {
    for (const ws of this.ctx.getWebSockets("b")) ws.send(data);
  }
}

export class HopEntry extends DurableObject<Env> {
  private readonly exit = this.env.HOP_EXIT.get(this.env.HOP_EXIT.idFromName("exit"));
  private link?: WebSocket;
  private persistLink?: WebSocket;
  private async open(role: string): Promise<WebSocket | undefined> {
    const opened = await this.exit.fetch(`https://exit/?role=${role}`, { headers: { Upgrade: "websocket" } });
    opened.webSocket?.accept();
    return opened.webSocket ?? undefined;
  }
  override async fetch(request: Request): Promise<Response> {
    this.link ??= await this.open("entry");
    this.persistLink ??= await this.open("persist");
    if (!this.link || !this.persistLink) return new Response("no link", { status: 500 });
    return accepted(this.ctx, new URL(request.url).searchParams.get("via") ?? "rpc");
  }
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const [via] = this.ctx.getTags(ws);
    if (via === "ws" && this.link) this.link.send(data);
    else if (via === "wsp" && this.persistLink) this.persistLink.send(data);
    else void this.exit.deliver(data);
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/health") return new Response("ok");
    if (url.pathname === "/echo") return env.ECHO.get(env.ECHO.idFromName("echo")).fetch(request);
    if (url.pathname === "/hop") {
      const role = url.searchParams.get("role") ?? "a";
      const target =
        role === "b" ? env.HOP_EXIT.get(env.HOP_EXIT.idFromName("exit")) : env.HOP_ENTRY.get(env.HOP_ENTRY.idFromName("entry"));
      return proxied(
        await target.fetch(`https://hop/?role=${role}&via=${url.searchParams.get("via") ?? "rpc"}`, { headers: { Upgrade: "websocket" } }),
      );
    }
    if (url.pathname === "/relay" || url.pathname === "/prelay") {
      const rooms = url.pathname === "/relay" ? env.ROOMS : env.PERSISTED;
      const room = rooms.get(rooms.idFromName(url.searchParams.get("room") ?? "r"));
      return proxied(await room.fetch(`https://room/?role=${url.searchParams.get("role") ?? "a"}`, { headers: { Upgrade: "websocket" } }));
    }
    return new Response("not found", { status: 404 });
  },
};

/** A hibernatable WebSocket accepted under one tag (its role), handed back as the 101. */
function accepted(ctx: DurableObjectState, tag: string): Response {
  const pair = new WebSocketPair();
  ctx.acceptWebSocket(pair[1], [tag]);
  return new Response(null, { status: 101, webSocket: pair[0] });
}

/** The persisted relays' log: created once per object, one insert per frame. */
function createLog(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
}

function insertFrame(sql: SqlStorage, data: string | ArrayBuffer): void {
  sql.exec("INSERT INTO log (body) VALUES (?)", typeof data === "string" ? data : new TextDecoder().decode(data));
}

/** The Worker terminates the client's socket and relays it to the object's, as the gateway's edge does. */
function proxied(upstream: Response): Response {
  const inner = upstream.webSocket;
  if (!inner) return new Response("no socket", { status: 500 });
  inner.accept();
  const pair = new WebSocketPair();
  const outer = pair[1];
  outer.accept();
  outer.addEventListener("message", (e) => inner.send(e.data));
  inner.addEventListener("message", (e) => outer.send(e.data));
  outer.addEventListener("close", () => inner.close());
  inner.addEventListener("close", () => outer.close());
  return new Response(null, { status: 101, webSocket: pair[0] });
}
