// `npm start` never harms another gateway and never outlives its starter: a busy port and a local
// state another gateway holds are refused before anything is touched; a starter killed with SIGKILL
// takes wrangler and workerd with it; a corrupt local state gets a one-line fix. Slow (it starts
// gateways of its own and waits out a watchdog): `npm run test:slow`.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, startLocalGateway } from "../../../scripts/local-gateway";
import { explainStateError, lockState } from "../../../scripts/start-guards";

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "acp-start-guards-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function listen(port = 0): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}
const portOf = (server: Server) => (server.address() as { port: number }).port;
async function freePort(): Promise<number> {
  const server = await listen();
  const port = portOf(server);
  await new Promise((r) => server.close(r));
  return port;
}

/** Whether something accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return listen(port).then(
    (server) => new Promise<boolean>((r) => server.close(() => r(false))),
    () => true,
  );
}

describe("npm start's guards", () => {
  it("a busy port is refused before any state is touched, with a message naming the port and the way out", async () => {
    const holder = await listen();
    const state = join(tempDir(), "state");
    try {
      await expect(startLocalGateway({ port: portOf(holder), persistTo: state, quiet: true })).rejects.toThrow(
        new RegExp(`port ${portOf(holder)} is already in use.*PORT=${portOf(holder) + 1} npm start`),
      );
      expect(existsSync(state), "no state directory was made").toBe(false);
    } finally {
      holder.close();
    }
  });

  it("a local state another live gateway holds is refused with its pid; a dead holder's lock is taken over", async () => {
    const state = tempDir();
    const release = lockState(state);
    await expect(startLocalGateway({ port: await freePort(), persistTo: state, quiet: true })).rejects.toThrow(
      new RegExp(`another local gateway \\(pid ${process.pid}\\) is using ${state}`),
    );
    release();
    // A lock left by a process that is gone (killed before it could release it) is no one's.
    const dead = spawn(process.execPath, [
      "-e",
      `require("fs").writeFileSync(${JSON.stringify(join(state, "gateway.lock"))}, String(process.pid))`,
    ]);
    await new Promise((r) => dead.once("exit", r));
    expect(existsSync(join(state, "gateway.lock")), "precondition: the dead process left its lock").toBe(true);
    lockState(state)();
  });

  it("a corrupt local state gets a one-line fix, not SQLITE_NOTADB", () => {
    expect(explainStateError("D1_ERROR: SQLITE_NOTADB: file is not a database", "/x/.wrangler/state")).toBe(
      "The local state in /x/.wrangler/state is corrupt or was written by another version. Remove it and start again: rm -rf /x/.wrangler/state",
    );
    expect(explainStateError("Error: connect ECONNREFUSED", "/x")).toBeNull();
  });

  it("a starter killed with SIGKILL takes wrangler and workerd with it: the port is free again", async () => {
    const port = await freePort();
    const state = tempDir();
    const starter = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { startLocalGateway } from ${JSON.stringify(join(ROOT, "scripts", "local-gateway.ts"))};
         await startLocalGateway({ port: ${port}, persistTo: ${JSON.stringify(state)}, quiet: true });
         process.stdout.write("up\\n");
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise<void>((resolve, reject) => {
      starter.stdout.on("data", (d: Buffer) => d.toString().includes("up") && resolve());
      starter.once("exit", (code) => reject(new Error(`the starter exited (${code}) before the gateway was up`)));
    });
    expect(await listening(port), "precondition: the gateway listens").toBe(true);
    starter.kill("SIGKILL");
    await expect.poll(() => listening(port), { timeout: 30_000, interval: 250 }).toBe(false);
  }, 120_000);
});
