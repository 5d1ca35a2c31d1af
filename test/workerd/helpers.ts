// Test helpers for the workerd project: tenants seeded in the real local D1, and byte-level JSON-RPC
// peers over real WebSockets to the real Worker (SELF). A scripted peer stands in for an agent only
// where a test needs an exact message sequence that no real agent produces on demand.

import { SELF, env } from "cloudflare:test";
import { expect } from "vitest";
import { insertKey } from "../../db/queries/keys";
import { mintKey } from "../../protocol/api-keys";
import { randomId } from "../../protocol/ids";
import type { KeyKind, Role } from "../../core/principal";

export interface SeededTenant {
  tenantId: string;
  slug: string;
  clientKey: string;
  clientKey2: string;
  agentKey: string;
  adminKey: string;
}

export async function seedTenant(settings: Record<string, unknown> = {}): Promise<SeededTenant> {
  const tenantId = randomId("t");
  const slug = tenantId.replace("_", "-");
  await env.DB.prepare("INSERT INTO tenants (id, slug, name, settings) VALUES (?, ?, ?, ?)")
    .bind(tenantId, slug, `Tenant ${slug}`, JSON.stringify(settings))
    .run();
  const keys = {
    clientKey: await addKey(tenantId, "client", "alice"),
    clientKey2: await addKey(tenantId, "client", "bob"),
    agentKey: await addKey(tenantId, "agent", null),
    adminKey: await addKey(tenantId, "admin", "admin"),
  };
  return { tenantId, slug, ...keys };
}

export async function addKey(
  tenantId: string,
  kind: KeyKind,
  label: string | null,
  agent: string | null = null,
  more: { role?: Role; user?: string } = {},
): Promise<string> {
  const minted = await mintKey(kind);
  await insertKey(env.DB, tenantId, minted, { kind, label, agent, role: more.role ?? null, user: more.user ?? null });
  return minted.key;
}

type Json = Record<string, any>;

/**
 * A message, its params or its result without the stream cursor the transport adds (decision 0050):
 * what the agent sent, for tests that compare it deep-equal. An emptied `_meta` goes too.
 */
export function withoutCursor(value: Json): Json {
  const strip = (v: Json): Json => {
    const { _meta: meta, ...rest } = v;
    if (!meta || typeof meta !== "object") return v;
    const { "acp/cursor": _cursor, ...others } = meta as Json;
    return Object.keys(others).length > 0 ? { ...rest, _meta: others } : rest;
  };
  const stripped = strip(value);
  return stripped.params && typeof stripped.params === "object" && !Array.isArray(stripped.params)
    ? { ...stripped, params: strip(stripped.params as Json) }
    : stripped;
}

/**
 * Messages received and not yet claimed, and the tests waiting for one: what arrives goes to the
 * first waiter it matches, or is kept for a later `next`. Shared by the WebSocket and SSE peers.
 */
export class Inbox {
  private readonly kept: Json[] = [];
  private readonly waiters: { match: (m: Json) => boolean; resolve: (m: Json) => void }[] = [];

  constructor(private readonly what: string) {}

  deliver(message: Json): void {
    const i = this.waiters.findIndex((w) => w.match(message));
    if (i >= 0) this.waiters.splice(i, 1)[0]?.resolve(message);
    else this.kept.push(message);
  }

