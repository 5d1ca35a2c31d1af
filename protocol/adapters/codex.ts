// Codex through codex-acp: no tool name; the rawInput is codex's own approval event, identified by
// its `call_id` and `turn_id`. An exec's command is an argv array (`["/bin/bash","-lc","npm test"]`)
// beside `cwd`; the rest is bookkeeping (ids, a time, codex's own parse and proposals, the options it
// offers), harmless because the gateway judges `command` and answers with the offered once option.
// Network access, extra permissions and an escalated sandbox are asked each time.
import { type ToolAdapter, anyArray, anyText, inert, isFalse, isNull, nullOrEmpty, number, textArrayOrNull, textOrNull } from "./table";

const AGENT = "codex";

const EVENT = {
  call_id: inert(anyText),
  turn_id: inert(anyText),
  approval_id: inert(textOrNull),
  started_at_ms: inert(number),
  reason: inert(textOrNull),
} as const;

export const CODEX: readonly ToolAdapter[] = [
  {
    agent: AGENT,
    tool: "exec",
    kinds: ["execute"],
    shape: ["call_id", "turn_id", "command"],
    fields: {
      ...EVENT,
      command: { role: "command", form: "argv" },
      cwd: { role: "directory" },
      proposed_execpolicy_amendment: inert(textArrayOrNull),
      available_decisions: inert(anyArray),
      parsed_cmd: inert(anyArray),
      network_approval_context: inert(isNull, "network access"),
      proposed_network_policy_amendments: inert(nullOrEmpty, "a change to the network policy"),
      additional_permissions: inert(isNull, "permissions beyond the sandbox's"),
      sandbox_permissions: inert((v) => v === "use_default", "the command run with escalated sandbox permissions"),
      with_escalated_permissions: inert(isFalse, "the command run with escalated sandbox permissions"),
    },
  },
  {
    agent: AGENT,
    tool: "apply_patch",
    kinds: ["edit"],
    shape: ["call_id", "changes"],
    fields: {
      ...EVENT,
      changes: { role: "changes" },
      grant_root: inert(isNull, "write access under a directory for the rest of the session"),
    },
  },
  // The model-level tool, when a release names it: its input is the patch text.
  { agent: AGENT, tool: "apply_patch", kinds: ["edit"], fields: { input: { role: "patch" }, patch: { role: "patch" } } },
];
