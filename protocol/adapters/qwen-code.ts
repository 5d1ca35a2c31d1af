// Qwen Code (`qwen --acp`): the tool's name is `_meta.toolName`. Every shell call carries
// `is_background`; only `false` is harmless (a background process outlives the call, the turn and
// a cancel). `directory` is where the command runs, relative to the session's directory if relative.
import { type ToolAdapter, anyText, boolean, inert, isFalse, number } from "./table";

const AGENT = "qwen-code";

export const QWEN_CODE: readonly ToolAdapter[] = [
  {
    agent: AGENT,
    tool: "run_shell_command",
    kinds: ["execute"],
    fields: {
      command: { role: "command", form: "script" },
      directory: { role: "directory" },
      description: inert(anyText),
      timeout: inert(number),
      is_background: inert(isFalse, "the command left running in the background, past this call and the turn"),
    },
  },
  {
    agent: AGENT,
    tool: "edit",
    kinds: ["edit"],
    fields: { file_path: { role: "file" }, old_string: inert(anyText), new_string: inert(anyText), replace_all: inert(boolean) },
  },
  { agent: AGENT, tool: "write_file", kinds: ["edit"], fields: { file_path: { role: "file" }, content: inert(anyText) } },
  {
    agent: AGENT,
    tool: "read_file",
    kinds: ["read"],
    fields: { absolute_path: { role: "file" }, file_path: { role: "file" }, offset: inert(number), limit: inert(number) },
  },
];
