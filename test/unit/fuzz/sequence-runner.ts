/// <reference types="node" />
// Runs sequences of agent steps (files written, commands run) for real, many at a time: each worker
// is one bash process that runs a batch of sequences, each in a fresh copy of a prepared project
// (`cp -r`, so every file is newer than any build of an earlier sequence) beside fresh canaries.
// What a step did outside the project is read from the canaries, not from strace (measured: strace
// made make and git steps 5-10 times slower):
// - a program of the agent's ran: every payload touches `<outside>/RAN` (and nothing else does);
// - a file outside was read: the canaries' access time is set to 1970, which any read moves (relatime
//   updates an access time older than a day), and a canary's text in the tool's output;
// - a file outside was written: anything under the canary directory or `~/.ssh` newer than the step.
// Payload files name the canary directory as `@OUT@`, replaced per worker.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One step the agent takes: a file it writes (an edit), or a command it runs in a directory of the project. */
export type Step = { write: string; content: string | Buffer } | { run: string[]; cwd: string };

/** What one command step did outside the project: empty when it stayed inside. */
export type StepEffects = string[];

/** The marker every payload writes outside the project when the agent's code runs. */
const RAN = "RAN";
/** The canaries' text, so a tool that prints a secret is caught. */
const SECRET_TEXT = "CANARYSECRET";

/** The project every sequence starts from: files by path (relative), written once per runner. */
type Template = Record<string, string | Buffer>;

