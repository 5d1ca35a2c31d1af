import { describe, expect, it } from "vitest";
import {
  type DecisionContext,
  type Rule,
  canonicalJson,
  compileRules,
  type DeriveInput,
  type DerivedRule,
  decide,
  deriveRule as deriveResult,
  exactHash,
  parseCommands,
} from "../../../protocol/rules";

const ALL_OPTIONS = [
  { optionId: "ao", name: "Allow once", kind: "allow_once" },
  { optionId: "aa", name: "Always allow", kind: "allow_always" },
  { optionId: "ro", name: "Reject once", kind: "reject_once" },
  { optionId: "ra", name: "Always reject", kind: "reject_always" },
];
const now = 1_000_000;
const ctx = (toolCall: Record<string, unknown>, over: Partial<DecisionContext> = {}): DecisionContext => ({
  toolCall,
  options: ALL_OPTIONS,
  cwd: "/projects/demo",
  agent: "demo",
  user: "alice",
  now,
  ...over,
});
const exec = (command: unknown) => ({ toolCallId: "t", kind: "execute", rawInput: { command } });
const rule = (r: Partial<Rule> & Pick<Rule, "matcher">): Rule => ({ id: "r", decision: "allow", ...r });
const decideWith = (rules: Rule[], c: DecisionContext) => decide(compileRules(rules), c);

describe("remembered decisions: matching", () => {
  it("TC-16: never matches on title or option names alone", () => {
    const rules = [rule({ matcher: { type: "command", prefix: ["git", "status"] } })];
    const disguised = { toolCallId: "t", kind: "execute", title: "git status", rawInput: { command: "rm -rf /" } };
    const named = ctx(disguised, { options: [{ optionId: "x", name: "git status (allow)", kind: "reject_once" }] });
    expect(decideWith(rules, ctx(disguised)).decision).toBeNull();
    expect(decideWith(rules, named).decision).toBeNull();
  });

  it("TC-18: a command that changes between request and retry is asked again", () => {
    const rules = [rule({ matcher: { type: "command", prefix: ["npm", "test"] } })];
    expect(decideWith(rules, ctx(exec("npm test"))).decision).toBe("allow");
    expect(decideWith(rules, ctx(exec("npm test && npm publish"))).decision).toBeNull();
  });

  it("handles the argv and object shapes real agents send", () => {
    const rules = [rule({ matcher: { type: "command", prefix: ["git", "status"] } })];
    for (const rawInput of [
      "git status",
      ["git", "status"],
      { cmd: "git status" },
      { command: "git", args: ["status"] },
      { argv: ["bash", "-c", "git status"] },
    ]) {
      expect(decideWith(rules, ctx({ toolCallId: "t", kind: "execute", rawInput })).decision).toBe("allow");
    }
    for (const rawInput of [null, 42, { command: 1 }, { command: "git", args: "status" }, ["bash", "-c", "git status", "extra"]]) {
      expect(decideWith(rules, ctx({ toolCallId: "t", kind: "execute", rawInput })).decision).toBeNull();
    }
  });

  it("does not let env prefixes, redirections or wrappers smuggle another command", () => {
    const rules = [rule({ matcher: { type: "command", prefix: ["git", "status"] } })];
    for (const command of [
      "FOO=1 rm -rf /",
      "git status >> ~/.profile",
      "git status < /etc/shadow",
      "bash -c 'git status' && rm x",
      "git status <<EOF\nx\nEOF",
      "(git status; rm -rf /)",
      "{ git status; rm -rf /; }",
      "git status | tee out",
      "git status <(rm -rf ~)",
    ]) {
      expect(decideWith(rules, ctx(exec(command))).decision, command).toBeNull();
    }
    expect(decideWith(rules, ctx(exec("(git status)"))).decision).toBe("allow");
    expect(parseCommands("'unterminated")).toBeNull();
  });

  it("a tool rule (kind and name) rejects MCP tools by kind and name, and never allows one (issue 35)", () => {
    const matcher = { type: "tool", kind: "other", name: "mcp__github__list_issues" } as const;
    const call = (kind: string, name: string) => ctx({ toolCallId: "t", kind, name, rawInput: { repo: "x" } });
    expect(decideWith([rule({ matcher })], call("other", "mcp__github__list_issues")).decision).toBeNull();
    const rejects = [rule({ decision: "reject", matcher })];
    expect(decideWith(rejects, call("other", "mcp__github__list_issues")).decision).toBe("reject");
    expect(decideWith(rejects, call("other", "mcp__github__delete_repo")).decision).toBeNull();
    expect(decideWith(rejects, call("fetch", "mcp__github__list_issues")).decision).toBeNull();
  });

  it("TC-21: a path outside the session's cwd never matches a rule scoped to that project", () => {
    const rules = [rule({ scope: { project: "/projects/demo" }, matcher: { type: "path", kinds: ["edit"], glob: "**" } })];
    const edit = (path: string) => ({ toolCallId: "t", kind: "edit", locations: [{ path }] });
    expect(decideWith(rules, ctx(edit("/projects/demo/a.ts"))).decision).toBe("allow");
    expect(decideWith(rules, ctx(edit("/projects/demo/../../etc/passwd"))).decision).toBeNull();
    expect(decideWith(rules, ctx(edit("/projects/demo-evil/a.ts"))).decision).toBeNull();
    expect(decideWith(rules, ctx(edit("/projects/demo/a.ts"), { cwd: "/projects/other" })).decision).toBeNull();
  });

  it("judges diff paths as well as locations", () => {
    const rules = [rule({ matcher: { type: "path", kinds: ["edit"], glob: "/projects/demo/src/**" } })];
    const call = {
      toolCallId: "t",
      kind: "edit",
      locations: [{ path: "/projects/demo/src/a.ts" }],
      content: [{ type: "diff", path: "/projects/demo/.env", oldText: null, newText: "x" }],
    };
    expect(decideWith(rules, ctx(call)).decision).toBeNull();
  });

  it("matches an exact rule only for the same kind, name and rawInput, whatever the key order", async () => {
    const a = { toolCallId: "t", kind: "fetch", name: "web", rawInput: { url: "https://x", method: "GET" } };
    const b = { toolCallId: "u", kind: "fetch", name: "web", rawInput: { method: "GET", url: "https://x" } };
    const hash = await exactHash(a);
    expect(await exactHash(b)).toBe(hash);
    expect(canonicalJson({ b: 1, a: [2, { d: 1, c: 0 }] })).toBe('{"a":[2,{"c":0,"d":1}],"b":1}');
    const rules = [rule({ matcher: { type: "exact", hash } })];
    expect(decideWith(rules, ctx(b, { exactHash: hash })).decision).toBe("allow");
    const other = await exactHash({ ...a, rawInput: { url: "https://y", method: "GET" } });
    expect(decideWith(rules, ctx(a, { exactHash: other })).decision).toBeNull();
  });
});

