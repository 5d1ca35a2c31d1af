// OpenAI chat completions (what qwen-code calls at OPENAI_BASE_URL, and opencode through its
// OpenAI-compatible provider): POST …/chat/completions, streamed as `data:` chunks ending in [DONE]
// when asked, the script's reply as content or one tool call.

import type { ServerResponse } from "node:http";
import { type Conversation, type Reply, type ToolNames, reply } from "./script.ts";
import { type Handler, type ModelRequest, json, sse } from "./server.ts";

type Json = Record<string, any>;

function text(content: unknown): string {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? (content as Json[]).map((p) => (typeof p.text === "string" ? p.text : "")).join("\n") : "";
}

function conversation(body: Json): Conversation {
  const messages = ((body.messages ?? []) as Json[]).filter((m) => m.role !== "system");
  return {
    lastUserText: text(messages.findLast((m) => m.role === "user")?.content),
    endsWithToolResult: messages.at(-1)?.role === "tool",
    tools: ((body.tools ?? []) as Json[]).map((t) => String(t.function?.name ?? t.name)),
  };
}

function message(answer: Reply): Json {
  return answer.kind === "text"
    ? { role: "assistant", content: answer.text }
    : {
        role: "assistant",
        content: null,
        tool_calls: [
          { index: 0, id: answer.callId, type: "function", function: { name: answer.name, arguments: JSON.stringify(answer.input) } },
        ],
      };
}

function stream(res: ServerResponse, model: string, answer: Reply): void {
  const chunk = (delta: Json, finish: string | null, extra: Json = {}) => ({
    data: {
      id: "chatcmpl-scripted",
      object: "chat.completion.chunk",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    },
  });
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  sse(res, [chunk(message(answer), null), chunk({}, answer.kind === "tool" ? "tool_calls" : "stop", { usage })], "[DONE]");
}

export function openaiChatModel(names: ToolNames, cwd: string): Handler {
  return (request: ModelRequest, res: ServerResponse) => {
    const path = request.path.split("?")[0] ?? "";
    if (request.method === "GET" && path.endsWith("/models"))
      return json(res, 200, { object: "list", data: [{ id: "scripted", object: "model", owned_by: "test" }] });
    if (request.method !== "POST" || !path.endsWith("/chat/completions"))
      return json(res, 404, { error: { message: `no ${request.method} ${path} here` } });
    const body = request.body as Json;
    const answer = reply(conversation(body), names, cwd);
    const model = String(body.model ?? "scripted");
    if (body.stream) return stream(res, model, answer);
    json(res, 200, {
      id: "chatcmpl-scripted",
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message: message(answer), finish_reason: answer.kind === "tool" ? "tool_calls" : "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
  };
}
