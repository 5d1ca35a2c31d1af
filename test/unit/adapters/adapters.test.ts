// Agent adapters (decision 0039): each real agent's tool is recognised by its identity, never its
// title, and read by its own table — what names the command, the directory and the files, which
// fields change nothing (and with which values), which escalate. Anything else stays asked.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ADAPTERS, readToolInput } from "../../../protocol/adapters";
import type { FieldRole } from "../../../protocol/adapters/table";
import { describeOperation } from "../../../protocol/operation";
import { deriveRule, exactHash } from "../../../protocol/rules";

const CWD = "/work/proj";
const argvs = (call: Record<string, unknown>) => describeOperation(call, CWD).commands?.map((c) => c.argv) ?? null;
const op = (call: Record<string, unknown>) => describeOperation(call, CWD);
const claude = (toolName: string, kind: string, rawInput: unknown, extra: Record<string, unknown> = {}) => ({
  toolCallId: "t",
  kind,
  rawInput,
  _meta: { claudeCode: { toolName } },
  ...extra,
});
const qwen = (toolName: string, kind: string, rawInput: unknown, extra: Record<string, unknown> = {}) => ({
  toolCallId: "t",
  kind,
  rawInput,
  _meta: { toolName },
  ...extra,
});
const named = (name: string, kind: string, rawInput: unknown, extra: Record<string, unknown> = {}) => ({
  toolCallId: "t",
  kind,
  name,
  rawInput,
  ...extra,
});
const codexExec = (extra: Record<string, unknown> = {}) => ({
  toolCallId: "call_1",
  kind: "execute",
  rawInput: {
    call_id: "call_1",
    turn_id: "0",
    started_at_ms: 1,
    command: ["/bin/bash", "-lc", "npm test"],
    cwd: CWD,
    proposed_execpolicy_amendment: ["npm", "test"],
    available_decisions: ["approved", "abort"],
    parsed_cmd: [{ type: "unknown", cmd: "npm test" }],
    ...extra,
  },
});

