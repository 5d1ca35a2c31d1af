// acp-gateway client: the editor's stdio on one side, the gateway's /acp WebSocket on the other.
// Frames pass as they are, except in three places where the bridge must act for the editor:
// - ids of requests the gateway sends to the editor are the bridge's own, so a reconnected socket
//   (whose ids start again) never answers the wrong dialog;
// - when the socket drops, requests in flight get an error and open dialogs are withdrawn;
// - after reconnecting it initializes again and re-attaches every session with session/load. The
//   gateway replays each session's log in order; the bridge skips as many replayed frames as it had
//   delivered (and the echo of this editor's own prompts, which it never delivered), passes on the
//   rest — what was missed — and then the permission requests still waiting.

import type { WebSocket } from "ws";
import { webSocketUrl } from "./args.ts";
import { explainAgentError } from "./agent-names.ts";
import { connectWithRetry } from "./connect.ts";
import { log, readLines } from "./ndjson.ts";
import { CLOSE } from "../core/close-codes.ts";
import { ErrorCode } from "../core/rpc-errors.ts";

type Json = Record<string, any>;
type Id = string | number;

interface SessionState {
  /** What session/load needs again. */
  cwd: string;
  mcpServers: unknown[];
  /** Replayable frames (session/update and agent extension notifications) delivered to the editor. */
  delivered: number;
  /** While re-attaching: how many replayed frames are still to be skipped. */
  skipping: number;
}

const INTERNAL = "acp-gateway-cli:";
/** How long a bridge that cannot connect waits for the editor's first request, to answer it with the reason. */
const FIRST_REQUEST_WAIT_MS = 5_000;

