// Remembered decisions that mean what they say: every matcher example at the top of issue 10 as a
// named test, and the behaviour behind each (parse like bash, derive narrowly, normalise rejects,
// exact means the whole operation, one description of an operation).
import { describe, expect, it } from "vitest";
import { describeOperation, operationSummary } from "../../../protocol/operation";
import {
  type DecisionContext,
  type DerivedRule,
  type DeriveInput,
  type Rule,
  compileRules,
  decide,
  deriveRule,
  exactHash,
  parseCommands,
} from "../../../protocol/rules";

const OPTIONS = [
  { optionId: "ao", name: "Allow once", kind: "allow_once" },
  { optionId: "ro", name: "Reject once", kind: "reject_once" },
];
const ctx = (toolCall: Record<string, unknown>, over: Partial<DecisionContext> = {}): DecisionContext => ({
  toolCall,
  options: OPTIONS,
  cwd: "/projects/demo",
  agent: "demo",
  now: 1,
  ...over,
});
const exec = (command: unknown, extra: Record<string, unknown> = {}) => ({
  toolCallId: "t",
  kind: "execute",
  rawInput: { command, ...extra },
});
const allow = (prefix: string[]): Rule => ({ id: `allow ${prefix.join(" ")}`, decision: "allow", matcher: { type: "command", prefix } });
const reject = (prefix: string[]): Rule => ({ id: `reject ${prefix.join(" ")}`, decision: "reject", matcher: { type: "command", prefix } });
const judge = async (rules: Rule[], toolCall: Record<string, unknown>, over: Partial<DecisionContext> = {}) =>
  decide(compileRules(rules), ctx(toolCall, { exactHash: await exactHash(toolCall), ...over })).decision;

async function remembered(toolCall: Record<string, unknown>, over: Partial<DeriveInput> = {}): Promise<Rule> {
  const r = deriveRule({
    toolCall,
    optionKind: "allow_always",
    optionName: "Always allow",
    cwd: "/projects/demo",
    agent: "demo",
    exactHash: await exactHash(toolCall),
    ...over,
  });
  if (!r || "reason" in r) throw new Error(`nothing remembered: ${JSON.stringify(r)}`);
  return { id: "derived", ...(r as DerivedRule) };
}

describe("issue 10: the matcher examples", () => {
  it("does not allow git status $'\\'' ; touch /tmp/x #' under a git status rule", async () => {
    expect(await judge([allow(["git", "status"])], exec("git status $'\\'' ; touch /tmp/x #'"))).toBeNull();
  });

  it("does not allow a double-quoted ${…} whose inner quote hides a second command under a git status rule", async () => {
    expect(await judge([allow(["git", "status"])], exec('git status "${x:-"a"}" ; touch /tmp/x #"'))).toBeNull();
    expect(await judge([allow(["git", "status"])], exec('git status "${x#"}"; touch /tmp/x'))).toBeNull();
  });

  it("TC-18: rejects git --no-pager push --force and git -C . push under allow git + reject git push", async () => {
    const rules = [allow(["git"]), reject(["git", "push"])];
    for (const command of [
      "git --no-pager push --force",
      "git -C . push",
      "git -c k=v push",
      "git --git-dir=.git push",
      "'git' \"push\"",
      "/usr/bin/git push",
    ]) {
      expect(await judge(rules, exec(command)), command).toBe("reject");
    }
    expect(await judge(rules, exec("git log"))).toBe("allow");
  });

  it("TC-19: always-allow on sudo rm -rf ./build does not cover sudo rm -rf / --no-preserve-root", async () => {
    const rule = await remembered(exec("sudo rm -rf ./build"));
    expect(rule.matcher).toEqual({ type: "argv", argv: ["sudo", "rm", "-rf", "./build"] });
    expect(await judge([rule], exec("sudo rm -rf / --no-preserve-root"))).toBeNull();
    expect(await judge([rule], exec("sudo rm -rf ./build"))).toBe("allow");
  });

  it("TC-19: always-allow on ssh staging uptime does not cover ssh staging 'rm -rf /var/www'", async () => {
    const rule = await remembered(exec("ssh staging uptime"));
    expect(await judge([rule], exec("ssh staging 'rm -rf /var/www'"))).toBeNull();
    expect(await judge([rule], exec("ssh staging uptime"))).toBe("allow");
  });

  it("TC-19: always-allow on rm build does not cover rm build -rf /", async () => {
    const rule = await remembered(exec("rm build"));
    expect(await judge([rule], exec("rm build -rf /"))).toBeNull();
  });

  it("TC-16: always-allow on an edit of two files without rawInput does not cover a later edit of /etc/passwd", async () => {
    const edit = (paths: string[]) => ({ toolCallId: "t", kind: "edit", locations: paths.map((path) => ({ path })) });
    const rule = await remembered(edit(["/projects/demo/a.ts", "/projects/other/b.ts"]));
    expect(rule.matcher.type).toBe("exact");
    expect(await judge([rule], edit(["/etc/passwd"]))).toBeNull();
    expect(await judge([rule], edit(["/projects/demo/a.ts", "/projects/other/b.ts"]))).toBe("allow");
  });
});

