// Real ACP peers for the end-to-end tests, built with @agentclientprotocol/sdk: a client over the
// SDK's WebSocket transport (what a remote editor or web page is), and an agent that dials in to
// the gateway over the same transport (what a cloud agent is). Everything they receive is recorded,
// and tests wait for what they expect with a timeout, never with sleeps.

import { type ClientConnection, type AgentConnection, agent, client } from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";

const wsUrl = (httpUrl: string, path: string) => httpUrl.replace(/^http/, "ws") + path;

/** Something that records messages and lets a test wait for one. */
export class Recorder<T> {
  readonly items: T[] = [];
  private readonly waiters: { match: (item: T) => boolean; resolve: (item: T) => void }[] = [];

  push(item: T): void {
    this.items.push(item);
    for (const w of [...this.waiters]) {
      if (w.match(item)) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(item);
      }
    }
  }

  /** The first recorded item (past or future) that matches. */
  waitFor(match: (item: T) => boolean, timeoutMs = 10_000, what = "a matching message"): Promise<T> {
    const found = this.items.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = {
        match,
        resolve: (item: T) => {
          clearTimeout(timer);
          resolve(item);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`timed out waiting for ${what}; recorded: ${JSON.stringify(this.items).slice(0, 3000)}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}

type Json = Record<string, any>;

/** Params without the stream cursor each client's stream adds (decision 0050): one stream's, never equal across two. */
export function withoutCursor(params: Json): Json {
  const { _meta: meta, ...rest } = params;
  const { "acp/cursor": _cursor, ...others } = (meta ?? {}) as Json;
  return Object.keys(others).length > 0 ? { ...rest, _meta: others } : rest;
}

interface PermissionRequest {
  params: Json;
  signal: AbortSignal;
  answer(result: Json): void;
  answered: Promise<Json>;
}

export interface TestClient {
  connection: ClientConnection;
  updates: Recorder<Json>;
  permissions: Recorder<PermissionRequest>;
  /** Every other notification (the gateway's `_acp_gateway/*`), as method and params. */
  notices: Recorder<{ method: string; params: Json }>;
  request<R = Json>(method: string, params?: unknown): Promise<R>;
  notify(method: string, params?: unknown): Promise<void>;
  close(): void;
}

/**
 * An SDK client connected to /acp?agent=NAME, over WebSocket (default) or Streamable HTTP.
 * Permission requests wait until the test answers them.
 */
export async function connectClient(opts: {
  url: string;
  /** An API key, or a person's identity token (then `tenant` names its tenant). */
  key: string;
  agent: string;
  transport?: "ws" | "http";
  tenant?: string;
}): Promise<TestClient> {
  const updates = new Recorder<Json>();
  const permissions = new Recorder<PermissionRequest>();
  const notices = new Recorder<{ method: string; params: Json }>();
  const app = client({ name: "e2e-client" })
    .onNotification("*", ({ method, params }) => {
      notices.push({ method, params: params as Json });
    })
    .onNotification("session/update", ({ params }) => {
      updates.push(params as Json);
    })
    .onRequest("session/request_permission", ({ params, signal }) => {
      let answer!: (result: Json) => void;
      const answered = new Promise<Json>((resolve, reject) => {
        answer = resolve;
        signal.addEventListener("abort", () => reject(signal.reason ?? new Error("withdrawn")));
      });
      answered.catch(() => undefined);
      permissions.push({ params: params as Json, signal, answer, answered });
      // SAFETY: the test answers with a RequestPermissionResponse-shaped object.
      return answered as Promise<never>;
    });
  const path = `/acp?agent=${encodeURIComponent(opts.agent)}`;
  const headers = { Authorization: `Bearer ${opts.key}`, ...(opts.tenant ? { "Acp-Tenant": opts.tenant } : {}) };
  const stream =
    opts.transport === "http"
      ? createHttpStream(opts.url + path, { headers })
      : // SAFETY: ws's WebSocket has the constructor shape the SDK asks for.
        createWebSocketStream(wsUrl(opts.url, path), { WebSocket: WebSocket as never, headers });
  const connection = app.connect(stream);
  const ctx = connection.agent;
  await ctx.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  return {
    connection,
    updates,
    permissions,
    notices,
    request: (method, params) => ctx.request(method, params) as never,
    notify: (method, params) => ctx.notify(method, params),
    close: () => connection.close(),
  };
}

interface Turn {
  sessionId: string;
  signal: AbortSignal;
  say(text: string): Promise<void>;
  update(update: Json): Promise<void>;
  askPermission(toolCall: Json, options?: Json[]): Promise<Json>;
}

export type TurnScript = (turn: Turn) => Promise<"end_turn" | "cancelled">;

const PERMISSION_OPTIONS = [
  { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject-once", name: "Reject", kind: "reject_once" },
];

/** An SDK agent that dials in to /agents/NAME/connect; each prompt runs the script the test gives. */
export async function dialInAgent(opts: {
  url: string;
  key: string;
  name: string;
  script: TurnScript;
}): Promise<{ connection: AgentConnection; prompts: Recorder<Json>; close(): void }> {
  const prompts = new Recorder<Json>();
  const turns = new Map<string, AbortController>();
  let n = 0;
  const app = agent({ name: "e2e-agent" })
    .onRequest("initialize", () => ({
      protocolVersion: 1,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "e2e-agent", version: "1.0.0" },
      authMethods: [],
    }))
    .onRequest("session/new", () => ({ sessionId: `e2e-${Date.now()}-${n++}` }))
    .onNotification("session/cancel", ({ params }) => turns.get(params.sessionId)?.abort())
    .onRequest("session/prompt", async ({ params, client: cx }) => {
      prompts.push(params as Json);
      const controller = new AbortController();
      turns.set(params.sessionId, controller);
      const turn: Turn = {
        sessionId: params.sessionId,
        signal: controller.signal,
        say: (text) =>
          cx.notify("session/update", {
            sessionId: params.sessionId,
            update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
          }),
        update: (update) => cx.notify("session/update", { sessionId: params.sessionId, update } as never),
        askPermission: (toolCall, options = PERMISSION_OPTIONS) =>
          cx.request("session/request_permission", { sessionId: params.sessionId, toolCall, options } as never) as Promise<Json>,
      };
      try {
        return { stopReason: await opts.script(turn) };
      } finally {
        turns.delete(params.sessionId);
      }
    });
  const stream = createWebSocketStream(wsUrl(opts.url, `/agents/${encodeURIComponent(opts.name)}/connect`), {
    WebSocket: WebSocket as never,
    headers: { Authorization: `Bearer ${opts.key}` },
  });
  const connection = app.connect(stream);
  return { connection, prompts, close: () => connection.close() };
}

/** Waits until the gateway reports the agent connected (its initialize answered). */
export async function waitForAgent(url: string, key: string, name: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const probe = await connectClient({ url, key, agent: name });
    const init = (await probe.request("initialize", { protocolVersion: 1 })) as Json;
    probe.close();
    if (init._meta?.acpGateway?.agentConnected) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`agent ${name} did not connect within ${timeoutMs} ms`);
}

/**
 * A byte-level JSON-RPC client over `ws`, for what typed SDK handlers cannot show: the SDK client
 * validates session/update params against the schema and drops kinds it does not know.
 */
export async function rawClient(opts: { url: string; key: string; agent: string }) {
  const socket = new WebSocket(wsUrl(opts.url, `/acp?agent=${encodeURIComponent(opts.agent)}`), {
    headers: { Authorization: `Bearer ${opts.key}` },
  });
  const received = new Recorder<Json>();
  socket.on("message", (data) => received.push(JSON.parse(String(data)) as Json));
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  let id = 0;
  const request = async (method: string, params?: unknown): Promise<Json> => {
    const mine = `raw-${id++}`;
    socket.send(JSON.stringify({ jsonrpc: "2.0", id: mine, method, params }));
    const response = await received.waitFor((m) => m.id === mine && !("method" in m), 10_000, `the answer to ${method}`);
    if (response.error) throw new Error(JSON.stringify(response.error));
    return response.result as Json;
  };
  return { socket, received, request, close: () => socket.close() };
}
