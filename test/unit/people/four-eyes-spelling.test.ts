// Issue 35: four eyes on the same grammar as rejects. Every example of the issue's "Four eyes reads a
// literal prefix" paragraph is a named test — each spelling the tools accept, each path-taking form,
// each step that defines what a later step runs — with property tests for their variants, and no
// "always" yielding a rule that covers a held operation (allowRuleCoversHeld, deriveRule's fourEyes).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FourEyesSettings } from "../../../core/principal";
import { describeOperation } from "../../../protocol/operation";
import { allowRuleCoversHeld, fourEyesNeed } from "../../../protocol/people/four-eyes";
import { type DerivedRule, type Rule, compileRules, decide, deriveRule, exactHash } from "../../../protocol/rules";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const CWD = "/projects/app";
const call = (command: unknown, extra: Record<string, unknown> = {}) => ({
  toolCallId: "t",
  kind: "execute",
  rawInput: { command, ...extra },
});
const run = (command: unknown, extra: Record<string, unknown> = {}) => describeOperation(call(command, extra), CWD);
const held = (policy: FourEyesSettings, command: unknown, extra: Record<string, unknown> = {}) =>
  fourEyesNeed(policy, run(command, extra)) !== null;

const PUSH: FourEyesSettings = { operations: [{ prefix: ["git", "push"] }] };
const FORCE: FourEyesSettings = { operations: [{ prefix: ["git", "push", "--force"], require: "two_approvals" }] };
const PUBLISH: FourEyesSettings = { operations: [{ prefix: ["npm", "publish"] }] };
const PROD: FourEyesSettings = { operations: [{ path: "/srv/prod/**" }] };

