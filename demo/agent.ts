#!/usr/bin/env node
// The demo agent that `npm start` connects through `acp-gateway agent`: a stdio ACP agent built with
// the SDK that streams text, runs tool calls of several kinds (read; edit with a diff; execute) and
// asks permission for the edit and the command. It does nothing for real: it only tells. It works in
// the session's project (its cwd), so an "always" a person gives there makes a rule that applies.

import { posix } from "node:path";
import { Readable, Writable } from "node:stream";
import { PROTOCOL_VERSION, agent, ndJsonStream } from "@agentclientprotocol/sdk";

type Notify = (method: string, params: unknown) => Promise<void>;
type Ask = (method: string, params: unknown) => Promise<unknown>;

const turns = new Map<string, AbortController>();
/** Each session's project directory (session/new's cwd). */
const projects = new Map<string, string>();
let counter = 0;

const app = agent({ name: "acp-gateway-demo" })
  .onRequest("initialize", () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false, promptCapabilities: { image: false, audio: false, embeddedContext: true } },
    agentInfo: { name: "acp-gateway-demo", title: "ACP Gateway demo agent", version: "0.1.0" },
    authMethods: [],
  }))
  .onRequest("session/new", ({ params }) => {
    const sessionId = `demo-${Date.now().toString(36)}-${(counter++).toString(36)}`;
    projects.set(sessionId, params.cwd);
    return { sessionId };
  })
  .onRequest("authenticate", () => ({}))
  .onNotification("session/cancel", ({ params }) => {
    turns.get(params.sessionId)?.abort();
  })
  .onRequest("session/prompt", async ({ params, client }) => {
    const controller = new AbortController();
    turns.set(params.sessionId, controller);
    const notify: Notify = (method, p) => client.notify(method, p);
    const ask: Ask = (method, p) => client.request(method, p);
    try {
      const readme = posix.join(projects.get(params.sessionId) ?? "/projects/demo", "README.md");
      const stop = await turn(params.sessionId, promptText(params.prompt), readme, controller.signal, notify, ask);
      return { stopReason: stop };
    } finally {
      turns.delete(params.sessionId);
    }
  });

app.connect(
  ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>),
);

function promptText(prompt: unknown): string {
  if (!Array.isArray(prompt)) return "";
  return prompt.map((b) => (b && typeof b === "object" && "text" in b ? String(b.text) : "")).join(" ");
}

async function turn(
  sessionId: string,
  text: string,
  readme: string,
  signal: AbortSignal,
  notify: Notify,
  ask: Ask,
): Promise<"end_turn" | "cancelled"> {
  const update = (u: Record<string, unknown>) => notify("session/update", { sessionId, update: u });
  const say = (t: string) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
  const id = () => `call-${Date.now().toString(36)}-${(counter++).toString(36)}`;

  for (const word of `You asked: "${text || "nothing"}". Let me look at the project first.`.split(/(?<= )/)) await say(word);

  const read = id();
  await update({
    sessionUpdate: "tool_call",
    toolCallId: read,
    title: "Read README.md",
    kind: "read",
    status: "pending",
    locations: [{ path: readme }],
    rawInput: { path: readme },
  });
  await update({ sessionUpdate: "tool_call_update", toolCallId: read, status: "in_progress" });
  await update({
    sessionUpdate: "tool_call_update",
    toolCallId: read,
    status: "completed",
    content: [{ type: "content", content: { type: "text", text: "# Demo\nA demo project." } }],
  });
  if (signal.aborted) return "cancelled";

  const edit = id();
  const diff = {
    type: "diff",
    path: readme,
    oldText: "# Demo\nA demo project.",
    newText: "# Demo\nA demo project, edited through the gateway.",
  };
  const editCall = {
    toolCallId: edit,
    title: "Edit README.md",
    kind: "edit",
    status: "pending",
    locations: [{ path: readme, line: 2 }],
    content: [diff],
    rawInput: { path: readme },
  };
  await update({ sessionUpdate: "tool_call", ...editCall });
  const editAnswer = await askPermission(ask, sessionId, editCall, "this file");
  if (signal.aborted || editAnswer === "cancelled") return "cancelled";
  await update({ sessionUpdate: "tool_call_update", toolCallId: edit, status: editAnswer === "allowed" ? "completed" : "failed" });

  const run = id();
  const runCall = { toolCallId: run, title: "Run the tests", kind: "execute", status: "pending", rawInput: { command: "npm test" } };
  await update({ sessionUpdate: "tool_call", ...runCall });
  const runAnswer = await askPermission(ask, sessionId, runCall, "`npm test`");
  if (signal.aborted || runAnswer === "cancelled") return "cancelled";
  if (runAnswer === "allowed") {
    await update({ sessionUpdate: "tool_call_update", toolCallId: run, status: "in_progress" });
    await update({
      sessionUpdate: "tool_call_update",
      toolCallId: run,
      status: "completed",
      rawOutput: { exitCode: 0, stdout: "1 passed" },
      content: [{ type: "content", content: { type: "text", text: "1 passed" } }],
    });
  } else {
    await update({ sessionUpdate: "tool_call_update", toolCallId: run, status: "failed" });
  }
  await say(runAnswer === "allowed" ? " All done: the tests pass." : " Understood, I did not run the tests.");
  return "end_turn";
}

async function askPermission(
  ask: Ask,
  sessionId: string,
  toolCall: Record<string, unknown>,
  what: string,
): Promise<"allowed" | "rejected" | "cancelled"> {
  const answer = (await ask("session/request_permission", {
    sessionId,
    toolCall,
    options: [
      { optionId: "allow-once", name: "Allow once", kind: "allow_once" },
      { optionId: "allow-always", name: `Always allow ${what}`, kind: "allow_always" },
      { optionId: "reject-once", name: "Reject", kind: "reject_once" },
      { optionId: "reject-always", name: `Always reject ${what}`, kind: "reject_always" },
    ],
  })) as { outcome?: { outcome?: string; optionId?: string } };
  const outcome = answer.outcome;
  if (outcome?.outcome !== "selected") return "cancelled";
  // Acting on the kind of the option chosen, never its name; an unknown id is not approval.
  if (outcome.optionId === "allow-once" || outcome.optionId === "allow-always") return "allowed";
  return "rejected";
}
