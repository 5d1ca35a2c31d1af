// The gateway on this machine, as `npm start`, the end-to-end tests and the benchmark run it:
// .dev.vars from the example, local D1 migrated, the dev tenant seeded with its keys, then
// `wrangler dev` on loopback, ready when GET /health answers.

import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, copyFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { keyRecord } from "../protocol/api-keys.ts";
import { ensurePortFree, explainStateError, lockState, watchParent } from "./start-guards.ts";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");

export interface DevKeys {
  client: string;
  agent: string;
  admin: string;
}

export interface LocalGatewayOptions {
  port?: number;
  /** Where local D1 and Durable Object state live (default: wrangler's .wrangler/state). */
  persistTo?: string;
  keys?: Partial<DevKeys>;
  /** Extra `--var NAME:VALUE` bindings, e.g. { KEY_RECHECK_MS: "500" }. */
  vars?: Record<string, string>;
  /** Print wrangler's output (npm start) or keep it for error messages only (tests). */
  quiet?: boolean;
  /** The dev tenant's settings (tenants.settings), e.g. raised limits for the bench; omitted: left as they are. */
  tenantSettings?: Record<string, unknown>;
  /** Also append wrangler's output (the Worker's log lines among it) to this file, for tests that read the gateway's logs. */
  logFile?: string;
  /** STAGE_TIMING=1: the gateway logs when the bench's probe frames cross each stage (protocol/stage-timing.ts). */
  stageTiming?: boolean;
  /**
   * Work that may touch what a running gateway watches (npm start builds web/dist): run only once the
   * port is free and the state is this process's, so a refused start disturbs no one.
   */
  prepare?: () => Promise<void>;
}

export interface LocalGateway {
  url: string;
  port: number;
  keys: DevKeys;
  /** wrangler's process id (workerd runs under it). */
  pid: number;
  stop(): Promise<void>;
}

export function devKeys(overrides: Partial<DevKeys> = {}): DevKeys {
  return {
    client: overrides.client ?? process.env.ACP_GATEWAY_DEV_CLIENT_KEY ?? "dev-client-key",
    agent: overrides.agent ?? process.env.ACP_GATEWAY_DEV_AGENT_KEY ?? "dev-agent-key",
    admin: overrides.admin ?? process.env.ACP_GATEWAY_DEV_ADMIN_KEY ?? "dev-admin-key",
  };
}

export async function startLocalGateway(options: LocalGatewayOptions = {}): Promise<LocalGateway> {
  const port = options.port ?? Number(process.env.PORT ?? 8787);
  const keys = devKeys(options.keys);
  const persistTo = options.persistTo ?? process.env.ACP_GATEWAY_STATE;
  const persist = persistTo ? ["--persist-to", persistTo] : [];
  const stateDir = persistTo ?? join(ROOT, ".wrangler", "state");
  // Nothing is touched until the port is free and the state is this process's alone.
  await ensurePortFree(port);
  const release = lockState(stateDir);
  const unlock = () => {
    release();
    locks.delete(unlock);
  };
  locks.add(unlock);
  const child = await Promise.resolve(options.prepare?.())
    .then(() => launch(options, { port, keys, persist, stateDir }))
    .catch((error: unknown) => {
      unlock();
      throw error;
    });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopProcessGroup(child.process);
    unlock();
  };
  try {
    await waitForHealth(url, child.process, 60_000);
  } catch (error) {
    await stop();
    const tail = child.output.join("").split("\n").slice(-30).join("\n");
    const fix = explainStateError(tail, stateDir);
    throw new Error(fix ?? `${(error as Error).message}\n--- wrangler's last output ---\n${tail}`, { cause: error });
  }
  return { url, port, keys, pid: child.process.pid ?? 0, stop };
}

/** Migrates and seeds local D1, then starts `wrangler dev` in its own process group, watched. */
async function launch(
  options: LocalGatewayOptions,
  at: { port: number; keys: DevKeys; persist: string[]; stateDir: string },
): Promise<{ process: ChildProcess; output: string[] }> {
  const { port, keys, persist, stateDir } = at;
  ensureDevVars();
  const explained = (error: unknown) => {
    const fix = explainStateError((error as Error).message, stateDir);
    return fix ? new Error(fix, { cause: error }) : error;
  };
  await wrangler(["d1", "migrations", "apply", "DB", "--local", ...persist], "applying the D1 migrations").catch((e: unknown) => {
    throw explained(e);
  });
  await wrangler(
    ["d1", "execute", "DB", "--local", ...persist, "--command", await seedSql(keys, options.tenantSettings)],
    "seeding the dev tenant",
  ).catch((e: unknown) => {
    throw explained(e);
  });
  const stageTiming = options.stageTiming ? { STAGE_TIMING: "1" } : {};
  // A local gateway delivers webhooks to receivers on this machine (the e2e tests', a developer's), and
  // trusts an identity provider there that publishes its keys over plain http (test/e2e/identity-provider.ts).
  const local = { WEBHOOK_ALLOW_PRIVATE: "1", IDENTITY_ALLOW_HTTP: "1" };
  const vars = Object.entries({ ...approvalLinkSecret(), ...local, ...stageTiming, ...options.vars }).flatMap(([k, v]) => [
    "--var",
    `${k}:${v}`,
  ]);
  const child = spawn(
    WRANGLER,
    ["dev", "--ip", "127.0.0.1", "--port", String(port), "--show-interactive-dev-session=false", ...persist, ...vars],
    {
      cwd: ROOT,
      env: wranglerEnv(),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so stop() ends workerd too
    },
  );
  running.add(child);
  child.once("exit", () => running.delete(child));
  if (child.pid !== undefined) watchParent(process.pid, child.pid);
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    const text = chunk.toString();
    output.push(text);
    if (output.length > 200) output.shift();
    if (!options.quiet) process.stderr.write(text);
    if (options.logFile) appendFileSync(options.logFile, text);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return { process: child, output };
}

