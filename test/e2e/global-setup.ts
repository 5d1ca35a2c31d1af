// Starts the gateway the way `npm start` does (wrangler dev on loopback, local D1 migrated, dev
// tenant seeded), on a free port with its own state directory and random keys, for the e2e tests.

import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { type LocalGateway, startLocalGateway } from "../../scripts/local-gateway";

let gateway: LocalGateway | undefined;

/** The gateway's output (wrangler's, with the Worker's log lines), in the state directory. */
export const GATEWAY_LOG = "gateway.log";
let stateDir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  stateDir = mkdtempSync(join(tmpdir(), "acp-gateway-e2e-"));
  const random = () => `e2e-${crypto.randomUUID()}`;
  gateway = await startLocalGateway({
    port: await freePort(),
    persistTo: stateDir,
    keys: { client: random(), agent: random(), admin: random() },
    // A refetch of an issuer's keys at most every 200 ms, so the rotation test waits that long, not 30 s.
    vars: { KEY_RECHECK_MS: "500", JWKS_COOLDOWN_MS: "200" },
    quiet: true,
    // The gateway's log lines, for the tests that check what it logs (e.g. trace ids).
    logFile: join(stateDir, GATEWAY_LOG),
  });
  project.provide("gatewayUrl", gateway.url);
  project.provide("stateDir", stateDir);
  project.provide("keys", gateway.keys);
}

export async function teardown(): Promise<void> {
  await gateway?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
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