describe("parse like bash, fail closed", () => {
  const judged = (src: string) => parseCommands(src)?.map((c) => c.argv) ?? null;
  it("reads every quoting form bash has", () => {
    expect(judged("git status $'a\\'b'")).toEqual([["git", "status", "a'b"]]);
    expect(judged("echo $'\\x41\\101\\n'")).toEqual([["echo", "AA\n"]]);
    expect(judged("git \\\nstatus")).toEqual([["git", "status"]]);
    expect(judged("gi\\\nt status")).toEqual([["git", "status"]]);
    expect(judged('echo "a\\"b\\\\c\\d"')).toEqual([["echo", 'a"b\\c\\d']]);
    expect(judged("ls # ; rm -rf /")).toEqual([["ls"]]);
    expect(judged("ls a#b")).toEqual([["ls", "a#b"]]);
    expect(judged("{ ls; }")).toEqual([["ls"]]);
    expect(judged("(ls) && ls")).toEqual([["ls"], ["ls"]]);
    expect(judged("ls |& ls")).toEqual([["ls"], ["ls"]]);
  });
  it("fails closed on every expansion whose value it cannot know and on every form it does not judge", () => {
    for (const src of [
      "ls $HOME",
      "ls ${x}",
      'ls "${x:-"a"}"',
      "ls $(id)",
      "ls `id`",
      'ls "$(id)"',
      "ls <(id)",
      "ls >(id)",
      "cat <<EOF\nx\nEOF",
      "cat <<< x",
      "ls > out",
      "ls 2> out",
      "ls <> f",
      "X=1 ls",
      "ls; X=1",
      "if ls; then ls; fi",
      "for x in a; do ls; done",
      "f() { ls; }",
      "function f { ls; }",
      "! ls",
      "time ls",
      "((x=1))",
      "{x}>/dev/null ls",
      "g?t status",
      "{git,ls} status",
      "~/bin/git status",
      "echo $'\\u00e9'",
      "echo $'\\x00'",
      "'unterminated",
      '"unterminated',
      "$'unterminated",
      "ls \\",
      "ls )",
      "(ls",
      "case x in x) ls;; esac",
    ]) {
      expect(parseCommands(src), JSON.stringify(src)).toBeNull();
    }
  });
  it("fails closed on every builtin that runs code, sets state or evaluates a name", () => {
    for (const src of [
      "eval ls",
      "source x",
      ". x",
      "exec ls",
      "command ls",
      "builtin echo",
      "trap ls EXIT",
      "alias ls=rm",
      "export PATH=/tmp",
      "cd /tmp",
      "hash -p /tmp/x git",
      "enable -f x y",
      "let 'a[$(id)]'",
      "printf -v 'a[$(id)]' x",
      "read 'a[$(id)]'",
      "test -v 'a[$(id)]'",
      "[ -v 'a[$(id)]' ]",
      "declare x=1",
      "'eval' ls",
    ]) {
      expect(parseCommands(src), src).toBeNull();
    }
  });
  it("judges bash -c by its script, sh -c only when sh reads it as bash does, and every other shell wrapper as itself", () => {
    expect(judged("bash -c 'git status'")).toEqual([["git", "status"]]);
    expect(judged("bash -lc 'git status; ls'")).toEqual([["git", "status"], ["ls"]]);
    expect(judged("sh -c 'git status'")).toEqual([["git", "status"]]);
    // dash has no $'…': it would run `npm` with the word `$test`, not `test`.
    expect(judged(`sh -c "npm \\$'test'"`)).toBeNull();
    expect(judged("/bin/bash -lc 'npm test'")).toEqual([["npm", "test"]]);
    expect(judged("/tmp/x/bash -lc 'npm test'")).toEqual([["/tmp/x/bash", "-lc", "npm test"]]);
    expect(judged("zsh -c 'git status'")).toEqual([["zsh", "-c", "git status"]]);
    expect(judged("bash -c 'git status' x")).toBeNull();
  });
});

