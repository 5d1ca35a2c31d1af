// Issue 35 for the rules engine: a tool's name is never a rule by itself, prefix rules apply only in
// the directory where they were approved (git only in the project's own repository), `make -j` only
// with a number. Every example of the issue that the engine decides is a named test, with variants.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Rule, compileRules, decide, exactHash } from "../../../protocol/rules";
import { OPTIONS, PROJECT, allow, derive, exec, judge, reject, remembered } from "./engine-fixture";

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const edit = (path: string) => ({ toolCallId: "t", kind: "edit", locations: [{ path: `${PROJECT}/${path}` }] });
/** "Always allow all files in this directory" on an ordinary edit at the project's root. */
const DIRECTORY: Rule = {
  id: "dir",
  decision: "allow",
  scope: { project: PROJECT },
  matcher: { type: "path", kinds: ["edit"], glob: `${PROJECT}/**` },
};
const COMMANDS = [
  allow(["make", "test"]),
  allow(["make", "check"]),
  allow(["git", "status"]),
  allow(["git", "diff"]),
  allow(["git", "ls-files"]),
  allow(["git", "blame"]),
  allow(["git", "show"]),
  allow(["git", "log"]),
  allow(["npm", "test"]),
  allow(["cargo", "check"]),
];

const mcp = (name: string, rawInput: unknown, kind = "other") => ({ toolCallId: "t", kind, name, rawInput });

describe("issue 35: a tool's name is never a rule by itself", () => {
  it("an always on one call of a named MCP tool stores that exact call: another input of the same tool is asked", async () => {
    const first = mcp("mcp__github__create_issue", { repo: "acme/app", title: "typo" });
    const rule = await remembered(first);
    expect(rule.matcher.type).toBe("exact");
    expect(rule.description).toMatch(/exactly this call of the other tool mcp__github__create_issue, with this exact input/);
    expect(await judge([rule], first)).toBe("allow");
    expect(await judge([rule], mcp("mcp__github__create_issue", { repo: "acme/app", title: "typo", body: "x" }))).toBeNull();
    expect(await judge([rule], mcp("mcp__github__create_issue", { repo: "acme/secret", title: "typo" }))).toBeNull();
  });

  it("a web fetch: an always on one URL never covers another URL, or the same URL under another kind or name", async () => {
    const fetch = mcp("WebFetch", { url: "https://docs.example/a" }, "fetch");
    const rule = await remembered(fetch);
    expect(await judge([rule], fetch)).toBe("allow");
    expect(await judge([rule], mcp("WebFetch", { url: "https://evil.example/?k=secret" }, "fetch"))).toBeNull();
    expect(await judge([rule], mcp("WebFetch2", { url: "https://docs.example/a" }, "fetch"))).toBeNull();
    expect(await judge([rule], mcp("WebFetch", { url: "https://docs.example/a" }, "other"))).toBeNull();
  });

  it("the exact call is keyed on the agent too, and its input is normalised (key order does not matter)", async () => {
    const rule = await remembered(mcp("mcp__x__y", { a: 1, b: [2, 3] }));
    expect(rule.scope?.agent).toBe("demo");
    expect(await judge([rule], mcp("mcp__x__y", { b: [2, 3], a: 1 }))).toBe("allow");
    const other = decide(compileRules([rule]), {
      toolCall: mcp("mcp__x__y", { a: 1, b: [2, 3] }),
      options: OPTIONS,
      cwd: PROJECT,
      agent: "another-agent",
      now: 1,
      exactHash: await exactHash(mcp("mcp__x__y", { a: 1, b: [2, 3] })),
    });
    expect(other.decision).toBeNull();
  });

  it("property: no always, allow or reject, on any named tool of any kind yields a tool rule", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("other", "fetch", "think", "search", "switch_mode", "made_up"),
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.jsonValue(),
        fc.constantFrom("allow_always", "reject_always"),
        fc.constantFrom("/srv/proj-a", "/", "/root"),
        async (kind, name, rawInput, optionKind, cwd) => {
          const r = await derive(mcp(name, rawInput, kind), { optionKind, cwd });
          if (r && !("reason" in r)) expect(r.matcher.type).toBe("exact");
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("property: an allow tool rule posted through the API answers no call; a reject tool rule still does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 12 }), fc.jsonValue(), fc.boolean(), async (name, rawInput, named) => {
        const call = mcp(name, rawInput);
        const matcher = { type: "tool", kind: "other", ...(named ? { name } : {}) } as const;
        expect(await judge([{ id: "a", decision: "allow", matcher }], call)).toBeNull();
        expect(await judge([{ id: "r", decision: "reject", matcher }], call)).toBe("reject");
      }),
      { numRuns: RUNS },
    );
  });
});

