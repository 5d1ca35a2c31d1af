// OpenAI Responses API (what codex calls at its model provider's base_url): POST …/responses,
// streamed as named server-sent events, the script's reply as one message or one tool call — a
// function call, or a custom (freeform) call for tools codex declares that way (apply_patch).

import type { ServerResponse } from "node:http";
import { type Conversation, type Reply, type ToolNames, reply } from "./script.ts";
import { type Handler, type ModelRequest, json, sse } from "./server.ts";

type Json = Record<string, any>;

function conversation(body: Json): Conversation {
  const input: Json[] = typeof body.input === "string" ? [{ type: "message", role: "user", content: body.input }] : (body.input ?? []);
  const last = input.findLast((i) => i.role === "user");
  const content: Json[] = typeof last?.content === "string" ? [{ text: last.content }] : (last?.content ?? []);
  const end = input.filter((i) => i.role !== "system" && i.role !== "developer").at(-1);
  return {
    lastUserText: content.map((c) => (typeof c.text === "string" ? c.text : "")).join("\n"),
    endsWithToolResult: end?.type === "function_call_output" || end?.type === "custom_tool_call_output",
    tools: ((body.tools ?? []) as Json[]).map((t) => String(t.name ?? t.type)),
  };
}

function outputItem(answer: Reply, tools: Json[]): Json {
  if (answer.kind === "text") {
    return {
      type: "message",
      id: "msg_scripted",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: answer.text, annotations: [] }],
    };
  }
  const custom = tools.find((t) => t.name === answer.name)?.type === "custom";
  return custom
    ? {
        type: "custom_tool_call",
        id: `ctc_${answer.callId}`,
        call_id: answer.callId,
        name: answer.name,
        input: String(answer.input.input),
        status: "completed",
      }
    : {
        type: "function_call",
        id: `fc_${answer.callId}`,
        call_id: answer.callId,
        name: answer.name,
        arguments: JSON.stringify(answer.input),
        status: "completed",
      };
}

export function openaiResponsesModel(names: ToolNames, cwd: string): Handler {
  return (request: ModelRequest, res: ServerResponse) => {
    const path = request.path.split("?")[0] ?? "";
    if (request.method === "GET" && path.endsWith("/models"))
      return json(res, 200, { object: "list", data: [{ id: "scripted", object: "model" }], models: [] });
    if (request.method !== "POST" || !path.endsWith("/responses"))
      return json(res, 404, { error: { message: `no ${request.method} ${path} here` } });
    const body = request.body as Json;
    const answer = reply(conversation(body), names, cwd);
    const item = outputItem(answer, (body.tools ?? []) as Json[]);
    const id = `resp_${Date.now()}`;
    const usage = {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 15,
    };
    const base = { id, object: "response", created_at: Math.floor(Date.now() / 1000), model: String(body.model ?? "scripted") };
    const events: { event: string; data: Json }[] = [
      { event: "response.created", data: { type: "response.created", response: { ...base, status: "in_progress", output: [] } } },
      {
        event: "response.output_item.added",
        data: { type: "response.output_item.added", output_index: 0, item: { ...item, status: "in_progress" } },
      },
    ];
    if (answer.kind === "text") {
      events.push({
        event: "response.output_text.delta",
        data: { type: "response.output_text.delta", item_id: item.id, output_index: 0, content_index: 0, delta: answer.text },
      });
    }
    events.push(
      { event: "response.output_item.done", data: { type: "response.output_item.done", output_index: 0, item } },
      {
        event: "response.completed",
        data: { type: "response.completed", response: { ...base, status: "completed", output: [item], usage } },
      },
    );
    if (body.stream === false) return json(res, 200, { ...base, status: "completed", output: [item], usage });
    sse(res, events);
  };
}