describe("remembered decisions: precedence, lifetime, scope, options", () => {
  it("any matching reject beats any matching allow", () => {
    const rules = [
      rule({ id: "allow-all-git", matcher: { type: "command", prefix: ["git"] } }),
      rule({ id: "no-push", decision: "reject", matcher: { type: "command", prefix: ["git", "push"] } }),
    ];
    const d = decideWith(rules, ctx(exec("git fetch && git push")));
    expect(d.decision).toBe("reject");
    expect(d.rule?.id).toBe("no-push");
  });

  it("an expired or revoked rule never matches", () => {
    const m = { type: "command", prefix: ["ls"] } as const;
    expect(decideWith([rule({ matcher: m, expiresAt: now - 1 })], ctx(exec("ls"))).decision).toBeNull();
    expect(decideWith([rule({ matcher: m, expiresAt: now })], ctx(exec("ls"))).decision).toBeNull();
    expect(decideWith([rule({ matcher: m, expiresAt: now + 1 })], ctx(exec("ls"))).decision).toBe("allow");
    expect(decideWith([rule({ matcher: m, revokedAt: now - 5 })], ctx(exec("ls"))).decision).toBeNull();
  });

  it("TC-14: a rule's scope (agent, user, project) is never exceeded", () => {
    const m = { type: "command", prefix: ["ls"] } as const;
    expect(decideWith([rule({ matcher: m, scope: { agent: "other" } })], ctx(exec("ls"))).decision).toBeNull();
    expect(decideWith([rule({ matcher: m, scope: { user: "bob" } })], ctx(exec("ls"))).decision).toBeNull();
    expect(decideWith([rule({ matcher: m, scope: { user: "alice", agent: "demo" } })], ctx(exec("ls"))).decision).toBe("allow");
    expect(decideWith([rule({ matcher: m, scope: { project: "/projects/other" } })], ctx(exec("ls"))).decision).toBeNull();
  });

  it("TC-20: switch_mode is never auto-allowed, though a reject still applies", () => {
    const call = { toolCallId: "t", kind: "switch_mode", rawInput: { mode: "code" } };
    expect(decideWith([rule({ matcher: { type: "tool", kind: "switch_mode" } })], ctx(call)).decision).toBeNull();
    expect(decideWith([rule({ decision: "reject", matcher: { type: "tool", kind: "switch_mode" } })], ctx(call)).decision).toBe("reject");
  });

  it("TC-13: answers only with an offered option kind, *_once first, never cancelled", () => {
    const rules = [rule({ matcher: { type: "command", prefix: ["ls"] } })];
    expect(decideWith(rules, ctx(exec("ls"))).option?.optionId).toBe("ao");
    const onlyAlways = ALL_OPTIONS.filter((o) => o.kind !== "allow_once");
    expect(decideWith(rules, ctx(exec("ls"), { options: onlyAlways })).option?.optionId).toBe("aa");
    const noAllow = ALL_OPTIONS.filter((o) => !o.kind.startsWith("allow"));
    expect(decideWith(rules, ctx(exec("ls"), { options: noAllow })).decision).toBeNull();
    const rejects = [rule({ decision: "reject", matcher: { type: "command", prefix: ["ls"] } })];
    expect(decideWith(rejects, ctx(exec("ls"))).option?.kind).toBe("reject_once");
    expect(decideWith(rejects, ctx(exec("ls"), { options: ALL_OPTIONS.filter((o) => o.kind !== "reject_once") })).option?.kind).toBe(
      "reject_always",
    );
  });

  it("decides among 10,000 rules by looking at few of them", () => {
    const rules: Rule[] = [];
    for (let i = 0; i < 10_000; i++) rules.push(rule({ id: `r${i}`, matcher: { type: "command", prefix: [`tool${i}`, "run"] } }));
    rules.push(rule({ id: "target", matcher: { type: "command", prefix: ["git", "status"] } }));
    const compiled = compileRules(rules);
    expect(compiled.byCommandHead.get("git")).toHaveLength(1);
    expect(decide(compiled, ctx(exec("git status"))).rule?.id).toBe("target");
  });
});

