// Each real agent's own permission request (test/fixtures/agents/, copied from REAL-AGENTS.md) gives
// the operation expected, and the rule an "always" on it derives covers the same command in a new
// request of the same agent — new ids, a new time — while `git push --force` is still asked.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { describeOperation } from "../../../protocol/operation";
import { type DerivedRule, type Rule, compileRules, decide, deriveRule, exactHash } from "../../../protocol/rules";

interface PermissionRequest {
  options: { optionId: string; name: string; kind: string }[];
  toolCall: Record<string, unknown>;
}
interface AgentFixture {
  agent: string;
  cwd: string;
  requests: { execute: PermissionRequest; edit: PermissionRequest };
}
const FIXTURES = ["claude-code", "qwen-code", "codex", "opencode"].map(
  (name) => JSON.parse(readFileSync(join(__dirname, "../../fixtures/agents", `${name}.json`), "utf8")) as AgentFixture,
);

/** The same agent's request for another command: its own shape, new ids and time. */
function again(request: PermissionRequest, command: string, n: number): Record<string, unknown> {
  const call = structuredClone(request.toolCall) as Record<string, unknown> & { rawInput: Record<string, unknown> };
  call.toolCallId = `call_new_${n}`;
  call.title = command;
  const raw = call.rawInput;
  raw.command = Array.isArray(raw.command) ? ["/bin/bash", "-lc", command] : command;
  if (raw.call_id !== undefined) Object.assign(raw, { call_id: call.toolCallId, turn_id: String(n), started_at_ms: 1796599999999 + n });
  if (raw.parsed_cmd !== undefined) raw.parsed_cmd = [{ type: "unknown", cmd: command }];
  if (raw.proposed_execpolicy_amendment !== undefined) raw.proposed_execpolicy_amendment = command.split(" ");
  return call;
}

async function always(f: AgentFixture, request: PermissionRequest): Promise<DerivedRule> {
  const option = request.options.find((o) => o.kind === "allow_always");
  if (!option) throw new Error(`${f.agent} offers no allow_always`);
  const toolCall = request.toolCall;
  const result = deriveRule({
    toolCall,
    optionKind: option.kind,
    optionName: option.name,
    cwd: f.cwd,
    agent: f.agent,
    exactHash: await exactHash(toolCall),
  });
  if (result === null || "reason" in result) throw new Error(`${f.agent}: not remembered: ${JSON.stringify(result)}`);
  return result;
}

async function judged(f: AgentFixture, rule: DerivedRule, request: PermissionRequest, toolCall: Record<string, unknown>) {
  const rules: Rule[] = [{ id: "r", ...rule }];
  return decide(compileRules(rules), {
    toolCall,
    options: request.options,
    cwd: f.cwd,
    agent: f.agent,
    now: 1,
    exactHash: await exactHash(toolCall),
  });
}

describe.each(FIXTURES)("$agent's real permission requests", (f) => {
  it("its `npm test` request is one operation: npm test, in the session's directory, with one meaning", () => {
    expect(describeOperation(f.requests.execute.toolCall, f.cwd)).toMatchObject({
      kind: "execute",
      commands: [{ argv: ["npm", "test"] }],
      workdir: f.cwd,
      ambiguity: null,
    });
  });
  it("its edit request names src/a.ts and nothing else, with one meaning", () => {
    expect(describeOperation(f.requests.edit.toolCall, f.cwd)).toMatchObject({
      kind: "edit",
      paths: [`${f.cwd}/src/a.ts`],
      ambiguity: null,
    });
  });
  it("an always on `npm test` covers `npm test` in a new request of the same agent, and not `git push --force`", async () => {
    const rule = await always(f, f.requests.execute);
    expect(rule.matcher).toEqual({ type: "command", prefix: ["npm", "test"] });
    const same = await judged(f, rule, f.requests.execute, again(f.requests.execute, "npm test", 2));
    expect(same.decision).toBe("allow");
    expect(same.option?.kind).toBe("allow_once");
    expect((await judged(f, rule, f.requests.execute, again(f.requests.execute, "git push --force", 3))).decision).toBeNull();
    expect((await judged(f, rule, f.requests.execute, again(f.requests.execute, "npm test && git push --force", 4))).decision).toBeNull();
  });
  it("an always on its edit (where it offers one) covers that file again, and no other file its input names", async () => {
    if (!f.requests.edit.options.some((o) => o.kind === "allow_always")) {
      expect(f.agent).toBe("codex"); // codex offers only allow_once and reject_once on an edit
      return;
    }
    const rule = await always(f, f.requests.edit);
    expect(rule.matcher).toMatchObject({ type: "path", glob: `${f.cwd}/src/a.ts` });
    const retry = structuredClone(f.requests.edit.toolCall);
    retry.toolCallId = "call_edit_2";
    expect((await judged(f, rule, f.requests.edit, retry)).decision).toBe("allow");
    const sneaky = structuredClone(f.requests.edit.toolCall) as { rawInput: Record<string, unknown> };
    for (const field of ["file_path", "filepath"]) if (sneaky.rawInput[field] !== undefined) sneaky.rawInput[field] = "/etc/shadow";
    expect((await judged(f, rule, f.requests.edit, sneaky as Record<string, unknown>)).decision).toBeNull();
  });
});

describe("a reject holds every agent's spelling", () => {
  it.each(FIXTURES)("$agent: a reject on git push holds its `git push --force` request, codex's /bin/bash -lc argv included", async (f) => {
    const reject: DerivedRule = {
      decision: "reject",
      scope: { project: f.cwd, agent: f.agent, user: null },
      matcher: { type: "command", prefix: ["git", "push"] },
      description: "",
    };
    expect((await judged(f, reject, f.requests.execute, again(f.requests.execute, "git push --force", 5))).decision).toBe("reject");
  });
});

describe("escalations in real requests are asked each time", () => {
  const byAgent = (agent: string) => FIXTURES.find((f) => f.agent === agent) as AgentFixture;
  it("qwen's is_background: true, claude's dangerouslyDisableSandbox: true, codex's network access are not covered by the always", async () => {
    for (const [agent, extra] of [
      ["qwen-code", { is_background: true }],
      ["claude-code", { dangerouslyDisableSandbox: true }],
      ["codex", { network_approval_context: { host: "registry.npmjs.org" } }],
    ] as const) {
      const f = byAgent(agent);
      const rule = await always(f, f.requests.execute);
      const call = again(f.requests.execute, "npm test", 9) as { rawInput: Record<string, unknown> };
      Object.assign(call.rawInput, extra);
      if (agent === "claude-code") Object.assign(call, { _meta: { claudeCode: { toolName: "Bash" } } });
      expect((await judged(f, rule, f.requests.execute, call as Record<string, unknown>)).decision, agent).toBeNull();
    }
  });
});
