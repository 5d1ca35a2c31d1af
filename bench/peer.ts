// A minimal JSON-RPC peer over `ws` for the benchmark: no buffering tricks, just a handler per
// incoming frame, so timing measures the gateway rather than the harness.

import { WebSocket } from "ws";

export type Json = Record<string, any>;

export class Peer {
  onMessage: (message: Json, raw: string) => void = () => undefined;
  readonly socket: WebSocket;
  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.on("message", (data) => {
      const raw = String(data);
      this.onMessage(JSON.parse(raw) as Json, raw);
    });
  }

  static open(url: string, key?: string): Promise<Peer> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url, { headers: key ? { Authorization: `Bearer ${key}` } : {}, maxPayload: 256 * 1024 * 1024 });
      socket.once("open", () => resolve(new Peer(socket)));
      socket.once("error", reject);
    });
  }

  send(message: Json | string): void {
    this.socket.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** Resolves with the first message that matches, from now on. */
  next(match: (m: Json) => boolean, timeoutMs = 60_000): Promise<Json> {
    return new Promise((resolve, reject) => {
      const previous = this.onMessage;
      const timer = setTimeout(() => {
        this.onMessage = previous;
        reject(new Error("benchmark peer timed out"));
      }, timeoutMs);
      this.onMessage = (m, raw) => {
        if (match(m)) {
          clearTimeout(timer);
          this.onMessage = previous;
          resolve(m);
        } else previous(m, raw);
      };
    });
  }

  close(): void {
    this.socket.close();
  }
}

/** An agent that dials in and answers initialize and session/new itself. */
export async function benchAgent(base: string, key: string, name: string): Promise<Peer & { newSessions(): void }> {
  const peer = await Peer.open(`${base}/agents/${name}/connect`, key);
  let n = 0;
  const auto = (m: Json) => {
    if (m.method === "initialize")
      peer.send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: 1, agentCapabilities: { loadSession: false } } });
    else if (m.method === "session/new") peer.send({ jsonrpc: "2.0", id: m.id, result: { sessionId: `${name}-s${n++}` } });
  };
  peer.onMessage = auto;
  return Object.assign(peer, { newSessions: () => (peer.onMessage = auto) });
}

export async function benchClient(base: string, key: string, agent: string): Promise<Peer> {
  const peer = await Peer.open(`${base}/acp?agent=${agent}`, key);
  peer.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: 1 } });
  await peer.next((m) => m.id === "init");
  return peer;
}

export async function newSession(client: Peer, cwd = "/bench"): Promise<string> {
  const id = `new-${Math.random()}`;
  client.send({ jsonrpc: "2.0", id, method: "session/new", params: { cwd, mcpServers: [] } });
  const answer = await client.next((m) => m.id === id);
  if (typeof answer.result?.sessionId !== "string") throw new Error(`session/new failed: ${JSON.stringify(answer)}`);
  return answer.result.sessionId as string;
}

export async function loadSession(client: Peer, sessionId: string): Promise<void> {
  const id = `load-${Math.random()}`;
  client.send({ jsonrpc: "2.0", id, method: "session/load", params: { sessionId, cwd: "/bench", mcpServers: [] } });
  await client.next((m) => m.id === id);
}

/** Starts a turn and leaves it running (permission requests are asked only during one): the prompt is sent and seen at the agent. */
export async function startTurn(client: Peer, agent: Peer, sessionId: string, id: string): Promise<void> {
  client.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
  await agent.next((m) => m.method === "session/prompt");
}
