// A refused second `npm start` touches nothing the running gateway watches: wrangler dev reloads (and
// drops every socket) on any write into web/dist, so the refusal must come before the console's build
// (issue 38, item 2). Real processes: the suite's running gateway, and `npm start`'s script beside it.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { ROOT } from "../../scripts/local-gateway";

const DIST = join(ROOT, "web", "dist");

/** Every file in web/dist with its modification time and a hash of its bytes. */
function snapshot(): Map<string, { mtimeMs: number; sha256: string }> {
  return new Map(
    readdirSync(DIST).map((name) => {
      const path = join(DIST, name);
      return [name, { mtimeMs: statSync(path).mtimeMs, sha256: createHash("sha256").update(readFileSync(path)).digest("hex") }];
    }),
  );
}

/** Runs scripts/start.ts as `npm start` does, to its exit; its stderr is kept. */
function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, "scripts", "start.ts")], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stderr }));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

describe("a refused second npm start", () => {
  const url = new URL(inject("gatewayUrl"));

  it("on the running gateway's port: refused, and web/dist is left as it was (no reload of the running gateway)", async () => {
    const before = snapshot();
    expect(before.size, "precondition: the console is built").toBeGreaterThan(0);
    const { code, stderr } = await start({ PORT: url.port });
    expect(code).toBe(1);
    expect(stderr).toContain(`port ${url.port} is already in use`);
    expect(snapshot()).toEqual(before);
  }, 60_000);

  it("on the running gateway's local state: refused with its pid, and web/dist is left as it was", async () => {
    const before = snapshot();
    const { code, stderr } = await start({ PORT: String(await freePort()), ACP_GATEWAY_STATE: inject("stateDir") });
    expect(code).toBe(1);
    expect(stderr).toMatch(/another local gateway \(pid \d+\) is using/);
    expect(snapshot()).toEqual(before);
    // The running gateway still answers: nothing of it was touched.
    expect((await fetch(new URL("/health", url))).status).toBe(200);
  }, 60_000);
});
