/// <reference types="node" />
// Runs a real tool (git, make, npm, cargo) under `strace -f` inside a throwaway project whose
// surroundings are canaries, and reports what it did that a remembered "always allow" must never
// allow: a program run that is neither the tool, its own helpers, nor the project's own scripts; a
// file read or written outside the project (a canary directory beside it, the sandbox's home with
// its ~/.ssh). strace sees every execve and open the kernel performs, whatever spelling the tool
// accepted — abbreviations, clusters, config keys — so the judge is the tool itself, not a table.
// Chosen over a seccomp or namespace sandbox because it needs no privileges and reports, rather than
// blocks, so a violation is shown with its exact syscall.

import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

/** Programs a tool may run on its own account: itself, its shell, the toolchain, the project's scripts' commands. */
const HELPERS = new Set([
  "git",
  "make",
  "sh",
  "dash",
  "bash",
  "true",
  "echo",
  "node",
  "npm",
  "npm-cli.js",
  "cargo",
  "rustc",
  "rustup",
  "cargo-clippy",
  "clippy-driver",
  "cargo-fmt",
  "rustfmt",
  "cc",
  "gcc",
  "x86_64-linux-gnu-gcc-12",
  "collect2",
  "ld",
  "ld.bfd",
  "ld.gold",
  "x86_64-linux-gnu-ld",
  "x86_64-linux-gnu-ld.bfd",
  "as",
  "uname",
]);

export interface ToolRun {
  /** What the tool did that it must not: empty when it stayed inside. */
  violations: string[];
  status: number | null;
}

export class ToolsSandbox {
  readonly root = mkdtempSync(join(tmpdir(), "tools-sandbox-"));
  readonly project = join(this.root, "proj");
  /** Canaries: nothing here may be read, written or run. */
  readonly outside = join(this.root, "outside");
  readonly home = join(this.root, "home");
  /** The tools' temporary files (TMPDIR): theirs to write. */
  private readonly tmp = join(this.root, "tmp");
  /** Where the toolchain lives: its programs may run and it may write its caches. */
  private readonly toolchain = toolchainHomes();
  private readonly trace = join(this.root, "strace.log");
  private readonly env: Record<string, string>;