/** Every `wrangler dev` this process started and has not seen exit, and the state locks it holds. */
const running = new Set<ChildProcess>();
const locks = new Set<() => void>();

/** Stops every gateway this process started: for a signal that arrives before `stop` exists. */
export async function stopAllGateways(): Promise<void> {
  await Promise.all([...running].map((child) => stopProcessGroup(child)));
  for (const unlock of [...locks]) unlock();
}

/** SQL that creates or refreshes the dev tenant and its three keys (hashes only, never the keys). */
async function seedSql(keys: DevKeys, settings?: Record<string, unknown>): Promise<string> {
  const q = (s: string) => `'${s.replace(/'/g, "''")}'`;
  const key = async (id: string, kind: string, label: string, secret: string) => {
    const stored = await keyRecord(id, secret);
    return `INSERT INTO api_keys (id, tenant_id, kind, label, prefix, hash) VALUES (${q(id)}, 't_dev', ${q(kind)}, ${q(label)}, ${q(stored.prefix)}, ${q(stored.hash)})
     ON CONFLICT (id) DO UPDATE SET prefix = excluded.prefix, hash = excluded.hash, revoked_at = NULL, expires_at = NULL;`;
  };
  return [
    `INSERT INTO tenants (id, slug, name) VALUES ('t_dev', 'dev', 'Development') ON CONFLICT (id) DO UPDATE SET disabled = 0;`,
    ...(settings ? [`UPDATE tenants SET settings = ${q(JSON.stringify(settings))} WHERE id = 't_dev';`] : []),
    await key("key_dev_client", "client", "dev", keys.client),
    await key("key_dev_agent", "agent", "dev-agent", keys.agent),
    await key("key_dev_admin", "admin", "dev-admin", keys.admin),
  ].join("\n");
}

export function ensureDevVars(): void {
  const vars = join(ROOT, ".dev.vars");
  if (!existsSync(vars)) copyFileSync(join(ROOT, ".dev.vars.example"), vars);
}

/** A .dev.vars written before approval links existed has no secret for them: use one for this run. */
function approvalLinkSecret(): Record<string, string> {
  const text = readFileSync(join(ROOT, ".dev.vars"), "utf8");
  return /^APPROVAL_LINK_SECRET=/m.test(text) ? {} : { APPROVAL_LINK_SECRET: randomBytes(32).toString("hex") };
}

export function wranglerEnv(): NodeJS.ProcessEnv {
  // Node 22 from node_modules/.bin first: wrangler 4 needs it, whatever node the caller has.
  const bin = join(ROOT, "node_modules", ".bin");
  return {
    ...process.env,
    PATH: `${bin}:${process.env.PATH ?? ""}`,
    WRANGLER_SEND_METRICS: "false",
    CI: process.env.CI ?? "true",
    // Wrangler's local trace collector (on unless this says no) runs in the gateway's own workerd
    // thread and handles every invocation's events there: it doubled every round trip on loopback,
    // and more for paths with more object hops. A deployed gateway runs no such collector in its events
    // (docs/decisions/0037-bench-without-wranglers-trace-collector.md). X_LOCAL_OBSERVABILITY=true turns it back on.
    X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false",
  };
}

/** Runs one wrangler command to completion; its output is kept for the error message. */
export function wrangler(args: string[], what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(WRANGLER, args, { cwd: ROOT, env: wranglerEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${what} failed (exit ${code}):\n${output.slice(-3000)}`))));
  });
}

export async function waitForHealth(url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: number | null = null;
  child.once("exit", (code) => (exited = code ?? -1));
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`wrangler dev exited with code ${exited} before the gateway answered`);
    try {
      const response = await fetch(`${url}/health`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the gateway did not answer ${url}/health within ${timeoutMs / 1000} s`);
}

export function stopProcessGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {
        // gone
      }
      resolve();
    }, 5000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    try {
      process.kill(-(child.pid as number), "SIGTERM");
    } catch {
      clearTimeout(timer);
      resolve();
    }
  });
}
