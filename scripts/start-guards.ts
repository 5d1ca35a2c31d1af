// What keeps a local gateway from harming another one or outliving its starter: a busy port is
// refused before any state is touched (naming what holds it), one gateway at a time per local state
// directory (a lock file with the owner's pid), a watchdog that ends wrangler's process group when
// the process that started it dies however it dies (SIGKILL included: wrangler runs in its own
// group, so the terminal's signals never reach it), and a one-line fix for a corrupt local state.

import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

/** Resolves when nothing listens on 127.0.0.1:port; otherwise rejects saying what holds it and what to do. */
export function ensurePortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EADDRINUSE") return reject(error);
      reject(new Error(`port ${port} is already in use${holderOf(port)}. Stop it, or start on another port: PORT=${port + 1} npm start`));
    });
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve()));
  });
}

/** " by <process> (pid N)" when `ss` can tell, else "". */
function holderOf(port: number): string {
  const ss = spawnSync("ss", ["-Hltnp", `sport = :${port}`], { encoding: "utf8" });
  const match = /users:\(\("([^"]+)",pid=(\d+)/.exec(ss.stdout ?? "");
  return match ? ` by ${match[1]} (pid ${match[2]})` : "";
}

/**
 * Takes the local state directory for this process: a lock file holding its pid. Another live
 * gateway's lock is refused with its pid; a dead one's is taken over. Returns the release.
 */
export function lockState(stateDir: string): () => void {
  mkdirSync(stateDir, { recursive: true });
  const lock = join(stateDir, "gateway.lock");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lock, "wx");
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lock, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number(readFileSync(lock, "utf8"));
      if (Number.isSafeInteger(owner) && owner > 0 && alive(owner)) {
        throw new Error(
          `another local gateway (pid ${owner}) is using ${stateDir}. Stop it first, or give this one its own state: ACP_GATEWAY_STATE=/tmp/other npm start`,
          { cause: error },
        );
      }
      rmSync(lock, { force: true }); // its owner is gone
    }
  }
  throw new Error(`could not take the lock ${lock}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * A detached watchdog that kills the process group `groupPid` once `parentPid` is gone. It polls: a
 * dead parent sends no signal to anyone, and this is a guard, not synchronisation.
 */
export function watchParent(parentPid: number, groupPid: number): void {
  const script = `const [p, g] = process.argv.slice(1).map(Number);
const gone = (pid) => { try { process.kill(pid, 0); return false; } catch { return true; } };
const timer = setInterval(() => {
  if (gone(g)) { clearInterval(timer); return; }
  if (gone(p)) { try { process.kill(-g, "SIGTERM"); } catch {} setTimeout(() => { try { process.kill(-g, "SIGKILL"); } catch {} process.exit(0); }, 5000); clearInterval(timer); }
}, 500);`;
  const watchdog = spawn(process.execPath, ["-e", script, String(parentPid), String(groupPid)], { detached: true, stdio: "ignore" });
  watchdog.unref();
}

/** A wrangler failure that means the local state is corrupt or from another layout, in one line. */
export function explainStateError(output: string, stateDir: string): string | null {
  if (/SQLITE_NOTADB|file is not a database|SQLITE_CORRUPT|malformed/i.test(output)) {
    return `The local state in ${stateDir} is corrupt or was written by another version. Remove it and start again: rm -rf ${stateDir}`;
  }
  return null;
}