describe("adapters: Claude Code", () => {
  it("Bash: command and description, timeout; run_in_background and dangerouslyDisableSandbox only when false", () => {
    const bash = (raw: Record<string, unknown>) => claude("Bash", "execute", { command: "npm test", description: "tests", ...raw });
    expect(op(bash({})).adapter).toBe("claude-code Bash");
    expect(argvs(bash({ timeout: 1000, run_in_background: false, dangerouslyDisableSandbox: false }))).toEqual([["npm", "test"]]);
    expect(op(bash({ dangerouslyDisableSandbox: true })).ambiguity).toMatch(/outside Claude Code's sandbox/);
    expect(op(bash({ run_in_background: true })).ambiguity).toMatch(/background/);
    expect(op(bash({ dangerouslyDisableSandbox: "false" })).ambiguity).not.toBeNull();
    expect(op(bash({ cwd: "/elsewhere" })).ambiguity).toMatch(/does not have \(cwd\)/);
  });
  it("Edit, MultiEdit, Write, Read name their file in file_path", () => {
    const file = `${CWD}/src/a.ts`;
    const loc = { locations: [{ path: file }] };
    expect(op(claude("Edit", "edit", { file_path: file, old_string: "a", new_string: "b", replace_all: true }, loc))).toMatchObject({
      adapter: "claude-code Edit",
      paths: [file],
      ambiguity: null,
    });
    const multi = claude("MultiEdit", "edit", { file_path: file, edits: [{ old_string: "a", new_string: "b" }] }, loc);
    expect(op(multi).ambiguity).toBeNull();
    const sneaky = claude(
      "MultiEdit",
      "edit",
      { file_path: file, edits: [{ old_string: "a", new_string: "b", file_path: "/etc/x" }] },
      loc,
    );
    expect(op(sneaky).ambiguity).not.toBeNull();
    expect(op(claude("Write", "edit", { file_path: file, content: "x" }, loc))).toMatchObject({ paths: [file], ambiguity: null });
    expect(op(claude("Read", "read", { file_path: file, offset: 1, limit: 20 }, loc))).toMatchObject({ paths: [file], ambiguity: null });
  });
});

describe("adapters: Qwen Code", () => {
  it("run_shell_command: is_background false changes nothing, true is asked each time; directory is where it runs", () => {
    const shell = (raw: Record<string, unknown>) => qwen("run_shell_command", "execute", { command: "npm test", description: "d", ...raw });
    expect(op(shell({ is_background: false }))).toMatchObject({ adapter: "qwen-code run_shell_command", ambiguity: null, workdir: CWD });
    expect(argvs(shell({ is_background: false }))).toEqual([["npm", "test"]]);
    expect(op(shell({ is_background: true })).ambiguity).toMatch(/background/);
    expect(op(shell({ is_background: false, directory: "packages/a" })).workdir).toBe(`${CWD}/packages/a`);
    expect(op(shell({ is_background: false, directory: "~/x" })).workdir).toBeNull();
  });
  it("edit, write_file, read_file name their file; read_file's absolute_path too", () => {
    const file = `${CWD}/src/a.ts`;
    const loc = { locations: [{ path: file }] };
    expect(op(qwen("edit", "edit", { file_path: file, old_string: "a", new_string: "b" }, loc)).ambiguity).toBeNull();
    expect(op(qwen("write_file", "edit", { file_path: file, content: "x" }, loc)).ambiguity).toBeNull();
    expect(op(qwen("read_file", "read", { absolute_path: file }, loc))).toMatchObject({ paths: [file], ambiguity: null });
  });
});

describe("adapters: Codex", () => {
  it("exec is recognised by its event's shape: the argv command beside cwd, the bookkeeping harmless", () => {
    expect(op(codexExec())).toMatchObject({ adapter: "codex exec", ambiguity: null, workdir: CWD });
    expect(argvs(codexExec())).toEqual([["npm", "test"]]);
    expect(argvs(codexExec({ cwd: `${CWD}/sub`, approval_id: "a", reason: null }))).toEqual([["npm", "test"]]);
  });
  it("network access, extra permissions and escalated sandbox permissions are asked each time", () => {
    for (const extra of [
      { network_approval_context: { host: "example.com" } },
      { proposed_network_policy_amendments: [{ host: "example.com" }] },
      { additional_permissions: { network: true } },
      { sandbox_permissions: "require_escalated" },
      { with_escalated_permissions: true },
    ]) {
      expect(op(codexExec(extra)).ambiguity, JSON.stringify(extra)).toMatch(/asks for more/);
    }
    expect(op(codexExec({ network_approval_context: null, additional_permissions: null })).ambiguity).toBeNull();
  });
  it("a command given as a script where codex gives argv is not read", () => {
    expect(op(codexExec({ command: "npm test" })).ambiguity).toMatch(/argv/);
  });
  it("apply_patch: the files of codex's changes, and of a patch text, are the operation's paths", () => {
    const changes = { [`${CWD}/src/a.ts`]: { type: "update", unified_diff: "", move_path: `${CWD}/src/b.ts` } };
    const patch = { toolCallId: "p", kind: "edit", rawInput: { call_id: "p", turn_id: "0", changes, reason: null, grant_root: null } };
    expect(op(patch)).toMatchObject({ adapter: "codex apply_patch", paths: [`${CWD}/src/a.ts`, `${CWD}/src/b.ts`], ambiguity: null });
    const granted = { ...patch, rawInput: { ...patch.rawInput, grant_root: "/" } };
    expect(op(granted).ambiguity).toMatch(/write access/);
    const text = "*** Begin Patch\n*** Add File: src/new.ts\n+x\n*** Update File: src/a.ts\n@@\n-a\n+b\n*** End Patch\n";
    expect(op(named("apply_patch", "edit", { input: text })).paths).toEqual([`${CWD}/src/new.ts`, `${CWD}/src/a.ts`]);
    expect(op(named("apply_patch", "edit", { input: "*** Begin Patch\n*** Frobnicate: x\n*** End Patch" })).ambiguity).not.toBeNull();
  });
});

describe("adapters: opencode and Gemini CLI", () => {
  it("opencode bash, edit, write, read by name; its edit request by its {filepath, diff} shape", () => {
    expect(op(named("bash", "execute", { command: "npm test", workdir: "sub", timeout: 5 }))).toMatchObject({
      adapter: "opencode bash",
      workdir: `${CWD}/sub`,
      ambiguity: null,
    });
    const file = `${CWD}/src/a.ts`;
    const loc = { locations: [{ path: file }] };
    expect(op(named("edit", "edit", { filePath: file, oldString: "a", newString: "b" }, loc)).ambiguity).toBeNull();
    expect(op(named("write", "edit", { filePath: file, content: "x" }, loc)).ambiguity).toBeNull();
    expect(op(named("read", "read", { filePath: file }, loc)).ambiguity).toBeNull();
    expect(op({ toolCallId: "t", kind: "edit", rawInput: { filepath: file, diff: "" }, ...loc })).toMatchObject({
      adapter: "opencode edit",
      ambiguity: null,
    });
  });
  it("Gemini CLI run_shell_command (dir_path), replace, write_file, read_file by name", () => {
    expect(op(named("run_shell_command", "execute", { command: "npm test", dir_path: "sub", is_background: false }))).toMatchObject({
      adapter: "gemini-cli run_shell_command",
      workdir: `${CWD}/sub`,
      ambiguity: null,
    });
    const file = `${CWD}/src/a.ts`;
    const loc = { locations: [{ path: file }] };
    expect(
      op(named("replace", "edit", { file_path: file, old_string: "a", new_string: "b", expected_replacements: 1 }, loc)).ambiguity,
    ).toBeNull();
    expect(op(named("write_file", "edit", { file_path: file, content: "x" }, loc)).ambiguity).toBeNull();
    expect(op(named("read_file", "read", { absolute_path: file }, loc)).ambiguity).toBeNull();
  });
});

describe("adapters: identity, never the title", () => {
  it("a title naming a tool identifies nothing: the generic table reads the call", () => {
    const call = { toolCallId: "t", kind: "execute", title: "Bash", rawInput: { command: "npm test", dangerouslyDisableSandbox: true } };
    expect(op(call).adapter).toBeNull();
    expect(op(call).ambiguity).not.toBeNull();
  });
  it("two names that disagree, or two agents' names, make the call ambiguous", () => {
    expect(op({ ...claude("Bash", "execute", { command: "ls" }), name: "Read" }).ambiguity).toMatch(/more than once/);
    expect(
      op({ toolCallId: "t", kind: "execute", rawInput: { command: "ls" }, _meta: { toolName: "Bash", claudeCode: { toolName: "Bash" } } })
        .ambiguity,
    ).toMatch(/two agents/);
  });
  it("a tool sent with a kind it does not have is ambiguous", () => {
    expect(op(claude("Read", "execute", { file_path: "/etc/shadow" })).ambiguity).toMatch(/not a execute tool/);
    expect(op(claude("Bash", "read", { command: "cat /etc/shadow" }, { locations: [{ path: `${CWD}/a` }] })).ambiguity).not.toBeNull();
  });
  it("an unknown tool name is read by the generic table, as today", () => {
    expect(op(named("mcp__x__run", "execute", { command: "npm test" }))).toMatchObject({ adapter: null, ambiguity: null });
    expect(op(named("mcp__x__run", "execute", { command: "npm test", env: {} })).ambiguity).toMatch(/does not know/);
  });
});

/** Sample values of every JSON type, for the inert fields' value checks. */
const SAMPLES: unknown[] = [true, false, null, 0, 1.5, "", "x", [], ["a"], [1], {}, { a: 1 }];

describe("adapters: the tables themselves", () => {
  it("every escalating value of every adapter's field escalates in the generic table too (dropping the name loosens nothing)", () => {
    for (const a of ADAPTERS) {
      for (const [field, role] of Object.entries(a.fields) as [string, FieldRole][]) {
        if (role.role !== "inert") continue;
        for (const value of SAMPLES.filter((v) => !role.inert(v))) {
          const kind = a.kinds[0] as string;
          const base = kind === "execute" ? { command: "npm test" } : {};
          const reading = readToolInput({ toolCallId: "t", kind, rawInput: { ...base, [field]: value } }, kind);
          expect(reading.ambiguity, `${a.agent} ${a.tool} ${field}=${JSON.stringify(value)}`).not.toBeNull();
        }
      }
    }
  });
  it("two tables that share a tool name read each shared field the same way", () => {
    for (const a of ADAPTERS)
      for (const b of ADAPTERS) {
        if (a === b || a.tool !== b.tool) continue;
        for (const field of Object.keys(a.fields).filter((f) => Object.hasOwn(b.fields, f))) {
          const ra = a.fields[field] as FieldRole;
          const rb = b.fields[field] as FieldRole;
          expect(ra.role, `${a.agent}/${b.agent} ${a.tool}.${field}`).toBe(rb.role);
          if (ra.role === "inert" && rb.role === "inert")
            for (const v of SAMPLES) expect(ra.inert(v), `${a.tool}.${field}=${JSON.stringify(v)}`).toBe(rb.inert(v));
        }
      }
  });
  it("property: adding any unknown field to any adapter's input makes the call not remembered", async () => {
    const known = new Set(ADAPTERS.flatMap((a) => Object.keys(a.fields)));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ADAPTERS),
        fc.string({ minLength: 1, maxLength: 12 }).filter((f) => !known.has(f) && f !== "__proto__"),
        fc.jsonValue(),
        async (adapter, field, value) => {
          const kind = adapter.kinds[0] as string;
          const rawInput: Record<string, unknown> = {};
          for (const f of adapter.shape ?? []) rawInput[f] = f === "command" ? ["npm", "test"] : "x";
          if (kind === "execute" && adapter.shape === undefined) rawInput.command = "npm test";
          rawInput[field] = value;
          const call = adapter.shape ? { toolCallId: "t", kind, rawInput } : named(adapter.tool, kind, rawInput);
          expect(op(call).ambiguity).not.toBeNull();
          const derived = deriveRule({
            toolCall: call,
            optionKind: "allow_always",
            optionName: "Always",
            cwd: CWD,
            agent: "a",
            exactHash: await exactHash(call),
          });
          expect(derived).toMatchObject({ reason: expect.stringMatching(/^Not remembered/) });
        },
      ),
      { numRuns: 500 },
    );
  });
});
