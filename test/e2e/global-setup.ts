// Starts the gateway the way `npm start` does (wrangler dev on loopback, local D1 migrated, dev
// tenant seeded), on a free port with its own state directory and random keys, for the e2e tests.

import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { type LocalGateway, startLocalGateway } from "../../scripts/local-gateway";

/** The gateway's output (wrangler's, with the Worker's log lines), in the state directory. */
export const GATEWAY_LOG = "gateway.log";

interface Shared {
  started: Promise<{ gateway: LocalGateway; stateDir: string }>;
  users: number;
}

/**
 * Both e2e projects (vitest.config.ts: the files sharing the dev tenant, one at a time, and the ones
 * with tenants of their own, beside the other tests) use one gateway. Each project runs this setup in
 * the same Node process but may load it as its own module, so the gateway is kept on globalThis and
 * stopped when the last project tears down.
 */
const SHARED = Symbol.for("acp-gateway.e2e-gateway");
const registry = globalThis as { [SHARED]?: Shared };

export async function setup(project: TestProject): Promise<void> {
  const shared = (registry[SHARED] ??= { started: start(), users: 0 });
  shared.users += 1;
  const { gateway, stateDir } = await shared.started;
  project.provide("gatewayUrl", gateway.url);
  project.provide("stateDir", stateDir);
  project.provide("keys", gateway.keys);
}

export async function teardown(): Promise<void> {
  const shared = registry[SHARED];
  if (!shared || --shared.users > 0) return;
  registry[SHARED] = undefined;
  const { gateway, stateDir } = await shared.started;
  await gateway.stop();
  rmSync(stateDir, { recursive: true, force: true });
}

async function start(): Promise<{ gateway: LocalGateway; stateDir: string }> {
  const stateDir = mkdtempSync(join(tmpdir(), "acp-gateway-e2e-"));
  const random = () => `e2e-${crypto.randomUUID()}`;
  const gateway = await startLocalGateway({
    port: await freePort(),
    persistTo: stateDir,
    keys: { client: random(), agent: random(), admin: random() },
    // A refetch of an issuer's keys at most every 200 ms, so the rotation test waits that long, not 30 s.
    vars: { KEY_RECHECK_MS: "500", JWKS_COOLDOWN_MS: "200" },
    quiet: true,
    // The gateway's log lines, for the tests that check what it logs (e.g. trace ids).
    logFile: join(stateDir, GATEWAY_LOG),
  });
  return { gateway, stateDir };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

declare module "vitest" {
  export interface ProvidedContext {
    gatewayUrl: string;
    keys: { client: string; agent: string; admin: string };
    /** The gateway's --persist-to directory, for tests that seed D1 with wrangler. */
    stateDir: string;
  }
}