describe("wrappers and programs that run other code are covered only by their exact argv", () => {
  it("never lets a prefix cover eval, sudo, env, xargs, npx, find -exec or an interpreter's -c/-e", async () => {
    const rules = [
      allow(["sudo"]),
      allow(["env"]),
      allow(["xargs"]),
      allow(["npx"]),
      allow(["find"]),
      allow(["python3"]),
      allow(["node"]),
      allow(["ssh"]),
    ];
    for (const command of [
      "sudo ls",
      "env ls",
      "xargs ls",
      "npx cowsay",
      "find . -exec rm {} ;",
      "find . -delete",
      "python3 -c 'import os'",
      "node -e 1",
      "ssh host ls",
    ]) {
      expect(await judge(rules, exec(command)), command).toBeNull();
    }
    // Closed world (issue 22): a prefix on a program not in the table covers its exact words only.
    expect(await judge(rules, exec("python3 script.py"))).toBeNull();
    expect(await judge(rules, exec("find . -name x"))).toBeNull();
    expect(await judge(rules, exec("python3"))).toBe("allow");
  });
  it("never lets an allow on git cover options that change what runs or write files", async () => {
    const rules = [allow(["git"]), allow(["git", "status"]), allow(["git", "diff"]), allow(["npm", "test"])];
    for (const command of [
      "git -c core.pager=evil status",
      "git -C /tmp/evil status",
      "git --exec-path=/tmp status",
      "git diff --output=/tmp/x",
      "git diff --ext-diff",
      "git status *",
      "npm test --script-shell=/tmp/evil",
      "npm test --prefix /tmp/evil",
    ]) {
      expect(await judge(rules, exec(command)), command).toBeNull();
    }
    expect(await judge(rules, exec("git log --oneline"))).toBe("allow");
    expect(await judge(rules, exec("npm test"))).toBe("allow");
    // Closed world (issue 22): global options before the subcommand, and `--` passthrough, are asked.
    expect(await judge(rules, exec("git --no-pager log"))).toBeNull();
    expect(await judge(rules, exec("npm test -- --watch=false"))).toBeNull();
  });
});

describe("normalise before matching a reject; when in doubt, a reject applies", () => {
  const rules = [allow(["ls"]), reject(["git", "push"])];
  it("TC-18: a reject on git push matches it inside wrappers, shell scripts and commands the parser cannot judge", async () => {
    for (const command of [
      "sudo git push",
      "env X=1 git -C . push",
      "bash -c 'git push'",
      "sh -c 'git --no-pager push'",
      "ssh host 'git push'",
      "ls $(git push)",
      "eval git push",
      "git {push,x}",
      "git --unknown-flag push",
      "git --unknown value push",
    ]) {
      expect(
        await judge(
          [...rules, { id: "x", decision: "allow", matcher: { type: "exact", hash: await exactHash(exec(command)) } }],
          exec(command),
        ),
        command,
      ).toBe("reject");
    }
  });
  it("a reject derived from git --no-pager push covers every spelling of git push", async () => {
    const r = deriveRule({
      toolCall: exec("git --no-pager push --force"),
      optionKind: "reject_always",
      optionName: "",
      cwd: "/projects/demo",
      agent: "demo",
      exactHash: "a".repeat(64),
    });
    expect(r && "matcher" in r ? r.matcher : null).toEqual({ type: "command", prefix: ["git", "push"] });
  });
});

