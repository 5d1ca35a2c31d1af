// acp-gateway agent: a stdio ACP agent process on one side, the gateway's /agents/NAME/connect
// WebSocket on the other. Both are kept alive:
// - the process is restarted with backoff when it exits, and the socket reopened, so the gateway
//   initializes the new process (the old one's sessions are gone with it); one that keeps exiting
//   within seconds is reported as a crash loop and then given up on (crash-loop.ts);
// - the socket is reconnected with backoff when it drops; the process keeps its sessions, and the
//   gateway's new initialize is answered from the process's first answer (an agent may refuse a
//   second initialize).
// - while the socket is down the agent's output is buffered (bounded) and its requests are answered
//   at once, since nobody on the old connection can answer them any more (agent-outage.ts).

import { type ChildProcess, spawn } from "node:child_process";
import type { WebSocket } from "ws";
import { OutageBuffer, classify, unanswerable } from "./agent-outage.ts";
import { webSocketUrl } from "./args.ts";
import { connectWithRetry } from "./connect.ts";
import { CrashWatch, crashLoopMessage } from "./crash-loop.ts";
import { backoff, log, messageOf, readLines } from "./ndjson.ts";
import { CLOSE } from "../core/close-codes.ts";

export async function runAgent(opts: {
  url: URL;
  key: string;
  name: string;
  argv: string[];
  buffer?: { messages: number; bytes: number };
}): Promise<number> {
  const target = webSocketUrl(opts.url, `/agents/${encodeURIComponent(opts.name)}/connect`);
  let child: ChildProcess | undefined;
  let socket: WebSocket | undefined;
  let generation = 0;
  let everConnected = false;
  let stopping = false;
  /** The process's answer to its first initialize, replayed for the gateway's later ones. */
  let initializeResult: unknown;
  let initializeId: unknown;
  let childAttempts = 0;
  const crashes = new CrashWatch();
  /** The agent's requests sent on the current socket and not yet answered: method by JSON id. */
  const openRequests = new Map<string, { id: string | number; method: string }>();
  const outage = new OutageBuffer(opts.buffer);
  let finished: (code: number) => void = () => undefined;
  const done = new Promise<number>((resolve) => (finished = resolve));
  const stop = (code: number) => {
    stopping = true;
    socket?.close(CLOSE.normal, "bridge stopped");
    child?.kill("SIGTERM");
    finished(code);
  };
  process.once("SIGINT", () => stop(0));
  process.once("SIGTERM", () => stop(0));

  function startChild(): void {
    const [command, ...args] = opts.argv as [string, ...string[]];
    const started = Date.now();
    const proc = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
    child = proc;
    for (const text of waiting.splice(0)) proc.stdin?.write(`${text}\n`);
    proc.on("error", (error) => log(`cannot start ${command}: ${error.message}`));
    readLines(proc.stdout as NonNullable<ChildProcess["stdout"]>, (line) => onAgentLine(line));
    proc.on("exit", (code, signal) => {
      if (child !== proc || stopping) return;
      child = undefined;
      initializeResult = undefined; // the next process answers its own initialize
      openRequests.clear(); // nobody is left to answer
      const lived = Date.now() - started;
      if (lived > 30_000) childAttempts = 0;
      // A process that keeps dying at once is reported, then given up on, so the gateway shows the agent offline.
      const crash = crashes.exited(lived);
      if (crash.verdict !== "restart") log(crashLoopMessage(opts.argv, crash.quickExits, String(signal ?? code)));
      if (crash.verdict === "give-up") {
        log(`stopping after ${crash.quickExits} quick exits in a row; fix the agent's command and start again`);
        stop(1);
        return;
      }
      const wait = backoff(childAttempts++);
      log(`the agent process exited (${signal ?? code}); restarting it in ${wait} ms`);
      // The gateway must initialize the new process: reopen the socket after the restart.
      socket?.close(CLOSE.serviceRestart, "agent process restarting");
      setTimeout(() => {
        if (stopping) return;
        startChild();
      }, wait);
    });
  }

  function onAgentLine(line: string): void {
    const message = messageOf(line);
    if (message && initializeResult === undefined && message.id !== undefined && message.id === initializeId && "result" in message) {
      initializeResult = message.result;
    }
    const parsed = classify(line);
    if (socket && socket.readyState === socket.OPEN) {
      if (parsed.kind === "request") openRequests.set(JSON.stringify(parsed.id), { id: parsed.id, method: parsed.method });
      socket.send(line);
      return;
    }
    if (parsed.kind === "request") answerUnanswerable(parsed.id, parsed.method);
    else if (parsed.kind === "notification") outage.push(line, parsed.sessionId);
    // an answer to a request of the old connection: the gateway would drop it
  }

  /** Tells the agent that one of its requests will never be answered, so it does not wait for ever. */
  function answerUnanswerable(id: string | number, method: string): void {
    const how = method === "session/request_permission" ? "cancelled" : "with an error";
    log(`answered the agent's ${method} (${JSON.stringify(id)}) ${how}: the connection to the gateway is down`);
    child?.stdin?.write(`${unanswerable(id, method)}\n`);
  }

  function onGatewayFrame(text: string): void {
    const message = messageOf(text);
    if (message && message.method === undefined && message.id !== undefined) openRequests.delete(JSON.stringify(message.id));
    if (message?.method === "initialize") {
      if (initializeResult !== undefined) {
        socket?.send(JSON.stringify({ jsonrpc: "2.0", id: message.id, result: initializeResult }));
        return;
      }
      initializeId = message.id;
    }
    if (child?.stdin) child.stdin.write(`${text}\n`);
    else waiting.push(text); // the process is restarting: it gets these when it is back
  }
  const waiting: string[] = [];

  async function connect(): Promise<void> {
    const result = await connectWithRetry(target, opts.key, { everConnected, keepTrying: () => !stopping });
    if (!result.ok) {
      stop(result.exitCode);
      return;
    }
    const gen = ++generation;
    socket = result.socket;
    log(`agent "${opts.name}" connected to ${target}`);
    everConnected = true;
    socket.on("message", (data) => onGatewayFrame(String(data)));
    const kept = outage.size;
    const lost = outage.droppedCount();
    for (const text of outage.drain()) socket.send(text);
    if (kept + lost > 0)
      log(`sent ${kept} message(s) of the agent kept while disconnected${lost ? `; ${lost} were dropped (buffer full)` : ""}`);
    socket.on("close", (code, reason) => {
      if (gen !== generation || stopping) return;
      socket = undefined;
      // The gateway withdrew what the agent asked on this connection: answer it, or the agent waits for ever.
      for (const open of [...openRequests.values()]) answerUnanswerable(open.id, open.method);
      openRequests.clear();
      if (code === CLOSE.credentialsRevoked) {
        log(`the gateway closed the connection: ${reason.toString() || "the key was revoked"}`);
        stop(2);
        return;
      }
      if (code === CLOSE.replaced) {
        log(`another connection took over the agent name "${opts.name}"; stopping`);
        stop(1);
        return;
      }
      log(`the connection to the gateway dropped (${code}); reconnecting`);
      void connect();
    });
  }

  startChild();
  await connect();
  return done;
}