describe("issue 35: four eyes reads every spelling the tool accepts", () => {
  it.each(["git -C . push", "git --no-pager push", "git -c color.ui=never push", "git -P push --force"])(
    "the prompter does not approve %s alone under a policy on git push",
    (command) => {
      expect(held(PUSH, command)).toBe(true);
    },
  );

  it("git -P push --force is held by a policy on git push --force, as are -f, +main and --force-with-lease", () => {
    for (const command of [
      "git -P push --force",
      "git push -f",
      "git push origin +main",
      "git --no-pager push --force-with-lease",
      "git push --forc",
    ])
      expect(fourEyesNeed(FORCE, run(command))?.require, command).toBe("two_approvals");
    expect(held(FORCE, "git push origin main")).toBe(false);
  });

  it.each(["npm publis", "npm -s publish", "npm --loglevel silent publish"])(
    "the prompter does not approve %s alone under a policy on npm publish",
    (command) => {
      expect(held(PUBLISH, command)).toBe(true);
    },
  );

  it("what is not the policy's command is not held: git status, git pull, npm test, npm run build", () => {
    for (const command of ["git status", "git log --oneline", "git pull", "git -C . status"])
      expect(held(PUSH, command), command).toBe(false);
    for (const command of ["npm test", "npm run build", "npm -s test", "npm install"]) expect(held(PUBLISH, command), command).toBe(false);
  });

  it("property: any git global options before push, any arguments after it, are held", () => {
    const global = fc.constantFrom(
      "-C .",
      "-C /tmp",
      "--no-pager",
      "-P",
      "-p",
      "-c color.ui=never",
      "--git-dir=.git",
      "--work-tree=.",
      "--bare",
      "--literal-pathspecs",
      "-c user.name=x",
    );
    fc.assert(
      fc.property(
        fc.array(global, { maxLength: 4 }),
        fc.constantFrom("", " origin main", " --force", " -u origin HEAD", " --all"),
        (globals, args) => {
          expect(held(PUSH, `git ${globals.join(" ")} push${args}`)).toBe(true);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("property: every abbreviation of publish, behind any npm config options, is held", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 3, max: 7 }),
        fc.array(
          fc.constantFrom("-s", "--silent", "--loglevel silent", "--loglevel=silent", "-d", "--registry https://r.example", "--dry-run"),
          { maxLength: 3 },
        ),
        (length, options) => {
          expect(held(PUBLISH, `npm ${options.join(" ")} ${"publish".slice(0, length)}`)).toBe(true);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe("issue 35: a path policy on /srv/prod/** meets the directory itself and every path-taking form", () => {
  it.each([
    "cp x /srv/prod/",
    "dd of=/srv/prod/db",
    "make -C/srv/prod install",
    "tar -xf p -C/srv/prod",
    "curl -o/srv/prod/app.js https://example.com/app.js",
    "find /srv/prod -delete",
    "rsync -a p/ /srv/prod",
    "git -C /srv/prod push",
  ])("the prompter does not approve %s alone", (command) => {
    expect(held(PROD, command)).toBe(true);
  });

  it("more forms: --opt=value, a cluster ending in -C, relative words, an ancestor, the workdir itself", () => {
    for (const [command, extra] of [
      ["curl --output=/srv/prod/app.js https://example.com", {}],
      ["tar -xzC/srv/prod -f p.tgz", {}],
      ["cp x ../../srv/prod", {}],
      ["rm -rf /srv", {}],
      ["rm -rf /", {}],
      ["rm -rf db", { cwd: "/srv/prod" }],
      ["ls", { cwd: "/srv/prod/app" }],
      ["ssh host:/srv/prod x", {}],
      ["/srv/prod/deploy.sh", {}],
      ["cp x ~/y", {}],
      ["dd of=~/y", {}],
    ] as const)
      expect(held(PROD, command, extra), command).toBe(true);
  });

  it("a command too long to read as paths is held (a bounded reading), and reading it stays fast", () => {
    expect(held(PROD, `cp x -o${"a".repeat(5000)}`)).toBe(true);
    const started = performance.now();
    expect(held(PROD, `cp ${Array.from({ length: 200 }, () => `-x${"=a,".repeat(1300)}`).join(" ")} y`)).toBe(true);
    expect(held(PROD, `cp ${Array.from({ length: 200 }, () => "-v").join(" ")} a b`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("paths elsewhere are not held: a sibling with the same prefix, the project, a URL", () => {
    for (const command of [
      "cp x /srv/production",
      "rm -rf build",
      "make -C sub test",
      "curl -o out.js https://example.com/srv/prod/x",
      "ls -la src",
    ])
      expect(held(PROD, command), command).toBe(false);
  });

  it("property: a path under /srv/prod, written in any path-taking form, absolute or relative, is held", () => {
    const tail = fc.array(fc.constantFrom("db", "app", "a.js", "x y", ".env", "..", "."), { maxLength: 3 });
    const form = fc.constantFrom(
      "cp x {}",
      "dd of={}",
      "make -C{} t",
      "tar -xf p -C{}",
      "curl -o{} u",
      "wget --output-document={} u",
      "rsync -a p/ {}",
      "git -C {} push",
      "find {} -delete",
      "cat {}",
      "x --a=b,{}",
    );
    fc.assert(
      fc.property(tail, form, fc.boolean(), (segments, template, relative) => {
        const resolved = `/srv/prod/${segments.join("/")}`;
        // A path that leaves /srv/prod by `..` is not under it: only check paths that stay there.
        fc.pre(!segments.includes(".."));
        const path = relative ? `../..${resolved}` : resolved;
        expect(held(PROD, template.replace("{}", `'${path}'`)), template).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });
});

describe("issue 35: a step that defines what a later step runs is held as that step would be", () => {
  it("in two steps: git config alias.pub push, then git pub origin main — both held", () => {
    expect(held(PUSH, "git config alias.pub push")).toBe(true);
    expect(held(PUSH, "git pub origin main")).toBe(true);
  });

  it("git config of an alias or include in any spelling is held whenever the policy names git", () => {
    for (const command of [
      "git config --global alias.x '!git push'",
      "git config ALIAS.pub push",
      "git config --add alias.pub push",
      "git config set alias.pub push",
      "git -C . config alias.pub push",
      "git --no-pager config --file .git/config alias.pub push",
      "git config include.path /tmp/evil",
      "git config includeIf.onbranch:main.path /tmp/evil",
      "git config -e",
      "git config --edit --global",
      "git -c alias.p=push p",
    ])
      expect(held(PUSH, command), command).toBe(true);
    expect(held(PUSH, "git config user.name x")).toBe(false);
    expect(held({ operations: [{ program: "rm" }] }, "git config alias.pub push")).toBe(false);
  });

  it("npm config, npm set and npm pkg (script-shell, scripts) are held whenever the policy names npm", () => {
    for (const command of [
      "npm config set script-shell /tmp/evil",
      "npm set script-shell=/tmp/evil",
      "npm c set x y",
      "npm pkg set scripts.test='npm publish'",
    ])
      expect(held(PUBLISH, command), command).toBe(true);
  });

  it("writing scripts/release.sh, chmod +x, running it: the run is held (what it runs was written, not read)", () => {
    const write = describeOperation({ toolCallId: "t", kind: "edit", locations: [{ path: `${CWD}/scripts/release.sh` }] }, CWD);
    expect(fourEyesNeed(PUSH, write)).toBeNull(); // nothing runs yet
    expect(held(PUSH, "chmod +x scripts/release.sh")).toBe(false);
    for (const command of [
      "./scripts/release.sh",
      "scripts/release.sh",
      `${CWD}/scripts/release.sh`,
      "bash scripts/release.sh",
      "sh ./scripts/release.sh",
    ])
      expect(held(PUSH, command), command).toBe(true);
    expect(held(PUSH, "/usr/bin/git status")).toBe(false);
  });
});

describe("issue 35: no always yields a rule that covers a held operation", () => {
  const derive = async (toolCall: Record<string, unknown>, fourEyes: FourEyesSettings, optionName = "Always allow", cwd = CWD) =>
    deriveRule({ toolCall, optionKind: "allow_always", optionName, cwd, agent: "demo", exactHash: await exactHash(toolCall), fourEyes });
  const reason = (r: unknown) => (r && typeof r === "object" && "reason" in r ? (r as { reason: string }).reason : null);

  it("an always on a held spelling stores nothing: git -C . push, npm publis, dd of=/srv/prod/db", async () => {
    expect(reason(await derive(call("git -C . push"), PUSH))).toMatch(/^Not remembered: the tenant's four-eyes policy covers it/);
    expect(reason(await derive(call("npm publis"), PUBLISH))).toMatch(/^Not remembered:/);
    expect(reason(await derive(call("dd of=/srv/prod/db"), PROD))).toMatch(/^Not remembered:/);
    expect(reason(await derive(call("git config alias.pub push"), PUSH))).toMatch(/^Not remembered:/);
  });

  it("a prefix rule on a program the policy names is not made; one on another command is", async () => {
    expect(reason(await derive(call("git status"), { operations: [{ program: "git" }] }))).toMatch(
      /four-eyes policy covers it: it runs git/,
    );
    expect(reason(await derive(call("git status"), { operations: [{ prefix: ["git", "status", "--short"] }] }))).toMatch(/may run/);
    const made = await derive(call("git status"), PUSH);
    expect(made && !("reason" in made) ? made.matcher : made).toEqual({ type: "command", prefix: ["git", "status"] });
  });

  it("a rule whose reach meets a path policy is not made: ls in /srv (covers ls prod), a directory rule on /srv/prod", async () => {
    expect(reason(await derive(call("ls src"), PROD, "Always allow", "/srv"))).toMatch(/^Not remembered: .*it runs in \/srv\b/);
    const edit = (path: string) => ({ toolCallId: "t", kind: "edit", locations: [{ path }] });
    expect(reason(await derive(edit("/srv/app/a.txt"), PROD, "Always allow all files in this directory", "/srv/app"))).toBeNull();
    expect(reason(await derive(edit("/srv/prod/a/b.txt"), PROD, "Always allow all files in this directory", "/srv/prod"))).toMatch(
      /^Not remembered/,
    );
    expect(
      reason(await derive(edit("/projects/app/src/a.ts"), { operations: [{ kind: "edit" }] }, "Always allow all files in this directory")),
    ).toMatch(/four-eyes policy covers it: it is a edit operation/);
    // The file is not held, but the directory rule would reach one that is.
    const secret: FourEyesSettings = { operations: [{ path: "/projects/app/src/secret/**" }] };
    expect(reason(await derive(edit("/projects/app/src/a.ts"), secret, "Always allow all files in this directory"))).toMatch(
      /could cover an operation .*\/projects\/app\/src\/\*\* meets \/projects\/app\/src\/secret/,
    );
    const file = await derive(edit("/projects/app/src/a.ts"), secret);
    expect(file && !("reason" in file) ? file.matcher : file).toEqual({ type: "path", kinds: ["edit"], glob: "/projects/app/src/a.ts" });
  });

  it("a reject is always made, and a rule made without the policy is judged by allowRuleCoversHeld", async () => {
    const r = await deriveRule({
      toolCall: call("git -C . push"),
      optionKind: "reject_always",
      optionName: "",
      cwd: CWD,
      agent: "demo",
      exactHash: "0".repeat(64),
      fourEyes: PUSH,
    });
    expect(r && !("reason" in r) ? r.decision : r).toBe("reject");
    const rule: Rule = { id: "r", decision: "allow", scope: { project: CWD }, matcher: { type: "command", prefix: ["git", "status"] } };
    expect(allowRuleCoversHeld(rule, { operations: [{ program: "git" }] }, run("git status"))).not.toBeNull();
    expect(allowRuleCoversHeld(rule, PUSH, run("git status"))).toBeNull();
    expect(allowRuleCoversHeld(rule, undefined, run("git status"))).toBeNull();
    // SAFETY: a settings row no API would store is read as JSON; it must hold, so no rule is made.
    expect(allowRuleCoversHeld(rule, { operations: "x" } as unknown as FourEyesSettings, run("git status"))).not.toBeNull();
  });

  it("property: whenever four eyes holds an operation, the rule an always derives from it is refused", async () => {
    const policies: FourEyesSettings[] = [
      PUSH,
      FORCE,
      PUBLISH,
      PROD,
      { operations: [{ program: "git" }] },
      { operations: [{ program: "rm" }] },
    ];
    const commands = [
      "git status",
      "git -C . push",
      "git push",
      "npm test",
      "npm publis",
      "rm -rf build",
      "ls /srv/prod",
      "make test",
      "git pub",
      "./x.sh",
      "cp a b",
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...policies), fc.constantFrom(...commands), async (policy, command) => {
        const r = await derive(call(command), policy);
        const rule = r && !("reason" in r) ? (r as DerivedRule) : null;
        if (fourEyesNeed(policy, run(command)) !== null) expect(rule).toBeNull();
        // And a rule that was made never auto-allows an operation the policy holds (through decide).
        if (rule) {
          for (const other of commands) {
            const toolCall = call(other);
            const d = decide(compileRules([{ id: "d", ...rule }]), {
              toolCall,
              options: [{ optionId: "a", kind: "allow_once" }],
              cwd: CWD,
              agent: "demo",
              now: 1,
              exactHash: await exactHash(toolCall),
            });
            if (d.decision === "allow") expect(fourEyesNeed(policy, run(other)), `${command} → ${other}`).toBeNull();
          }
        }
      }),
      { numRuns: RUNS },
    );
  });
});
