// Baselines for the benchmark, one hop at a time:
// - /echo: a Durable Object that accepts a hibernatable WebSocket and echoes each frame;
// - /relay?room=R&role=a|b: client → Worker → Durable Object → Worker → the other client, the
//   gateway's own topology (the Worker terminates the client socket and opens one to the object),
//   with no ACP logic at all;
// - /prelay?room=R&role=a|b: the same, but the object inserts each frame into its SQLite log before
//   it sends it on: the persisted relay, the floor for any relay that keeps a log (the output gate
//   holds the send until the insert commits, exactly as it does in the gateway).
import { DurableObject } from "cloudflare:workers";

interface Env {
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
    const role = new URL(request.url).searchParams.get("role") ?? "a";
    const pair = new WebSocketPair();
    this.ctx.acceptWebSocket(pair[1], [role]);
    return new Response(null, { status: 101, webSocket: pair[0] });
  }
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    const [role] = this.ctx.getTags(ws);
    for (const other of this.ctx.getWebSockets(role === "a" ? "b" : "a")) other.send(data);
  }
}

export class PersistedRoom extends Room {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS log (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
  }
  override webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): void {
    this.ctx.storage.sql.exec("INSERT INTO log (body) VALUES (?)", typeof data === "string" ? data : new TextDecoder().decode(data));
    super.webSocketMessage(ws, data);
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/health") return new Response("ok");
    if (url.pathname === "/echo") return env.ECHO.get(env.ECHO.idFromName("echo")).fetch(request);
    if (url.pathname === "/relay" || url.pathname === "/prelay") {
      const rooms = url.pathname === "/relay" ? env.ROOMS : env.PERSISTED;
      const room = rooms.get(rooms.idFromName(url.searchParams.get("room") ?? "r"));
      const upstream = await room.fetch(`https://room/?role=${url.searchParams.get("role") ?? "a"}`, { headers: { Upgrade: "websocket" } });
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
    return new Response("not found", { status: 404 });
  },
};
