// Four eyes (protocol/people/four-eyes.ts, decision 0028): which operations the tenant's policy holds
// for a second person, read from the rules engine's parse of the command (never its raw text), and
// failing closed on whatever that parse cannot read.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { FourEyesOperation, FourEyesSettings } from "../../../core/principal";
import { describeOperation } from "../../../protocol/operation";
import { POLICY_UNKNOWN, fourEyesNeed } from "../../../protocol/people/four-eyes";

const RUNS = Number(process.env.FUZZ_RUNS ?? 500);
const CWD = "/projects/app";
const run = (command: unknown, extra: Record<string, unknown> = {}) =>
  describeOperation({ kind: "execute", rawInput: command, ...extra }, CWD);
const need = (policy: FourEyesSettings, command: unknown) => fourEyesNeed(policy, run(command));

const RM: FourEyesSettings = { operations: [{ program: "rm" }] };
const PUSH: FourEyesSettings = { operations: [{ prefix: ["git", "push"], require: "two_approvals" }] };
const PROD: FourEyesSettings = { operations: [{ path: "/srv/prod/**" }] };

describe("four eyes: by program", () => {
  it.each([
    ["rm -rf build", true],
    ["/usr/bin/rm x", true],
    ["ls && rm x", true],
    ["bash -lc 'rm x'", true],
    ["echo rm", false],
    ["git status", false],
    ["ls | grep rm", false],
  ])("%s needs four eyes: %s", (command, held) => {
    expect(need(RM, command) !== null).toBe(held);
  });

  it("holds a command it cannot read (an expansion) and a wrapper or interpreter that runs other code", () => {
    for (const command of ["$(echo rm) x", "sudo rm x", "env rm x", "python3 -c 'import os'", "xargs rm < list", "r* x"])
      expect(need(RM, command)).toMatchObject({ require: "not_prompter" });
  });

  it("reads argv shapes too: { command, args }, argv arrays", () => {
    expect(need(RM, { command: "rm", args: ["-r", "x"] })).not.toBeNull();
    expect(need(RM, ["bash", "-lc", "rm -f y"])).not.toBeNull();
    expect(need(RM, { argv: ["ls"] })).toBeNull();
  });

  it("an operation with no command is no program's", () => {
    expect(fourEyesNeed(RM, describeOperation({ kind: "read", locations: [{ path: "/projects/app/x" }] }, CWD))).toBeNull();
  });
});

describe("four eyes: by prefix", () => {
  it("matches the argv prefix as bash runs it, and asks two approvals", () => {
    expect(need(PUSH, "git push origin main")).toEqual({ require: "two_approvals", why: expect.stringMatching(/git push/) });
    expect(need(PUSH, "git pull")).toBeNull();
    expect(need(PUSH, "git 'push'")).not.toBeNull();
  });

  it("carries the tenant's keysApprove to the answer, and nothing when it is not true (people count)", () => {
    expect(need({ ...PUSH, keysApprove: true }, "git push")).toMatchObject({ keysApprove: true });
    expect(need({ ...PUSH, keysApprove: false }, "git push")).not.toHaveProperty("keysApprove");
    expect(need(PUSH, "git push")).not.toHaveProperty("keysApprove");
    expect(need({ ...PUSH, keysApprove: true }, "git pull")).toBeNull();
  });

  it("the strictest entry that applies wins", () => {
    const both: FourEyesSettings = { operations: [{ program: "git" }, { prefix: ["git", "push"], require: "two_approvals" }] };
    expect(fourEyesNeed(both, run("git push"))?.require).toBe("two_approvals");
    expect(fourEyesNeed(both, run("git status"))?.require).toBe("not_prompter");
  });
});

describe("four eyes: by kind and path", () => {
  it("a kind entry holds every call of that kind", () => {
    const policy: FourEyesSettings = { operations: [{ kind: "delete" }] };
    expect(fourEyesNeed(policy, describeOperation({ kind: "delete", locations: [{ path: "/a" }] }, CWD))).not.toBeNull();
    expect(fourEyesNeed(policy, describeOperation({ kind: "edit", locations: [{ path: "/a" }] }, CWD))).toBeNull();
  });

  it("a path entry holds calls that touch it: locations, diffs, and the paths a command names, resolved", () => {
    const edit = (path: string) => describeOperation({ kind: "edit", content: [{ type: "diff", path, newText: "" }] }, CWD);
    expect(fourEyesNeed(PROD, edit("/srv/prod/app.env"))).not.toBeNull();
    expect(fourEyesNeed(PROD, edit("/srv/staging/../prod/app.env"))).not.toBeNull();
    expect(fourEyesNeed(PROD, edit("/srv/staging/app.env"))).toBeNull();
    expect(need(PROD, "rm /srv/prod/db.sqlite")).not.toBeNull();
    expect(need(PROD, "cat ../../srv/prod/secret")).not.toBeNull();
    expect(need(PROD, { command: "rm data.db", cwd: "/srv/prod" })).not.toBeNull();
    expect(need(PROD, "rm build/out.js")).toBeNull();
  });

  it("holds a call whose path cannot be resolved", () => {
    expect(fourEyesNeed(PROD, describeOperation({ kind: "edit", locations: [{ path: "relative/x" }] }, CWD))).not.toBeNull();
    expect(need(PROD, "rm ~/x")).not.toBeNull();
  });
});

describe("four eyes: properties", () => {
  it("no policy, or an empty one, holds nothing; a policy that could not be read holds everything", () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom("execute", "edit", "read", "other"), (command, kind) => {
        const op = describeOperation({ kind, rawInput: command }, CWD);
        expect(fourEyesNeed(undefined, op)).toBeNull();
        expect(fourEyesNeed({ operations: [] }, op)).toBeNull();
        expect(fourEyesNeed(POLICY_UNKNOWN, op)).toMatchObject({ require: "not_prompter" });
      }),
      { numRuns: RUNS },
    );
  });

  it("a policy no API would store (a row written by hand) holds every operation", () => {
    // SAFETY: the settings row is read as JSON; these are shapes the settings API refuses.
    for (const bad of [
      { operations: "rm" },
      { operations: [null] },
      { operations: [{ prefix: "git push" }] },
      { operations: [{ require: "one" }] },
    ] as unknown as FourEyesSettings[])
      expect(fourEyesNeed(bad, run("ls"))).toMatchObject({ require: "not_prompter" });
  });

  it("adding an entry never releases an operation another entry holds (monotone)", () => {
    const entries = fc.constantFrom<FourEyesOperation>(
      { program: "rm" },
      { prefix: ["git", "push"] },
      { path: "/srv/**" },
      { kind: "delete" },
      { program: "curl", require: "two_approvals" },
    );
    fc.assert(
      fc.property(
        fc.array(entries, { maxLength: 3 }),
        entries,
        fc.constantFrom("rm x", "git push", "curl /srv/x", "ls", "$(x)"),
        (base, extra, command) => {
          const before = need({ operations: base }, command);
          const after = need({ operations: [...base, extra] }, command);
          if (before !== null) expect(after).not.toBeNull();
          if (before?.require === "two_approvals") expect(after?.require).toBe("two_approvals");
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a program is found however the command spells it: quotes, a path, a bash -c wrapper", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("rm", "'rm'", '"rm"', "/bin/rm", "\\rm"),
        fc.constantFrom("", "bash -c ", "bash -lc "),
        (spelled, wrap) => {
          const inner = `${spelled} -f x`;
          const command = wrap === "" ? inner : `${wrap}${JSON.stringify(inner)}`;
          expect(need(RM, command)).not.toBeNull();
        },
      ),
      { numRuns: RUNS },
    );
  });
});
