// Anthropic Messages API (what Claude Code calls at ANTHROPIC_BASE_URL): POST /v1/messages, streamed
// as server-sent events when asked, the script's reply as one text or tool_use block.

import type { ServerResponse } from "node:http";
import { type Conversation, type Reply, type ToolNames, reply } from "./script.ts";
import { type Handler, type ModelRequest, json, sse } from "./server.ts";

type Json = Record<string, any>;

function conversation(body: Json): Conversation {
  const messages = (body.messages ?? []) as Json[];
  // Claude Code may put a system message after the person's (its environment): read the last user one.
  const last = messages.findLast((m) => m.role === "user");
  const blocks: Json[] = typeof last?.content === "string" ? [{ type: "text", text: last.content }] : (last?.content ?? []);
  return {
    lastUserText: blocks.map((b) => (b.type === "text" ? b.text : "")).join("\n"),
    // A cancelled turn's tool result and the next prompt share one user message: the prompt after it is new work.
    endsWithToolResult:
      blocks.findLastIndex((b) => b.type === "tool_result") >
      blocks.findLastIndex((b) => b.type === "text" && /\b(RUN|WRITE): /.test(String(b.text))),
    tools: ((body.tools ?? []) as Json[]).map((t) => String(t.name)),
  };
}

function contentBlock(answer: Reply): Json {
  return answer.kind === "text"
    ? { type: "text", text: answer.text }
    : { type: "tool_use", id: answer.callId, name: answer.name, input: answer.input };
}

function stream(res: ServerResponse, model: string, answer: Reply): void {
  const start = answer.kind === "text" ? { type: "text", text: "" } : { type: "tool_use", id: answer.callId, name: answer.name, input: {} };
  const delta =
    answer.kind === "text"
      ? { type: "text_delta", text: answer.text }
      : { type: "input_json_delta", partial_json: JSON.stringify(answer.input) };
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  sse(res, [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id: `msg_${Date.now()}`,
          type: "message",
          role: "assistant",
          content: [],
          model,
          stop_reason: null,
          stop_sequence: null,
          usage,
        },
      },
    },
    { event: "content_block_start", data: { type: "content_block_start", index: 0, content_block: start } },
    { event: "content_block_delta", data: { type: "content_block_delta", index: 0, delta } },
    { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } },
    {
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: answer.kind === "tool" ? "tool_use" : "end_turn", stop_sequence: null },
        usage: { output_tokens: 5 },
      },
    },
    { event: "message_stop", data: { type: "message_stop" } },
  ]);
}

export function anthropicModel(names: ToolNames, cwd: string): Handler {
  return (request: ModelRequest, res: ServerResponse) => {
    const path = request.path.split("?")[0] ?? "";
    if (request.method !== "POST" || !path.endsWith("/v1/messages")) {
      if (path.endsWith("/count_tokens")) return json(res, 200, { input_tokens: 10 });
      return json(res, 404, { type: "error", error: { type: "not_found_error", message: `no ${request.method} ${path} here` } });
    }
    const body = request.body as Json;
    const answer = reply(conversation(body), names, cwd);
    const model = String(body.model ?? "claude-scripted");
    if (body.stream) return stream(res, model, answer);
    json(res, 200, {
      id: `msg_${Date.now()}`,
      type: "message",
      role: "assistant",
      model,
      content: [contentBlock(answer)],
      stop_reason: answer.kind === "tool" ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5 },
    });
  };
}
