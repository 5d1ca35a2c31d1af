// Gemini CLI (`gemini --experimental-acp`): qwen's ancestor, the same tools under their own names.
// Not observed here (REAL-AGENTS.md): the fields are those of its tool schemas (`dir_path` in newer
// releases, `directory` in older; `absolute_path` then `file_path` for read_file). Known only by
// `name`: without one, its calls are read by the generic table (generic.ts).
import { type ToolAdapter, anyText, inert, isFalse, number } from "./table";

const AGENT = "gemini-cli";

export const GEMINI_CLI: readonly ToolAdapter[] = [
  {
    agent: AGENT,
    tool: "run_shell_command",
    kinds: ["execute"],
    fields: {
      command: { role: "command", form: "script" },
      dir_path: { role: "directory" },
      directory: { role: "directory" },
      description: inert(anyText),
      is_background: inert(isFalse, "the command left running in the background, past this call and the turn"),
    },
  },
  {
    agent: AGENT,
    tool: "replace",
    kinds: ["edit"],
    fields: {
      file_path: { role: "file" },
      old_string: inert(anyText),
      new_string: inert(anyText),
      expected_replacements: inert(number),
      instruction: inert(anyText),
    },
  },
  { agent: AGENT, tool: "write_file", kinds: ["edit"], fields: { file_path: { role: "file" }, content: inert(anyText) } },
  {
    agent: AGENT,
    tool: "read_file",
    kinds: ["read"],
    fields: { absolute_path: { role: "file" }, file_path: { role: "file" }, offset: inert(number), limit: inert(number) },
  },
];
