// Effects that outlive their step (decision 0068): a command that leaves something running after its
// tool call completed is never answered by an allow rule, nor remembered. The pure judgment
// (protocol/outlives.ts, and the grammar's refusal of `&` in protocol/rules/shell.ts), then the same
// forms run for real: in a throwaway project whose Makefile's `test` recipe waits on a FIFO, each form
// returns (its step is over) while make still runs, and make writes the project after — the kernel,
// not a table, says the step was not the end of it. No sleeps: the FIFOs are the synchronisation.

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeOperation } from "../../protocol/operation";
import { outlivesItsStep } from "../../protocol/outlives";
import { parseCommands } from "../../protocol/rules";

const CWD = "/p";
const judged = (command: string) => outlivesItsStep(describeOperation({ kind: "execute", rawInput: { command } }, CWD));

describe("outlivesItsStep: what is never rule-answered because it may keep running", () => {
  it("a job sent to the background does not parse at all, however it is wrapped (null: a person is asked)", () => {
    for (const form of [
      "make test &",
      "make test & git status",
      "git status; make test &",
      "sh -c 'make test &'",
      "bash -c 'npm test & true'",
    ])
      expect(parseCommands(form), form).toBeNull();
    // Not a background job: `&&`, `|&` and `>&2` still parse.
    expect(parseCommands("make test && git status")?.map((c) => c.argv)).toEqual([
      ["make", "test"],
      ["git", "status"],
    ]);
    expect(parseCommands("make test |& grep x")).not.toBeNull();
    expect(parseCommands("echo x >&2")).not.toBeNull();
  });

  it("names the programs and options that detach, also behind a wrapper", () => {
    for (const form of [
      "nohup make test",
      "setsid -f make test",
      "sudo nohup make test",
      "env setsid make",
      "tmux new-session -d make test",
      "screen -dmS x make test",
      "systemd-run --user make",
      "at now",
      "daemonize /usr/bin/make",
      "git daemon --detach",
      "docker run -d img",
      "docker run -itd img",
      "docker compose up -d",
      "podman run --detach img",
      "npx jest --watch",
      "npm test -- --watchAll",
      "tsc --watch=true",
      "node server.js --daemon",
      "/usr/bin/tmux new -d x",
    ])
      expect(judged(form), form).toMatch(/keeps? (running|something running) after the step/);
  });

  it("leaves alone what does not detach: the same words as arguments, and look-alike options", () => {
    for (const form of [
      "make test",
      "git status",
      "git log --follow x",
      "make -d test",
      "ls at",
      "make batch",
      "git show tmux",
      "grep -d skip x",
    ])
      expect(judged(form), form).toBeNull();
    expect(outlivesItsStep(describeOperation({ kind: "edit", rawInput: { file_path: "/p/nohup" } }, CWD))).toBeNull();
  });
});

/** Whether the program is on the PATH. */
const installed = (program: string) => spawnSync("sh", ["-c", `command -v ${program}`]).status === 0;

describe("against the real tools: each form's step ends while make still writes the project", () => {
  let root: string;
  beforeAll(() => {
    for (const tool of ["make", "bash", "setsid", "tmux"])
      if (!installed(tool))
        throw new Error(
          `this test runs ${tool} for real: apt-get install -y ${tool} (npm test's set-up step, scripts/test-setup.ts, does it as root)`,
        );
    root = mkdtempSync(join(tmpdir(), "outlives-"));
  });
  afterAll(() => {
    if (root) {
      spawnSync("tmux", ["-S", join(root, "tmux.sock"), "kill-server"]);
      rmSync(root, { recursive: true, force: true });
    }
  });

  /** A fresh project whose `make test` reads `in.fifo` into `written`, then says so on `out.fifo`. */
  function project(name: string): string {
    const dir = join(root, name);
    mkdirSync(dir, { recursive: true });
    for (const fifo of ["in.fifo", "out.fifo"]) expect(spawnSync("mkfifo", [join(dir, fifo)]).status).toBe(0);
    writeFileSync(join(dir, "Makefile"), "test:\n\tcat in.fifo > written\n\techo done > out.fifo\n");
    return dir;
  }

  const forms: [string, () => string][] = [
    ["make test &", () => "make test &"],
    ["sh -c 'make test &'", () => "sh -c 'make test &'"],
    ["setsid -f make test", () => "setsid -f make test"],
    ["nohup make test &", () => "nohup make test &"],
    ["tmux new-session -d make test", () => `tmux -S ${join(root, "tmux.sock")} new-session -d make test`],
  ];

  it.each(forms)("%s: the step returns, make writes after it, and no rule answers it", (form, script) => {
    const dir = project(form.replace(/\W+/g, "-"));
    // The step: bash runs the form and returns. Were make still in the foreground, this would wait on the FIFO until the timeout.
    // (No pipes: a process left running would hold them open, and spawnSync would wait for them.)
    const step = spawnSync("bash", ["-c", script()], { cwd: dir, timeout: 10_000, stdio: "ignore" });
    expect(step.error, form).toBeUndefined();
    expect(step.status, form).toBe(0);
    // After the step: something it left running reads the FIFO (a writer only gets through when a reader is open) and writes the project.
    expect(spawnSync("timeout", ["10", "sh", "-c", "echo written-after-the-step > in.fifo"], { cwd: dir }).status).toBe(0);
    expect(String(spawnSync("timeout", ["10", "cat", "out.fifo"], { cwd: dir }).stdout).trim()).toBe("done");
    expect(readFileSync(join(dir, "written"), "utf8")).toBe("written-after-the-step\n");
    // The gateway never lets a rule answer the form: it does not parse, or it is named as outliving its step.
    expect(parseCommands(form) === null || judged(form) !== null, form).toBe(true);
  });
});
