// The Gemini API (what Gemini CLI calls at GOOGLE_GEMINI_BASE_URL): POST
// …/models/<model>:streamGenerateContent (server-sent events) or :generateContent, the script's
// reply as one text or functionCall part.

import type { ServerResponse } from "node:http";
import { type Conversation, type Reply, type ToolNames, reply } from "./script.ts";
import { type Handler, type ModelRequest, json, sse } from "./server.ts";

type Json = Record<string, any>;

function conversation(body: Json): Conversation {
  const contents = (body.contents ?? []) as Json[];
  const parts = (c: Json | undefined) => (c?.parts ?? []) as Json[];
  const lastUser = contents.findLast((c) => c.role === "user" && parts(c).some((p) => typeof p.text === "string"));
  return {
    lastUserText: parts(lastUser)
      .map((p) => (typeof p.text === "string" ? p.text : ""))
      .join("\n"),
    endsWithToolResult: parts(contents.at(-1)).some((p) => p.functionResponse),
    tools: ((body.tools ?? []) as Json[]).flatMap((t) => ((t.functionDeclarations ?? []) as Json[]).map((f) => String(f.name))),
  };
}

function response(answer: Reply): Json {
  const part =
    answer.kind === "text" ? { text: answer.text } : { functionCall: { id: answer.callId, name: answer.name, args: answer.input } };
  return {
    candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: "scripted",
  };
}

export function geminiModel(names: ToolNames, cwd: string): Handler {
  return (request: ModelRequest, res: ServerResponse) => {
    const path = request.path.split("?")[0] ?? "";
    if (path.endsWith(":countTokens")) return json(res, 200, { totalTokens: 10 });
    const streamed = path.endsWith(":streamGenerateContent");
    if (request.method !== "POST" || !(streamed || path.endsWith(":generateContent"))) {
      return json(res, 404, { error: { code: 404, message: `no ${request.method} ${path} here`, status: "NOT_FOUND" } });
    }
    const answer = reply(conversation(request.body as Json), names, cwd);
    if (streamed) return sse(res, [{ data: response(answer) }]);
    json(res, 200, response(answer));
  };
}
