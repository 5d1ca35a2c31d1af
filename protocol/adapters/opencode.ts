// opencode (`opencode acp`): it sends no tool name (only a title), so its tools are known by `name`
// when a release sends one, else read by the generic table, whose fields include opencode's
// (`filePath`, `workdir`). The edit request's rawInput is `{filepath, diff}`, unlike its tool
// call's `{filePath, oldString, newString}`: that shape identifies it.
import { type ToolAdapter, anyText, boolean, inert, number } from "./table";

const AGENT = "opencode";

export const OPENCODE: readonly ToolAdapter[] = [
  {
    agent: AGENT,
    tool: "bash",
    kinds: ["execute"],
    fields: {
      command: { role: "command", form: "script" },
      workdir: { role: "directory" },
      description: inert(anyText),
      timeout: inert(number),
    },
  },
  {
    agent: AGENT,
    tool: "edit",
    kinds: ["edit"],
    fields: {
      filePath: { role: "file" },
      oldString: inert(anyText),
      newString: inert(anyText),
      replaceAll: inert(boolean),
      filepath: { role: "file" },
      diff: inert(anyText),
    },
    shape: ["filepath", "diff"],
  },
  { agent: AGENT, tool: "write", kinds: ["edit"], fields: { filePath: { role: "file" }, content: inert(anyText) } },
  { agent: AGENT, tool: "read", kinds: ["read"], fields: { filePath: { role: "file" }, offset: inert(number), limit: inert(number) } },
];