describe("derive narrowly", () => {
  it("TC-19: derives a prefix only for the table's programs and safe forms, with a description that says what it covers", async () => {
    expect((await remembered(exec("git status --short"))).matcher).toEqual({ type: "command", prefix: ["git", "status"] });
    expect((await remembered(exec("npm run build"))).matcher).toEqual({ type: "command", prefix: ["npm", "run", "build"] });
    expect((await remembered(exec("ls -la"))).matcher).toEqual({ type: "command", prefix: ["ls"] });
    const d = await remembered(exec("git status"));
    expect(d.description).toBe(
      "Always allow `git status` with read-only options only, and paths inside the project, in /projects/demo (agent demo)",
    );
    for (const [command, argv] of [
      ["git push origin main", ["git", "push", "origin", "main"]],
      ["git branch -D main", ["git", "branch", "-D", "main"]],
      ["git -c a=b status", ["git", "-c", "a=b", "status"]],
      ["make SHELL=/bin/evil test", ["make", "SHELL=/bin/evil", "test"]],
      ["curl https://example.com", ["curl", "https://example.com"]],
      ["timeout 5 npm test", ["timeout", "5", "npm", "test"]],
    ] as const) {
      const rule = await remembered(exec(command));
      expect(rule.matcher, command).toEqual({ type: "argv", argv });
      expect(rule.description).toContain("nothing more");
    }
  });
  it("a session whose cwd is / or a home directory never yields a prefix, directory or tool rule", async () => {
    for (const cwd of ["/", "/root", "/home/alice", "/Users/bob"]) {
      expect((await remembered(exec("git status"), { cwd })).matcher.type, cwd).toBe("argv");
      const file = `${cwd === "/" ? "" : cwd}/a.txt`;
      const edit = { toolCallId: "t", kind: "edit", locations: [{ path: file }] };
      // The file itself, never its directory.
      expect((await remembered(edit, { cwd, optionName: "Always allow in this directory" })).matcher, cwd).toEqual({
        type: "path",
        kinds: ["edit"],
        glob: file,
      });
      const tool = { toolCallId: "t", kind: "other", name: "mcp__x__y", rawInput: {} };
      expect((await remembered(tool, { cwd })).matcher.type, cwd).toBe("exact");
    }
  });
});

describe("exact means the whole operation", () => {
  it("an exact rule covers only the same paths, diffs and command", async () => {
    const edit = (path: string, newText: string) => ({
      toolCallId: "t",
      kind: "edit",
      content: [{ type: "diff", path, oldText: "a", newText }],
    });
    expect(await exactHash(edit("/p/a", "x"))).not.toBe(await exactHash(edit("/p/a", "y")));
    expect(await exactHash(edit("/p/a", "x"))).not.toBe(await exactHash(edit("/p/b", "x")));
    expect(await exactHash({ kind: "execute", rawInput: { command: "ls", args: ["a"] } })).not.toBe(
      await exactHash({ kind: "execute", rawInput: { command: "ls", args: ["b"] } }),
    );
  });
  it("an operation with nothing to identify it is never remembered, and the reason says so", () => {
    const r = deriveRule({
      toolCall: { toolCallId: "t", kind: "edit" },
      optionKind: "allow_always",
      optionName: "",
      cwd: "/projects/demo",
      agent: "demo",
      exactHash: "a".repeat(64),
    });
    expect(r).toHaveProperty("reason");
    expect(r && "reason" in r ? r.reason : "").toMatch(/nothing that identifies/);
  });
});

describe("one description of an operation", () => {
  it("understands {command, args}, argv arrays, plain strings and cwd/workdir", () => {
    expect(describeOperation({ kind: "execute", rawInput: { command: "git", args: ["status"], cwd: "sub" } }, "/p")).toMatchObject({
      command: "git status",
      workdir: "/p/sub",
      commands: [{ argv: ["git", "status"] }],
    });
    expect(describeOperation({ kind: "execute", rawInput: { command: ["bash", "-lc", "ls"], workdir: "/etc" } }, "/p")).toMatchObject({
      workdir: "/etc",
      commands: [{ argv: ["ls"] }],
    });
    expect(describeOperation({ kind: "execute", rawInput: "ls" }, "/p").command).toBe("ls");
    expect(operationSummary({ kind: "edit", locations: [{ path: "/p/a" }] }, "/p")).toBe("/p/a");
  });
  it("TC-21: a rule scoped to a project never covers a command whose working directory is elsewhere", async () => {
    const rules: Rule[] = [{ ...allow(["ls"]), scope: { project: "/projects/demo" } }];
    expect(await judge(rules, exec("ls"))).toBe("allow");
    expect(await judge(rules, exec("ls", { cwd: "/projects/demo/src" }))).toBeNull(); // issue 35: only where approved
    expect(await judge(rules, exec("ls", { cwd: "/etc" }))).toBeNull();
    expect(await judge(rules, exec("ls", { workdir: "../other" }))).toBeNull();
    expect(await judge(rules, exec("ls", { cwd: 42 }))).toBeNull();
  });
});