/** How to run one tool for real: the environment the sandbox gives it. */
export class SequenceRunner {
  /**
   * In memory (tmpfs) where there is one: copying and removing a project there costs a tenth of the
   * wall time it does on this machine's disk (measured: 30 ms against 205 ms for 65 files).
   */
  readonly root = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "tool-sequences-"));
  readonly template = join(this.root, "template");
  private readonly outsideTemplate = join(this.root, "outside-template");
  private running = false;

  constructor(
    files: Template,
    /** Extra setup of the template once written (a git commit, a cargo lock file): argv run in it. */
    setup: string[][],
  ) {
    writeTree(this.template, files);
    writeTree(this.outsideTemplate, {
      secret: `${SECRET_TEXT}\n`,
      // cargo fmt's target: unformatted, so a rewrite changes it.
      "other/src/lib.rs": "pub fn   other( )->u32{2}\n",
      "other/Makefile": "test:\n\t@true\n",
    });
    for (const argv of setup) {
      const r = spawnSync(argv[0] as string, argv.slice(1), {
        cwd: this.template,
        env: this.env(join(this.root, "setup")),
        encoding: "utf8",
      });
      if (r.status !== 0) throw new Error(`${argv.join(" ")} failed in the template: ${r.stderr}`);
    }
    // Old times: what the agent writes is newer than the project (as make's remaking needs), and a
    // write outside is anything newer than 1970 + 2 s.
    for (const [dir, time] of [
      [this.template, "1 hour ago"],
      [this.outsideTemplate, "@3"],
    ] as const) {
      const r = spawnSync("find", [dir, "-exec", "touch", "-h", "-d", time, "{}", "+"], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`touching ${dir} failed: ${r.stderr}`);
    }
  }

  /** The environment of a worker whose own files are under `dir`. */
  env(dir: string): Record<string, string> {
    const rustup = process.env.RUSTUP_HOME ?? "/root/.rustup";
    return {
      PATH: `/root/.cargo/bin:${process.env.PATH ?? "/usr/bin:/bin"}`,
      HOME: join(dir, "home"),
      LC_ALL: "C",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
      RUSTUP_HOME: rustup,
      // No network: cargo builds offline, local path crates only; its home and target stay in the worker.
      CARGO_HOME: join(dir, "cargo-home"),
      CARGO_NET_OFFLINE: "true",
      CARGO_TARGET_DIR: join(dir, "target"),
      CARGO_INCREMENTAL: "0",
      TMPDIR: join(dir, "tmp"),
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
      npm_config_audit: "false",
      npm_config_cache: join(dir, "home", ".npm"),
    };
  }

  /**
   * Runs every sequence for real, on `workers` bash processes at once; for each sequence, what each of its
   * steps did outside the project (a write step: always empty).
   */
  async run(sequences: Step[][], workers: number): Promise<StepEffects[][]> {
    const slices: number[][] = Array.from({ length: Math.max(1, Math.min(workers, sequences.length)) }, () => []);
    sequences.forEach((_, i) => slices[i % slices.length]?.push(i));
    if (this.running) throw new Error("one batch at a time: workers reuse their directories");
    this.running = true;
    const out: StepEffects[][] = sequences.map((s) => s.map(() => []));
    try {
      await this.runSlices(sequences, slices, out);
    } finally {
      this.running = false;
    }
    return out;
  }

  private async runSlices(sequences: Step[][], slices: number[][], out: StepEffects[][]): Promise<void> {
    await Promise.all(
      slices.map(async (indices, worker) => {
        // A worker's directory outlives the batch, with cargo's builds of the untouched project in it.
        const dir = join(this.root, `w${worker}`);
        const outside = join(dir, "outside");
        const script = this.script(
          dir,
          indices.map((i) => sequences[i] as Step[]),
        );
        const stdout = await runBash(script, this.env(dir));
        const expected = indices.reduce((n, i) => n + (sequences[i] as Step[]).filter((st) => "run" in st).length, 0);
        const reported = stdout.split("\n").filter((l) => l.startsWith("STEP ")).length;
        if (reported !== expected) throw new Error(`worker ${worker} judged ${reported} command steps of ${expected}`);
        for (const line of stdout.split("\n")) {
          const m = /^STEP (\d+) (\d+)(.*)$/.exec(line);
          if (!m) continue;
          const seq = indices[Number(m[1])] as number;
          const effects = out[seq] as StepEffects[];
          // A file read or written outside stays so until the next sequence: it is the first step's doing.
          const before = new Set(effects.flat().filter((e) => e.startsWith("read:") || e.startsWith("wrote:")));
          effects[Number(m[2])] = (m[3] ?? "")
            .split(" ")
            .map((w) => w.replaceAll(outside, "<outside>"))
            .filter((w) => w !== "" && !before.has(w));
        }
      }),
    );
  }

  private script(dir: string, sequences: Step[][]): string {
    const project = join(dir, "proj");
    const outside = join(dir, "outside");
    const home = join(dir, "home");
    const q = shellQuote;
    // Few processes per step (bash builtins where they do): most of a make or git step is process start-up.
    const lines = [
      "set -u",
      `P=${q(project)}; O=${q(outside)}; H=${q(home)}; T=${q(this.template)}; TO=${q(this.outsideTemplate)}; STAMP=${q(join(dir, "stamp"))}; LOG=${q(join(dir, "log"))}; CT=${q(join(dir, "target"))}; CW=${q(join(dir, "target-warm"))}`,
      `mkdir -p "$H/.ssh" ${q(join(dir, "tmp"))} ${q(join(dir, "cargo-home"))}`,
      // Fresh canaries, copied again only after a write outside: every file written at 1970 + 3 s, the
      // secrets read at 1970 + 1 s (so a read moves the read time past the write time: `[ -N ]` turns
      // false). A fresh project with the template's old times, so every file the agent writes is newer.
      `dirty=1; touch -d @4 "$STAMP"`,
      `fresh() { [ -d "$CT" ] && rm -rf "$CT"; [ -d "$CW" ] && cp -rp "$CW" "$CT"; rm -rf "$P"; cp -rp "$T" "$P"; if [ $dirty = 1 ]; then rm -rf "$O"; cp -rp "$TO" "$O"; printf '${SECRET_TEXT} KEY\\n' > "$H/.ssh/id_rsa"; touch -m -d @3 "$O/secret" "$H/.ssh/id_rsa"; touch -a -d @1 "$O/secret" "$H/.ssh/id_rsa"; dirty=0; fi; }`,
      // What the step did outside: the marker, a canary read, a canary printed, a file written.
      `judge() { v=""; [ -e "$O/${RAN}" ] && { v="$v ran"; rm -f "$O/${RAN}"; dirty=1; }; [ -N "$O/secret" ] || { v="$v read:$O/secret"; dirty=1; }; [ -N "$H/.ssh/id_rsa" ] || { v="$v read:$H/.ssh/id_rsa"; dirty=1; };` +
        ` [[ "$(< "$LOG")" == *${SECRET_TEXT}* ]] && v="$v printed-secret"; for f in $(find "$O" "$H/.ssh" -type f -newer "$STAMP"); do v="$v wrote:$f"; dirty=1; done; echo "STEP $1 $2$v"; }`,
      `w() { local d="$P/$1"; d="\${d%/*}"; [ -d "$d" ] || mkdir -p "$d"; printf %s "$2" > "$P/$1"; }`,
      `wb() { local d="$P/$1"; d="\${d%/*}"; [ -d "$d" ] || mkdir -p "$d"; printf %s "$2" | base64 -d > "$P/$1"; }`,
      `r() { local s=$1 k=$2 d=$3; shift 3; [ -d "$P/$d" ] || mkdir -p "$P/$d"; (cd "$P/$d" && exec timeout 120 "$@") > "$LOG" 2>&1 < /dev/null; judge "$s" "$k"; }`,
    ];
    // cargo's builds of the untouched project, made once per worker at the project's own path and copied
    // back before each sequence with their times: cargo rebuilds a crate only when a source is newer than
    // its build, and what the agent writes always is; untouched crates (the proc-macro's, mostly) are not
    // built again. Each sequence gets its own copy, so no sequence's build stands for another's sources.
    if (sequences.some((steps) => steps.some((st) => "run" in st && st.run[0] === "cargo")))
      lines.push(
        `[ -d "$CW" ] || { fresh; (cd "$P" && for c in check build clippy; do cargo $c -q; done && cargo test --no-run -q) > "$LOG" 2>&1 || { cat "$LOG" >&2; exit 1; }; mv "$CT" "$CW"; }`,
      );
    sequences.forEach((steps, s) => {
      lines.push("fresh");
      steps.forEach((step, k) => {
        if ("write" in step) {
          const content = step.content;
          if (typeof content === "string") lines.push(`w ${q(step.write)} ${q(content.replaceAll("@OUT@", outside))}`);
          else lines.push(`wb ${q(step.write)} ${content.toString("base64")}`);
        } else lines.push(`r ${s} ${k} ${q(step.cwd)} ${step.run.map(q).join(" ")}`);
      });
    });
    return `${lines.join("\n")}\n`;
  }

  dispose(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

function runBash(script: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-s"], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0 ? resolve(stdout) : reject(new Error(`the sequence batch failed (${code}): ${stderr.slice(-2000)}`)),
    );
    child.stdin.end(script);
  });
}