export async function runClient(opts: { url: URL; key: string; agent: string | undefined }): Promise<number> {
  const target = webSocketUrl(opts.url, "/acp", { agent: opts.agent });
  const toEditor = (message: Json) => process.stdout.write(`${JSON.stringify(message)}\n`);

  let socket: WebSocket | undefined;
  let generation = 0;
  let everConnected = false;
  let initParams: Json | undefined;
  const pendingToGateway: string[] = [];
  const sessions = new Map<string, SessionState>();
  /** Editor requests awaiting the gateway's answer: id → method and params. */
  const inflight = new Map<string, { id: Id; method: string; params: Json }>();
  /** Requests the gateway sent to the editor: the bridge's id → the gateway's id on that connection. */
  const toEditorRequests = new Map<number, { generation: number; gatewayId: Id }>();
  const byGatewayId = new Map<string, number>();
  let nextEditorId = 1;
  /** This bridge's connection ids: the gateway marks the echo of our own prompts with them. */
  const ownConnections = new Set<string>();
  let finished: (code: number) => void = () => undefined;
  const done = new Promise<number>((resolve) => (finished = resolve));
  let stdinEnded = false;
  /** Called when the editor sends a request (refuseEditor waits for the first one). */
  let onEditorRequest: () => void = () => undefined;

  const send = (text: string) => {
    if (socket && socket.readyState === socket.OPEN) socket.send(text);
    else pendingToGateway.push(text);
  };

  // ── from the editor ───────────────────────────────────────────────────────────────────────────
  readLines(process.stdin, (line) => {
    let message: Json;
    try {
      message = JSON.parse(line) as Json;
    } catch {
      send(line); // the gateway answers malformed JSON itself
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      inflight.set(JSON.stringify(message.id), { id: message.id, method: message.method, params: message.params ?? {} });
      onEditorRequest();
      if (message.method === "initialize") initParams = message.params;
      if (message.method === "session/load" && typeof message.params?.sessionId === "string")
        track(message.params.sessionId, message.params);
    } else if (message.method === undefined && message.id !== undefined) {
      // The editor answers one of the gateway's requests: give it back the gateway's id.
      const mine = typeof message.id === "number" ? toEditorRequests.get(message.id) : undefined;
      if (!mine) return;
      toEditorRequests.delete(message.id);
      byGatewayId.delete(`${mine.generation}:${JSON.stringify(mine.gatewayId)}`);
      if (mine.generation !== generation) return; // meant for a connection that is gone
      send(JSON.stringify({ ...message, id: mine.gatewayId }));
      return;
    } else if (message.method === "$/cancel_request") {
      // Ids of editor requests are passed through unchanged, so their cancellation is too.
    }
    send(line);
  });
  // The editor closed its side: done, once the first connection attempt has had its say (a refused key is still exit 2).
  process.stdin.on("end", () => {
    stdinEnded = true;
    void firstAttempt.then(() => finished(0));
  });
  let firstAttempt: Promise<void> = Promise.resolve();

  function track(sessionId: string, params: Json): void {
    if (!sessions.has(sessionId)) {
      sessions.set(sessionId, {
        cwd: typeof params.cwd === "string" ? params.cwd : "/",
        mcpServers: Array.isArray(params.mcpServers) ? params.mcpServers : [],
        delivered: 0,
        skipping: 0,
      });
    }
  }

  // ── from the gateway ──────────────────────────────────────────────────────────────────────────
  function onGatewayFrame(text: string, gen: number): void {
    const message = JSON.parse(text) as Json;
    if (typeof message.id === "string" && message.id.startsWith(INTERNAL) && message.method === undefined) {
      onInternalAnswer(message);
      return;
    }
    if (message.method === undefined && message.id !== undefined && message.id !== null) {
      const key = JSON.stringify(message.id);
      const request = inflight.get(key);
      inflight.delete(key);
      if (request?.method === "session/new" && typeof message.result?.sessionId === "string")
        track(message.result.sessionId, request.params);
      if (message.error?.data?.reason === "agent_not_connected" && opts.agent !== undefined) {
        const agent = opts.agent;
        void explainAgentError(opts.url, opts.key, agent, message.error as Json).then((error) => toEditor({ ...message, error }));
        return;
      }
      toEditor(message);
      return;
    }
    if (message.method !== undefined && message.id !== undefined) {
      const editorId = nextEditorId++;
      toEditorRequests.set(editorId, { generation: gen, gatewayId: message.id });
      byGatewayId.set(`${gen}:${JSON.stringify(message.id)}`, editorId);
      toEditor({ ...message, id: editorId });
      return;
    }
    if (message.method === "$/cancel_request") {
      const editorId = byGatewayId.get(`${gen}:${JSON.stringify(message.params?.requestId)}`);
      if (editorId === undefined) return;
      byGatewayId.delete(`${gen}:${JSON.stringify(message.params?.requestId)}`);
      toEditorRequests.delete(editorId);
      toEditor({ ...message, params: { ...message.params, requestId: editorId } });
      return;
    }
    const sessionId = message.params?.sessionId;
    const session = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    if (session && isReplayable(message)) {
      if (isOwnEcho(message)) return; // the editor shows its own prompt already
      if (session.skipping > 0) {
        session.skipping -= 1;
        return;
      }
      session.delivered += 1;
    }
    toEditor(message);
  }

  function isReplayable(message: Json): boolean {
    return (
      typeof message.method === "string" &&
      (message.method === "session/update" || (message.method.startsWith("_") && !message.method.startsWith("_acp_gateway/")))
    );
  }

  function isOwnEcho(message: Json): boolean {
    const meta = message.params?._meta?.acpGateway;
    return meta?.synthesized === true && ownConnections.has(meta.connectionId);
  }

  function onInternalAnswer(message: Json): void {
    const [, kind, sessionId] = String(message.id).split(":");
    if (kind === "load" && sessionId) {
      const session = sessions.get(sessionId);
      if (session) session.skipping = 0;
      if (message.error) log(`re-attaching session ${sessionId} failed: ${message.error.message}`);
    }
  }

  // ── the connection ────────────────────────────────────────────────────────────────────────────
  async function connect(): Promise<void> {
    const result = await connectWithRetry(target, opts.key, { everConnected });
    if (!result.ok) {
      await refuseEditor(result.exitCode === 2 ? ErrorCode.authRequired : ErrorCode.internalError, result.message);
      finished(result.exitCode);
      return;
    }
    generation += 1;
    const gen = generation;
    socket = result.socket;
    if (result.connectionId) ownConnections.add(result.connectionId);
    log(`connected to ${target}${everConnected ? " again" : ""}`);
    socket.on("message", (data) => onGatewayFrame(String(data), gen));
    socket.on("close", (code, reason) => onClosed(gen, code, reason.toString()));
    if (everConnected) reattach();
    everConnected = true;
    for (const text of pendingToGateway.splice(0)) socket.send(text);
  }

  /**
   * The bridge cannot serve the editor (a refused key, a gateway never reached): answer what the editor
   * asked with an error naming why, so it shows the reason instead of waiting on a process that exits.
   * An editor that has not sent its first request yet gets a moment to send it.
   */
  async function refuseEditor(code: number, message: string): Promise<void> {
    if (inflight.size === 0 && !stdinEnded) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FIRST_REQUEST_WAIT_MS);
        onEditorRequest = () => {
          clearTimeout(timer);
          resolve();
        };
        process.stdin.once("end", () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    for (const request of inflight.values()) {
      toEditor({ jsonrpc: "2.0", id: request.id, error: { code, message: `acp-gateway client: ${message}` } });
    }
    inflight.clear();
  }

  function onClosed(gen: number, code: number, reason: string): void {
    if (gen !== generation) return;
    socket = undefined;
    if (code === CLOSE.credentialsRevoked) {
      log(`the gateway closed the connection: ${reason || "the key was revoked"}`);
      finished(2);
      return;
    }
    log(`the connection to the gateway dropped (${code}${reason ? ` ${reason}` : ""}); reconnecting`);
    // Nothing waits forever: requests in flight fail, dialogs of the old connection close.
    for (const request of inflight.values()) {
      toEditor({
        jsonrpc: "2.0",
        id: request.id,
        error: {
          code: ErrorCode.internalError,
          message: `The connection to the gateway dropped while ${request.method} was in flight; the bridge is reconnecting`,
        },
      });
    }
    inflight.clear();
    for (const [editorId, r] of toEditorRequests) {
      if (r.generation !== gen) continue;
      toEditorRequests.delete(editorId);
      toEditor({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: editorId } });
    }
    byGatewayId.clear();
    void connect();
  }

  function reattach(): void {
    if (initParams) socket?.send(JSON.stringify({ jsonrpc: "2.0", id: `${INTERNAL}init`, method: "initialize", params: initParams }));
    for (const [sessionId, session] of sessions) {
      session.skipping = session.delivered;
      socket?.send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: `${INTERNAL}load:${sessionId}`,
          method: "session/load",
          params: { sessionId, cwd: session.cwd, mcpServers: session.mcpServers },
        }),
      );
    }
  }

  firstAttempt = connect();
  await firstAttempt;
  const code = await done;
  socket?.close(CLOSE.normal, "bridge stopped");
  return code;
}