describe("issue 35: two automatic steps — prefix rules apply in the directory where they were approved", () => {
  it("the precondition: at the project's root the rules answer the commands and an ordinary edit", async () => {
    for (const command of ["make test", "git status", "git diff", "npm test", "cargo check"])
      expect(await judge(COMMANDS, exec(command)), command).toBe("allow");
    expect(await judge([DIRECTORY], edit("src/a.c"))).toBe("allow");
  });

  it("writes Makefile.sh, runs make test: the edit is asked (make remakes the Makefile from it)", async () => {
    for (const path of ["Makefile.sh", "makefile.sh", "GNUmakefile.sh", "Makefile.c", "Makefile,v", "RCS/Makefile,v", "SCCS/s.Makefile"])
      expect(await judge([DIRECTORY], edit(path)), path).toBeNull();
  });

  it("writes sub/Makefile.sh, runs make check with cwd sub: both are asked", async () => {
    expect(await judge([DIRECTORY], edit("sub/Makefile.sh"))).toBeNull();
    expect(await judge(COMMANDS, exec("make check", { cwd: "sub" }))).toBeNull();
    expect(await judge(COMMANDS, exec("make check", { cwd: `${PROJECT}/sub` }))).toBeNull();
  });

  it("writes config.mak, included by the Makefile, runs make test: the edit is asked", async () => {
    for (const path of ["config.mak", "build/rules.mak", "rules.mk"]) expect(await judge([DIRECTORY], edit(path)), path).toBeNull();
  });

  it("writes a bare-layout repository under docs/notes, runs git status / diff / ls-files / blame there: asked", async () => {
    expect(await judge([DIRECTORY], edit("docs/notes/HEAD"))).toBeNull();
    for (const command of ["git status", "git diff", "git ls-files", "git blame a.txt", "git show", "git log -p"])
      expect(await judge(COMMANDS, exec(command, { cwd: "docs/notes" })), command).toBeNull();
  });

  it("writes a file under node_modules, runs npm test in it or in a vendored tree: asked", async () => {
    expect(await judge([DIRECTORY], edit("node_modules/left-pad/index.js"))).toBeNull();
    for (const cwd of ["node_modules/left-pad", "vendor/lib", "third_party/x", "sub/node_modules/y"])
      expect(await judge(COMMANDS, exec("npm test", { cwd })), cwd).toBeNull();
  });

  it("git only in the project's own repository: -C, --git-dir, --work-tree, GIT_DIR elsewhere are asked", async () => {
    for (const command of [
      "git -C docs/notes status",
      "git -C /srv/other status",
      "git --git-dir=docs/notes status",
      "git --git-dir docs/notes status",
      "git --work-tree=/srv/other status",
      "GIT_DIR=docs/notes git status",
      "env GIT_DIR=docs/notes git status",
      "git status -C docs/notes",
      "git -c core.fsmonitor=x status",
    ])
      expect(await judge(COMMANDS, exec(command)), command).toBeNull();
  });

  it("an always asked in a subdirectory or a dependency tree stores no allow (it would never apply), and says why", async () => {
    for (const cwd of ["sub", "docs/notes", "node_modules/x"]) {
      const r = await derive(exec("git status", { cwd }));
      expect(r && "reason" in r ? r.reason : r, cwd).toMatch(/applies only in the directory it was approved in \(\/srv\/proj-a\)/);
    }
    expect((await remembered(exec("git status", { cwd: "." }))).matcher).toEqual({ type: "command", prefix: ["git", "status"] });
    // A reject asked there is remembered, and applies everywhere.
    const r = await derive(exec("git push", { cwd: "sub" }), { optionKind: "reject_always" });
    expect(r && !("reason" in r) ? r.matcher : r).toEqual({ type: "command", prefix: ["git", "push"] });
  });

  it("rejects keep matching everywhere: in a subdirectory, a dependency tree, anywhere in the project", async () => {
    for (const cwd of [".", "sub", "node_modules/x", "docs/notes"])
      expect(await judge([...COMMANDS, reject(["git", "push"])], exec("git push", { cwd })), cwd).toBe("reject");
  });

  it("property: no allow command rule covers a command run in any directory but the rule's own; a reject does", async () => {
    const segment = fc.constantFrom("sub", "src", "docs", "notes", "node_modules", "vendor", "a b", "x.y");
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { minLength: 1, maxLength: 4 }),
        fc.constantFrom("git status", "git diff", "make test", "npm test", "cargo check", "ls", "pwd"),
        fc.boolean(),
        async (segments, command, absolute) => {
          const dir = segments.join("/");
          const cwd = absolute ? `${PROJECT}/${dir}` : dir;
          const rules = [...COMMANDS, allow(["ls"]), allow(["pwd"]), allow(command.split(" "), null)];
          expect(await judge(rules, exec(command))).toBe("allow");
          expect(await judge(rules, exec(command, { cwd }))).toBeNull();
          expect(await judge([...rules, reject(command.split(" "))], exec(command, { cwd }))).toBe("reject");
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("property: a directory edit rule never covers a file that makes make remake its makefile, or git find a repository", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("sub", "docs", "notes", "src"), { maxLength: 3 }),
        fc.constantFrom("Makefile", "makefile", "GNUmakefile"),
        fc.constantFrom(".sh", ".c", ".o", ",v", ".y", ".anything"),
        async (dirs, name, suffix) => {
          const base = dirs.length > 0 ? `${dirs.join("/")}/` : "";
          expect(await judge([DIRECTORY], edit(`${base}${name}${suffix}`))).toBeNull();
          expect(await judge([DIRECTORY], edit(`${base}HEAD`))).toBeNull();
          expect(await judge([DIRECTORY], edit(`${base}notes.txt`))).toBe("allow");
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe("issue 35: make -j covered only with a number", () => {
  it("make test -j (unbounded jobs) is asked; make test -j N with a small N is covered", async () => {
    const rules = [allow(["make", "test"]), allow(["cargo", "build"])];
    for (const command of [
      "make test -j",
      "make test --jobs",
      "make test -j0",
      "make test -j 0",
      "make test --jobs=0",
      "make test -j 999999",
      "make test -j -s",
      "make test -j test",
      "make test -sj",
      "make test -sj4",
      "make test -j4x",
      "make test --jobs=",
      "cargo build -j",
      "cargo build -j 0",
      "cargo build --jobs 100000",
      "cargo build -j -1",
    ])
      expect(await judge(rules, exec(command)), command).toBeNull();
    for (const command of [
      "make test -j4",
      "make test -j 4",
      "make test --jobs=8",
      "make test --jobs 2",
      "cargo build -j 4",
      "cargo build --jobs 2",
    ])
      expect(await judge(rules, exec(command)), command).toBe("allow");
  });

  it("the rule's description says so", async () => {
    expect((await remembered(exec("make test -j4"))).description).toMatch(/-j N \(N from 1 to 64\)/);
  });

  it("property: a jobs value is covered exactly when it is a count from 1 to 64", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.integer({ min: -5, max: 200 }).map(String), fc.string({ maxLength: 4 })),
        fc.constantFrom("-j", "--jobs="),
        async (value, option) => {
          const covered = /^[1-9][0-9]?$/.test(value) && Number(value) <= 64;
          const argv = option === "-j" ? ["make", "test", "-j", value] : ["make", "test", `--jobs=${value}`];
          expect(await judge([allow(["make", "test"])], exec(argv)), argv.join(" ")).toBe(covered ? "allow" : null);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe("issue 35: a path reject holds a call that names any path it matches", () => {
  const ETC: Rule = { id: "no etc", decision: "reject", matcher: { type: "path", glob: "/etc/**" } };
  const twoFiles = (paths: string[]) => ({
    toolCallId: "t",
    kind: "edit",
    locations: paths.map((path) => ({ path })),
  });

  it("an edit naming /etc/shadow beside a project file is rejected, not only asked", async () => {
    expect(await judge([DIRECTORY, ETC], twoFiles([`${PROJECT}/src/a.ts`, "/etc/shadow"]))).toBe("reject");
  });

  it("an edit naming only project files is not held by it", async () => {
    expect(await judge([DIRECTORY, ETC], twoFiles([`${PROJECT}/src/a.ts`, `${PROJECT}/src/b.ts`]))).toBe("allow");
  });

  it("property: whenever any named path is under the rejected directory, the call is rejected", async () => {
    const name = fc.stringMatching(/^[a-z]{1,8}$/);
    await fc.assert(
      fc.asyncProperty(fc.array(name, { minLength: 0, maxLength: 3 }), name, fc.nat(3), async (inProject, secret, at) => {
        const paths = inProject.map((n) => `${PROJECT}/src/${n}.ts`);
        paths.splice(Math.min(at, paths.length), 0, `/etc/${secret}`);
        expect(await judge([DIRECTORY, ETC], twoFiles(paths))).toBe("reject");
      }),
      { numRuns: RUNS },
    );
  });
});