function writeTree(root: string, files: Template): void {
  for (const [path, content] of Object.entries(files)) {
    const full = join(root, path);
    mkdirSync(join(full, ".."), { recursive: true });
    writeFileSync(full, content);
  }
}

function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./=:@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A bare repository git made, read back as files: what the agent writes to make one it discovers. */
export function bareRepositoryFiles(scratch: string, files: Record<string, string>): Record<string, Buffer> {
  rmSync(scratch, { recursive: true, force: true });
  const work = join(scratch, "work");
  writeTree(work, files);
  const env = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: "1",
    HOME: scratch,
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@e",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@e",
  };
  for (const args of [
    ["init", "-q", "-b", "main"],
    ["add", "."],
    ["commit", "-qm", "one"],
  ]) {
    const r = spawnSync("git", args, { cwd: work, env, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  }
  const out: Record<string, Buffer> = {};
  const git = join(work, ".git");
  const list = spawnSync("find", [".", "-type", "f", "(", "-path", "./objects/*", "-o", "-path", "./refs/*", "-o", "-name", "HEAD", ")"], {
    cwd: git,
    encoding: "utf8",
  });
  for (const rel of list.stdout.split("\n").filter((l) => l !== "")) {
    const name = rel.slice(2);
    if (name === "logs/HEAD" || name.startsWith("logs/") || name === "ORIG_HEAD") continue;
    out[name] = readFileSync(join(git, name));
  }
  rmSync(scratch, { recursive: true, force: true });
  return out;
}