  /** The next message (kept or future) that matches, or a rejection naming what did arrive. */
  next(match: (m: Json) => boolean, timeoutMs: number): Promise<Json> {
    const i = this.kept.findIndex(match);
    if (i >= 0) return Promise.resolve(this.kept.splice(i, 1)[0] as Json);
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
        reject(new Error(`no matching ${this.what} within ${timeoutMs} ms; unclaimed: ${JSON.stringify(this.kept).slice(0, 2000)}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Messages received and not yet claimed by `next`. */
  unclaimed(): Json[] {
    return [...this.kept];
  }
}

/** A JSON-RPC peer over one WebSocket: every frame is buffered, so `next` never misses one. */
export class Peer {
  private readonly inbox = new Inbox("message");
  readonly raw: string[] = [];
  private nextId = 0;
  readonly closed: Promise<{ code: number; reason: string }>;

  constructor(
    readonly ws: WebSocket,
    readonly response: Response,
  ) {
    ws.accept();
    this.closed = new Promise((resolve) => ws.addEventListener("close", (e) => resolve({ code: e.code, reason: e.reason })));
    ws.addEventListener("message", (e) => {
      const text = typeof e.data === "string" ? e.data : new TextDecoder().decode(e.data as ArrayBuffer);
      this.raw.push(text);
      this.inbox.deliver(JSON.parse(text) as Json);
    });
  }

  send(message: Json | string): void {
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  /** The next message (buffered or future) that matches, or a rejection naming what did arrive. */
  next(match: (m: Json) => boolean = () => true, timeoutMs = 5000): Promise<Json> {
    return this.inbox.next(match, timeoutMs);
  }

  /** Messages received and not yet claimed by `next`. */
  unclaimed(): Json[] {
    return this.inbox.unclaimed();
  }

  async request(method: string, params?: unknown, id: string | number = this.nextId++): Promise<Json> {
    this.send({ jsonrpc: "2.0", id, method, ...(params !== undefined ? { params } : {}) });
    return this.next((m) => m.id === id && !("method" in m));
  }

  notify(method: string, params?: unknown): void {
    this.send({ jsonrpc: "2.0", method, ...(params !== undefined ? { params } : {}) });
  }

  respond(id: unknown, result: unknown): void {
    this.send({ jsonrpc: "2.0", id, result });
  }

  close(): void {
    try {
      this.ws.close(1000, "done");
    } catch {
      // closed
    }
  }
}

/** A REST call to the gateway: with a key (or none), and a JSON body when one is given. */
export function api(path: string, key: string | undefined, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return SELF.fetch(`http://gateway.test${path}`, {
    method: init.method ?? "GET",
    headers: {
      ...(key ? { Authorization: `Bearer ${key}` } : {}),
      ...(init.body !== undefined ? { "Content-Type": "application/json" } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

/** The tenant's rule that allows `npm test` (through the API, as an admin would make it). */
export async function allowNpmTest(t: SeededTenant): Promise<void> {
  const response = await api("/v1/rules", t.adminKey, {
    method: "POST",
    body: { decision: "allow", matcher: { type: "command", prefix: ["npm", "test"] } },
  });
  expect(response.status).toBe(201);
}

export async function upgrade(path: string, key?: string, headers: Record<string, string> = {}): Promise<Response> {
  return SELF.fetch(`http://gateway.test${path}`, {
    headers: { Upgrade: "websocket", ...(key ? { Authorization: `Bearer ${key}` } : {}), ...headers },
  });
}

export async function connect(path: string, key?: string, headers: Record<string, string> = {}): Promise<Peer> {
  const response = await upgrade(path, key, headers);
  if (response.status !== 101 || !response.webSocket) {
    throw new Error(`upgrade of ${path} failed: ${response.status} ${await response.text()}`);
  }
  return new Peer(response.webSocket, response);
}

/** How the edge closes an agent's connection when the AgentObject behind it is lost (worker/agent-connection.ts). */
export const AGENT_OBJECT_LOST = { code: 1012, reason: expect.stringMatching(/agent connection restarted; reconnect/) };

export const isMethod = (method: string) => (m: Json) => m.method === method;
export const isResponseTo = (id: unknown) => (m: Json) => m.id === id && !("method" in m);

/** A scripted agent: dials in, answers initialize and session/new; the test drives the rest. */
export async function dialInAgent(t: SeededTenant, name = "scripted", capabilities: Json = {}): Promise<ScriptedAgent> {
  const peer = await connect(`/agents/${name}/connect`, t.agentKey);
  const init = await peer.next(isMethod("initialize"));
  peer.respond(init.id, {
    protocolVersion: 1,
    agentCapabilities: { loadSession: false, promptCapabilities: { image: true }, ...capabilities },
    agentInfo: { name: "scripted-agent", version: "1.0.0" },
    authMethods: [],
  });
  return new ScriptedAgent(peer, name);
}

export class ScriptedAgent {
  private sessionCounter = 0;
  constructor(
    readonly peer: Peer,
    readonly name: string,
  ) {}

  /** Answers the next session/new with a fresh session id (or the one given). */
  async acceptNewSession(sessionId = `sess-${++this.sessionCounter}-${crypto.randomUUID()}`): Promise<string> {
    const req = await this.peer.next(isMethod("session/new"));
    this.peer.respond(req.id, { sessionId, modes: { currentModeId: "code", availableModes: [{ id: "code", name: "Code" }] } });
    return sessionId;
  }

  update(sessionId: string, update: Json): void {
    this.peer.notify("session/update", { sessionId, update });
  }

  /** Sends session/request_permission under the agent's id and returns that id. */
  askPermission(
    sessionId: string,
    toolCall: Json,
    options: Json[] = DEFAULT_OPTIONS,
    id: number | string = `perm-${crypto.randomUUID()}`,
  ): number | string {
    this.peer.send({ jsonrpc: "2.0", id, method: "session/request_permission", params: { sessionId, toolCall, options } });
    return id;
  }
}

/** A client's answer choosing the default options' "allow". */
export const ALLOW = { outcome: { outcome: "selected", optionId: "allow" } };

export const DEFAULT_OPTIONS = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" },
  { optionId: "allow-always", name: "Always allow", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

/** A client connected to /acp, initialized, with a new session created through the scripted agent. */
export async function clientWithSession(t: SeededTenant, agent: ScriptedAgent, key = t.clientKey) {
  const client = await connect(`/acp?agent=${agent.name}`, key);
  const init = await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  if (init.error) throw new Error(JSON.stringify(init.error));
  const created = client.request("session/new", { cwd: "/projects/demo", mcpServers: [] });
  const sessionId = await agent.acceptNewSession();
  const response = await created;
  if (response.result?.sessionId !== sessionId) throw new Error(`session/new failed: ${JSON.stringify(response)}`);
  return { client, sessionId };
}

/** A turn started: the client's empty prompt (request `id`) has reached the agent, which has not answered it. */
export async function startTurn(client: Peer, agent: ScriptedAgent, sessionId: string, id = "turn"): Promise<Json> {
  client.send({ jsonrpc: "2.0", id, method: "session/prompt", params: { sessionId, prompt: [] } });
  return agent.peer.next(isMethod("session/prompt"));
}

/** A second client attached to an existing session with session/load. */
export async function attachClient(t: SeededTenant, agent: ScriptedAgent, sessionId: string, key = t.clientKey2) {
  const client = await connect(`/acp?agent=${agent.name}`, key);
  await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const loaded = await client.request("session/load", { sessionId, cwd: "/projects/demo", mcpServers: [] });
  if (loaded.error) throw new Error(JSON.stringify(loaded.error));
  return client;
}

/**
 * Proves absence without sleeping: a marker notification sent by the client after the message under
 * test travels the same ordered path (edge → session → agent object → agent); once the agent has the
 * marker, anything the earlier message caused has arrived already.
 */
export async function barrier(client: Peer, agent: ScriptedAgent, sessionId: string): Promise<void> {
  const marker = crypto.randomUUID();
  client.notify("_test/barrier", { sessionId, marker });
  await agent.peer.next((m) => m.method === "_test/barrier" && m.params?.marker === marker);
}
