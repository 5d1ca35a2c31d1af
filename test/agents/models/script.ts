// The scripted model every agent talks to, whatever its wire protocol: stateless, it reads the
// conversation it is sent. The person's prompt carries a directive — `RUN: <command>` or
// `WRITE: <path in the project> <content>` — and the model calls the agent's own shell or write tool with it; once the
// conversation ends in that tool's result (run, rejected or cancelled), it says "done". Requests
// without tools (titles, summaries the agents ask for on the side) get a short text.

import { join } from "node:path";

/** What the model answers: a call of one of the agent's tools, or text. */
export type Reply = { kind: "tool"; name: string; input: Record<string, unknown>; callId: string } | { kind: "text"; text: string };

/** How one agent names its shell and write tools and their arguments. */
export interface ToolNames {
  shell(command: string, cwd: string): { name: string; input: Record<string, unknown> };
  write(path: string, content: string): { name: string; input: Record<string, unknown> };
}

/** The conversation as every wire format reduces to it. */
export interface Conversation {
  /** The text of the last user message (its prompt blocks, system reminders and all). */
  lastUserText: string;
  /** Whether the conversation ends with a tool's result (the model's turn after its call). */
  endsWithToolResult: boolean;
  /** The tool names the agent offered, empty for side requests. */
  tools: string[];
}

const DIRECTIVE = /\b(RUN|WRITE): ([^\n]+?)(?:\s*$|\n)/gm;

let calls = 0;

export function reply(conversation: Conversation, names: ToolNames, cwd: string): Reply {
  if (conversation.tools.length === 0) return { kind: "text", text: "Scripted title" };
  if (conversation.endsWithToolResult) return { kind: "text", text: "done" };
  const found = [...conversation.lastUserText.matchAll(DIRECTIVE)].at(-1);
  if (!found) return { kind: "text", text: "done" };
  const [, verb, rest = ""] = found;
  const call =
    verb === "RUN"
      ? names.shell(rest.trim(), cwd)
      : names.write(join(cwd, rest.slice(0, rest.indexOf(" "))), rest.slice(rest.indexOf(" ") + 1));
  if (!conversation.tools.includes(call.name)) {
    return { kind: "text", text: `the agent offered no ${call.name} tool (it offered ${conversation.tools.join(", ")})` };
  }
  return { kind: "tool", ...call, callId: `call_scripted_${++calls}` };
}
