// acp-gateway client: the editor's stdio on one side, the gateway's /acp WebSocket on the other.
// Frames pass as they are, except in three places where the bridge must act for the editor:
// - ids of requests the gateway sends to the editor are the bridge's own, so a reconnected socket
//   (whose ids start again) never answers the wrong dialog;
// - when the socket drops, requests in flight get an error and open dialogs are withdrawn;
// - after reconnecting it first resumes each session's stream where it left off (`stream/resume` with
//   the last cursor it saw of each, decision 0050): the gateway sends only what was missed, the
//   requests still waiting, and the answers to the editor's session requests that were in flight
//   (which therefore wait instead of failing). A session it cannot resume (the gateway no longer holds
//   the stream) falls back to session/load: the gateway replays the session's log in order, and the
//   bridge skips as many replayed frames as it had delivered (and the echo of this editor's own
//   prompts, which it never delivered), passes on the rest, then the permission requests still waiting.

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
  /** The last stream cursor seen on a frame of this session (`_meta["acp/cursor"]`): where a resume starts. */
  cursor?: string;
}

/** Requests the gateway's edge answers itself: their answers are not in any session's stream, so a drop fails them. */
const EDGE_ANSWERED = new Set([
  "initialize",
  "authenticate",
  "logout",
  "session/new",
  "session/load",
  "session/resume",
  "session/list",
  "session/close",
  "session/attach",
  "session/detach",
]);

const INTERNAL = "acp-gateway-cli:";
/** How long a bridge that cannot connect waits for the editor's first request, to answer it with the reason. */
const FIRST_REQUEST_WAIT_MS = 5_000;

export async function runClient(opts: { url: URL; key: string; agent: string | undefined }): Promise<number> {
  const target = webSocketUrl(opts.url, "/acp", { agent: opts.agent });
  const toEditor = (message: Json) => process.stdout.write(`${JSON.stringify(message)}\n`);

  let socket: WebSocket | undefined;
  let generation = 0;
  let everConnected = false;
  /** The connection the gateway knows this bridge as: the first socket's, kept by every resume. */
  let connectionId: string | null = null;
  /** The current socket's own connection id: what the bridge is known as when a resume fails. */
  let socketConnectionId: string | null = null;
  /** While a resume is under way: the editor's messages wait for its answer (the resume must be the socket's first frame). */
  let resuming = false;
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
    if (socket && socket.readyState === socket.OPEN && !resuming) socket.send(text);
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
    if (message.method === "stream/resumed" || message.method === "stream/resume_failed") {
      // The transport's own word, for this bridge: the editor did not ask to resume anything.
      if (message.method === "stream/resume_failed")
        log(`session ${message.params?.sessionId} could not be resumed (${message.params?.reason}); loading it again`);
      return;
    }
    if (message.method === undefined && message.id !== undefined && message.id !== null) {
      const key = JSON.stringify(message.id);
      const request = inflight.get(key);
      noteCursor(request?.params?.sessionId, message._meta);
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
    noteCursor(sessionId, message.params?._meta);
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

  /** The newest cursor of a session's stream, from a frame of it (`_meta` of its params, or of a response's envelope). */
  function noteCursor(sessionId: unknown, meta: unknown): void {
    const session = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    const cursor = meta && typeof meta === "object" ? (meta as Json)["acp/cursor"] : undefined;
    if (session && typeof cursor === "string") session.cursor = cursor;
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
    if (kind === "resume") return resumeAnswered(message);
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
    socketConnectionId = result.connectionId;
    log(`connected to ${target}${everConnected ? " again" : ""}`);
    socket.on("message", (data) => onGatewayFrame(String(data), gen));
    socket.on("close", (code, reason) => onClosed(gen, code, reason.toString()));
    const resumable = everConnected ? streamsToResume() : {};
    if (connectionId !== null && Object.keys(resumable).length > 0) {
      resuming = true;
      socket.send(
        JSON.stringify({ jsonrpc: "2.0", id: `${INTERNAL}resume`, method: "stream/resume", params: { connectionId, streams: resumable } }),
      );
    } else {
      connectionId = result.connectionId;
      if (everConnected) reattach();
      flushToGateway();
    }
    everConnected = true;
  }

  function flushToGateway(): void {
    for (const text of pendingToGateway.splice(0)) socket?.send(text);
  }

  /** Each session's last cursor, for the sessions whose stream can be resumed. */
  function streamsToResume(): Record<string, string> {
    const streams: Record<string, string> = {};
    for (const [sessionId, session] of sessions) if (session.cursor !== undefined) streams[sessionId] = session.cursor;
    return streams;
  }

  /**
   * The resume's answer: the socket goes on as the old connection for the sessions resumed (their
   * missed frames came, or come, with their cursors: all new to the editor). The others are loaded
   * again; with none resumed, the socket is a new connection and initializes first.
   */
  function resumeAnswered(message: Json): void {
    resuming = false;
    const resumed = new Set<string>(Array.isArray(message.result?.resumed) ? message.result.resumed : []);
    if (resumed.size > 0 && typeof message.result?.connectionId === "string") {
      log(`resumed ${resumed.size} session stream${resumed.size === 1 ? "" : "s"} without a replay`);
      reattach((sessionId) => !resumed.has(sessionId), false);
    } else {
      log(`the gateway could not resume: ${message.error?.message ?? "no stream resumed"}; loading the sessions again`);
      connectionId = socketConnectionId;
      reattach(() => true, true);
    }
    failInflight((request) => !(typeof request.params.sessionId === "string" && resumed.has(request.params.sessionId)));
    flushToGateway();
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
    // Nothing waits forever: requests whose answer no resume can bring fail now (the rest once the
    // resume says whether their session's stream came back); dialogs of the old connection close.
    const streams = streamsToResume();
    resuming = false;
    failInflight(
      (request) =>
        EDGE_ANSWERED.has(request.method) || typeof request.params.sessionId !== "string" || !(request.params.sessionId in streams),
    );
    for (const [editorId, r] of toEditorRequests) {
      if (r.generation !== gen) continue;
      toEditorRequests.delete(editorId);
      toEditor({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: editorId } });
    }
    byGatewayId.clear();
    void connect();
  }

  function failInflight(which: (request: { id: Id; method: string; params: Json }) => boolean): void {
    for (const [key, request] of inflight) {
      if (!which(request)) continue;
      inflight.delete(key);
      toEditor({
        jsonrpc: "2.0",
        id: request.id,
        error: {
          code: ErrorCode.internalError,
          message: `The connection to the gateway dropped while ${request.method} was in flight; the bridge is reconnecting`,
        },
      });
    }
  }

  /** Loads again the sessions `which` names (after initialize, for a socket that is a new connection). */
  function reattach(which: (sessionId: string) => boolean = () => true, initialize = true): void {
    if (initialize && initParams)
      socket?.send(JSON.stringify({ jsonrpc: "2.0", id: `${INTERNAL}init`, method: "initialize", params: initParams }));
    for (const [sessionId, session] of sessions) {
      if (!which(sessionId)) continue;
      session.cursor = undefined; // a load opens a new stream: its cursors come with its frames
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
