/// <reference types="node" />
// Runs a command under the real /bin/bash with nothing real to run: PATH is a temporary folder of
// stub programs that only append their argv to a log as a JSON line, in a temporary HOME and cwd,
// with a clean environment. What the stubs logged is what bash actually executed. `eval`, `source`
// and the other builtins are bash's own and really run — that is the point. Shells are stubs too
// (`sh -c`, `bash -c` log and run nothing); `bash -c SCRIPT` is followed by running SCRIPT the same way,
// `sh -c SCRIPT` by running SCRIPT under the real /bin/sh.

import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One program bash ran: the name it was found under and its arguments. */
export interface Ran {
  name: string;
  args: string[];
}

/** Files in the cwd, so that globs and brace tricks have something to expand to. */
const SEED_FILES = ["git", "push", "status", "ls", "-c"];

export class BashSandbox {
  readonly root = mkdtempSync(join(tmpdir(), "bash-sandbox-"));
  private readonly bin = join(this.root, "bin");
  private readonly home = join(this.root, "home");
  private readonly cwd = join(this.root, "work");
  /** Where a stub logs when its run's log variable is gone (a command that cleared the environment). */
  private readonly fallbackLog = join(this.root, "argv.log");
  private runs = 0;

  constructor(programs: readonly string[]) {
    for (const dir of [this.bin, this.home, this.cwd]) mkdirSync(dir);
    for (const name of programs) {
      const path = join(this.bin, name);
      writeFileSync(path, stubScript(name, this.fallbackLog));
      chmodSync(path, 0o755);
    }
    this.resetCwd();
  }

  /**
   * What bash executed for `command` (run as `bash -c command`), with `bash -c SCRIPT` followed into
   * SCRIPT and `sh -c SCRIPT` into SCRIPT as the real /bin/sh runs it.
   */
  run(command: string, depth = 0, shell = "/bin/bash"): Ran[] {
    // Each run logs to its own file (named in the environment the stubs inherit), so a stub that an
    // earlier command sent to the background and that writes after bash exited lands in that
    // command's log, never in this one's.
    const log = join(this.root, `argv-${this.runs++}.log`);
    writeFileSync(log, "");
    writeFileSync(this.fallbackLog, "");
    const result = spawnSync(shell, ["-c", command], {
      cwd: this.cwd,
      env: { PATH: this.bin, HOME: this.home, LC_ALL: "C", ACP_STUB_LOG: log },
      input: "",
      timeout: 10_000,
      encoding: "utf8",
    });
    if (result.error) throw result.error;
    const text = readFileSync(log, "utf8") + readFileSync(this.fallbackLog, "utf8");
    rmSync(log, { force: true });
    const ran = text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Ran);
    this.resetCwd();
    const out: Ran[] = [];
    for (const r of ran) {
      const [flag, script, ...rest] = r.args;
      if (
        (r.name === "bash" || r.name === "sh") &&
        (flag === "-c" || flag === "-lc" || flag === "-cl") &&
        script !== undefined &&
        rest.length === 0 &&
        depth < 3
      ) {
        out.push(...this.run(script, depth + 1, r.name === "sh" ? "/bin/sh" : "/bin/bash"));
      } else out.push(r);
    }
    return out;
  }

  dispose(): void {
    rmSync(this.root, { recursive: true, force: true });
  }

  /** Back to the seeded files only, so that one case's redirections do not change the next case's globs. */
  private resetCwd(): void {
    const now = readdirSync(this.cwd);
    if (now.length === SEED_FILES.length && SEED_FILES.every((f) => now.includes(f))) return;
    rmSync(this.cwd, { recursive: true, force: true });
    mkdirSync(this.cwd);
    for (const f of SEED_FILES) writeFileSync(join(this.cwd, f), "");
  }
}

/** A bash script that appends {"name", "args"} as one JSON line to its run's log, using builtins only. */
function stubScript(name: string, fallbackLog: string): string {
  return `#!/bin/bash
out='{"name":"${name}","args":['
sep=
for a in "$@"; do
  a=\${a//\\\\/\\\\\\\\}
  a=\${a//\\"/\\\\\\"}
  if [[ $a == *[[:cntrl:]]* ]]; then
    for ((i = 1; i < 32; i++)); do
      printf -v oct '%03o' "$i"
      printf -v c "\\\\$oct"
      printf -v u '\\\\u%04x' "$i"
      a=\${a//"$c"/$u}
    done
    a=\${a//$'\\x7f'/\\\\u007f}
  fi
  out+="$sep\\"$a\\""
  sep=,
done
printf '%s]}\\n' "$out" >> "\${ACP_STUB_LOG:-${fallbackLog}}"
`;
}