  constructor() {
    for (const dir of [this.project, this.outside, this.home, join(this.home, ".ssh"), join(this.project, "src")])
      mkdirSync(dir, { recursive: true });
    const touchCanary = `touch ${join(this.outside, "RAN")}`;
    writeFileSync(join(this.home, ".ssh", "id_rsa"), "CANARY KEY\n");
    writeFileSync(join(this.outside, "secret"), "CANARY\n");
    writeFileSync(join(this.outside, "evil.sh"), `#!/bin/sh\n${touchCanary}\n`);
    chmodSync(join(this.outside, "evil.sh"), 0o755);
    writeFileSync(join(this.outside, "evil.mk"), `$(shell ${touchCanary})\ntest:\n\t@true\n`);
    writeFileSync(join(this.outside, "evil.js"), `require("fs").writeFileSync(${JSON.stringify(join(this.outside, "RAN"))}, "")\n`);
    writeFileSync(join(this.outside, "npmrc"), `script-shell=${join(this.outside, "evil.sh")}\n`);
    mkdirSync(join(this.outside, "other"));
    writeFileSync(
      join(this.outside, "other", "package.json"),
      JSON.stringify({ name: "other", scripts: { test: touchCanary, build: touchCanary } }),
    );
    writeFileSync(join(this.outside, "other", "Makefile"), `test:\n\t${touchCanary}\ncheck lint deploy: test\n`);
    // The project: its own scripts are allowed to run (they are what the person approved).
    // Includes config.mak when there is one, as many projects do (the sequences write one).
    writeFileSync(
      join(this.project, "Makefile"),
      "-include config.mak\ntest check lint:\n\t@true\ndeploy:\n\t@sh -c 'exit 0' && " + touchCanary + "\n",
    );
    writeFileSync(
      join(this.project, "package.json"),
      JSON.stringify({ name: "proj", version: "1.0.0", scripts: { test: "true", build: "true" } }),
    );
    writeFileSync(join(this.project, "Cargo.toml"), '[package]\nname = "proj"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n');
    writeFileSync(join(this.project, "src", "lib.rs"), "pub fn one() -> u32 { 1 }\n#[test]\nfn it_is_one() { assert_eq!(one(), 1); }\n");
    writeFileSync(join(this.project, "src", "a.txt"), "hello\n");
    this.env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: this.home,
      LC_ALL: "C",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
      // The toolchain stays where it is installed; only HOME is the sandbox's.
      ...this.toolchain,
      TMPDIR: this.tmp,
      CARGO_TARGET_DIR: join(this.project, "target"),
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
      npm_config_audit: "false",
      npm_config_cache: join(this.home, ".npm"),
    };
    for (const args of [
      ["init", "-q"],
      ["add", "."],
      ["commit", "-qm", "init"],
    ]) {
      const r = spawnSync("git", args, { cwd: this.project, env: this.env, encoding: "utf8" });
      if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
    }
  }

  /** Runs argv in the project (or `cwd`, a directory inside it) under strace, and says what it did outside. */
  run(argv: readonly string[], cwd: string = this.project): ToolRun {
    rmSync(join(this.outside, "RAN"), { force: true });
    const result = spawnSync(
      "strace",
      ["-f", "-qq", "-s", "512", "-e", "trace=execve,open,openat,creat,chdir", "-o", this.trace, ...argv],
      {
        cwd,
        env: this.env,
        input: "",
        timeout: 60_000,
        encoding: "utf8",
      },
    );
    if (result.error) throw result.error;
    const violations = this.violationsIn(readFileSync(this.trace, "utf8"));
    return { violations, status: result.status };
  }

  private violationsIn(trace: string): string[] {
    const out: string[] = [];
    for (const line of trace.split("\n")) {
      const exec = /execve\("([^"]*)"/.exec(line);
      if (exec && !line.includes("= -1")) {
        const path = exec[1] as string;
        const name = path.slice(path.lastIndexOf("/") + 1);
        const toolchain = Object.values(this.toolchain).some((dir) => path.startsWith(`${dir}/`)) || path.startsWith("/usr/lib/gcc/");
        if (!path.startsWith(this.project) && !toolchain && !HELPERS.has(name)) out.push(`ran ${path}`);
        if (path.startsWith(this.outside) || path.startsWith(this.home)) out.push(`ran ${path}`);
        continue;
      }
      const chdir = /chdir\("([^"]*)"/.exec(line);
      if (chdir) {
        const dir = chdir[1] as string;
        if (!(dir.startsWith("/") ? dir : join(this.project, dir)).startsWith(this.project)) out.push(`changed directory to ${dir}`);
        continue;
      }
      const open = /open(?:at)?\((?:[A-Z_0-9]+, )?"([^"]*)"/.exec(line);
      if (!open) continue;
      const path = open[1] as string;
      const resolved = path.startsWith("/") ? path : join(this.project, path);
      if (resolved.startsWith(this.outside)) out.push(`opened ${resolved}`);
      if (resolved.startsWith(join(this.home, ".ssh"))) out.push(`opened ${resolved}`);
      const writes = /O_WRONLY|O_RDWR|O_CREAT/.test(line) && !line.includes("= -1");
      if (writes && !resolved.startsWith(this.project) && !this.mayWrite(resolved)) out.push(`wrote ${resolved}`);
    }
    return [...new Set(out)];
  }

  /** Outside the project, only the tools' own caches and the null device may be written. */
  private mayWrite(path: string): boolean {
    if (path === "/dev/null" || path === "/dev/tty" || path.startsWith("/dev/fd/")) return true;
    if (Object.values(this.toolchain).some((dir) => path.startsWith(`${dir}/`))) return true; // cargo's registry and locks
    return [this.tmp, join(this.home, ".npm"), join(this.home, ".cache")].some((dir) => path.startsWith(`${dir}/`));
  }

  /** Puts the project back as it was committed: every file the last sequence wrote is gone. */
  reset(): void {
    for (const args of [
      ["checkout", "-q", "--", "."],
      ["clean", "-fdxq"],
    ]) {
      const r = spawnSync("git", args, { cwd: this.project, env: this.env, encoding: "utf8" });
      if (r.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${r.stderr}`);
    }
  }

  dispose(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** rustup's and cargo's own homes, where the toolchain is installed (the real HOME's, unless set). */
function toolchainHomes(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [variable, dir] of [
    ["RUSTUP_HOME", ".rustup"],
    ["CARGO_HOME", ".cargo"],
  ] as const) {
    const value = process.env[variable] ?? join(homedir(), dir);
    if (existsSync(value)) out[variable] = value;
  }
  return out;
}

/** Whether the program is installed: the differential needs the real tools (.ci/run installs them). */
export function installed(program: string): boolean {
  return spawnSync(program, ["--version"], { encoding: "utf8" }).status === 0;
}
