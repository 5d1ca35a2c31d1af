// Claude Code through claude-agent-acp: the tool's name is `_meta.claudeCode.toolName` (and `name`
// from 0.101). Bash takes a script; `dangerouslyDisableSandbox: true` runs it outside the sandbox and
// `run_in_background: true` leaves it running past the call and the turn: both are asked each time.
import { type ToolAdapter, anyText, boolean, editsOnly, inert, isFalse, number } from "./table";

const AGENT = "claude-code";

export const CLAUDE_CODE: readonly ToolAdapter[] = [
  {
    agent: AGENT,
    tool: "Bash",
    kinds: ["execute"],
    fields: {
      command: { role: "command", form: "script" },
      description: inert(anyText),
      timeout: inert(number),
      run_in_background: inert(isFalse, "the command left running in the background, past this call and the turn"),
      dangerouslyDisableSandbox: inert(isFalse, "the command run outside Claude Code's sandbox"),
    },
  },
  {
    agent: AGENT,
    tool: "Edit",
    kinds: ["edit"],
    fields: { file_path: { role: "file" }, old_string: inert(anyText), new_string: inert(anyText), replace_all: inert(boolean) },
  },
  { agent: AGENT, tool: "MultiEdit", kinds: ["edit"], fields: { file_path: { role: "file" }, edits: inert(editsOnly) } },
  { agent: AGENT, tool: "Write", kinds: ["edit"], fields: { file_path: { role: "file" }, content: inert(anyText) } },
  { agent: AGENT, tool: "Read", kinds: ["read"], fields: { file_path: { role: "file" }, offset: inert(number), limit: inert(number) } },
];