/** The derived rule, failing the test when none (or only a reason) came back. */
function deriveRule(input: DeriveInput): DerivedRule | null {
  const r = deriveResult(input);
  if (r && "reason" in r) throw new Error(`no rule: ${r.reason}`);
  return r;
}

describe("deriving a rule from a person's *_always answer", () => {
  const base = { cwd: "/projects/demo", agent: "demo", exactHash: "a".repeat(64) };
  it("TC-19: a command becomes its program and subcommand, scoped to the project and agent, and says so", () => {
    const r = deriveRule({ ...base, toolCall: exec("git status --short"), optionKind: "allow_always", optionName: "Always allow" });
    expect(r).toMatchObject({
      decision: "allow",
      matcher: { type: "command", prefix: ["git", "status"] },
      scope: { project: "/projects/demo", agent: "demo" },
    });
    expect(r?.description).toMatch(/git status/);
    expect(r?.description).toMatch(/\/projects\/demo/);
    expect(deriveRule({ ...base, toolCall: exec("npm run build"), optionKind: "allow_always", optionName: "" })?.matcher).toEqual({
      type: "command",
      prefix: ["npm", "run", "build"],
    });
  });
  it("TC-15: describes the operation from its kind, command and paths, never from the agent's title", () => {
    const command = { toolCallId: "t", kind: "execute", title: "Tidy up (harmless)", rawInput: { command: "rm -rf build" } };
    const described = deriveRule({ ...base, toolCall: command, optionKind: "allow_always", optionName: "Always allow" })?.description ?? "";
    expect(described).toContain("rm -rf build");
    expect(described).not.toContain("harmless");
    const edit = { toolCallId: "t", kind: "edit", title: "Fix a typo", locations: [{ path: "/projects/demo/src/../.env" }] };
    const path = deriveRule({ ...base, toolCall: edit, optionKind: "reject_always", optionName: "Always reject" })?.description ?? "";
    expect(path).toContain("/projects/demo/.env");
    expect(path).not.toContain("typo");
  });

  it("remembers compound commands and commands it cannot judge as the exact operation", () => {
    for (const command of ["git status && rm -rf /", "FOO=1 make", "echo $(date)"]) {
      expect(deriveRule({ ...base, toolCall: exec(command), optionKind: "allow_always", optionName: "" })?.matcher.type, command).toBe(
        "exact",
      );
    }
  });
  it("an edit becomes the file, or its directory when the option's name says so", () => {
    const edit = { toolCallId: "t", kind: "edit", locations: [{ path: "/projects/demo/src/a.ts" }] };
    expect(deriveRule({ ...base, toolCall: edit, optionKind: "allow_always", optionName: "Always allow" })?.matcher).toEqual({
      type: "path",
      kinds: ["edit"],
      glob: "/projects/demo/src/a.ts",
    });
    expect(
      deriveRule({ ...base, toolCall: edit, optionKind: "reject_always", optionName: "Always allow edits in this directory" }),
    ).toMatchObject({ decision: "reject", matcher: { type: "path", glob: "/projects/demo/src/**" } });
  });
  it("an MCP tool becomes its exact call (issue 35); a once answer or an allowed switch_mode derives nothing", async () => {
    const mcp = { toolCallId: "t", kind: "other", name: "mcp__x__y", rawInput: { q: 1 } };
    expect(
      deriveRule({ ...base, toolCall: mcp, exactHash: await exactHash(mcp), optionKind: "allow_always", optionName: "" })?.matcher,
    ).toEqual({
      type: "exact",
      hash: await exactHash(mcp),
    });
    expect(deriveRule({ ...base, toolCall: exec("git status"), optionKind: "allow_once", optionName: "" })).toBeNull();
    expect(
      deriveResult({
        ...base,
        toolCall: { toolCallId: "t", kind: "switch_mode", rawInput: {} },
        optionKind: "allow_always",
        optionName: "",
      }),
    ).toHaveProperty("reason");
  });
});
