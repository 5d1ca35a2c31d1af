// npm start: the gateway on this machine with local D1 migrated and the dev tenant seeded, plus the
// demo agent connected through `acp-gateway agent`. Prints how to connect. Ctrl-C, closing the
// terminal or killing this process stops everything, at any moment (start-guards.ts); a busy port or
// a local state another gateway holds is refused before anything is touched.

import { spawn } from "node:child_process";
import { join } from "node:path";
import { buildConsole } from "../web/build.ts";
import { ROOT, startLocalGateway, stopAllGateways } from "./local-gateway.ts";

const DEMO_AGENT = "demo";
const node = process.execPath;

// A signal before the banner (during the migrations or wrangler's start) stops what has started.
/** The demo agent bridge, once started. */
const started: { demo?: ReturnType<typeof spawn> } = {};
let stopping = false;
async function shutdown(): Promise<void> {
  if (stopping) return;
  stopping = true;
  started.demo?.kill("SIGTERM");
  await stopAllGateways();
  process.exit(0);
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => void shutdown());

// The web console is served from web/dist: built once the guards pass (a running gateway watches
// web/dist, and a refused start must not make it reload), before wrangler starts.
const gateway = await startLocalGateway({ quiet: process.env.ACP_GATEWAY_VERBOSE !== "1", prepare: buildConsole }).catch(
  (error: unknown) => {
    process.stderr.write(`Could not start the gateway: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
const { url, keys } = gateway;

const demo = spawn(
  node,
  [join(ROOT, "cli", "acp-gateway.ts"), "agent", "--url", url, "--name", DEMO_AGENT, "--", node, join(ROOT, "demo", "agent.ts")],
  {
    env: { ...process.env, ACP_GATEWAY_KEY: keys.agent },
    stdio: ["ignore", "inherit", "inherit"],
  },
);

const ws = url.replace(/^http/, "ws");
const cli = join(ROOT, "cli", "acp-gateway.ts");
process.stdout.write(`
ACP gateway running at ${url}

  Web console        ${url}/            (sign in with the client key below)

  Client WebSocket   ${ws}/acp?agent=${DEMO_AGENT}      (Authorization: Bearer <client key>)
  Agent dial-in      ${ws}/agents/NAME/connect          (Authorization: Bearer <agent key>)
  REST API           ${url}/v1/sessions, ${url}/v1/openapi.json

  Dev keys (tenant "dev"):
    client  ${keys.client}
    agent   ${keys.agent}
    admin   ${keys.admin}
    operator token: see .dev.vars (GATEWAY_ADMIN_TOKEN, default dev-operator-token)

  The demo agent "${DEMO_AGENT}" is connected. Try it from a terminal (type JSON-RPC, one message a line):
    ACP_GATEWAY_KEY=${keys.client} ${node} ${cli} client --url ${url} --agent ${DEMO_AGENT}

  Zed (settings.json):
    "agent_servers": {
      "Gateway demo": {
        "command": "${node}",
        "args": ["${cli}", "client", "--url", "${url}", "--agent", "${DEMO_AGENT}"],
        "env": { "ACP_GATEWAY_KEY": "${keys.client}" }
      }
    }

Press Ctrl-C to stop.
`);

started.demo = demo;
demo.on("exit", (code) => {
  if (!stopping) process.stderr.write(`The demo agent bridge exited (${code}); the gateway keeps running.\n`);
});
