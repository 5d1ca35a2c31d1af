import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import { namesTestFiles, workerdFileGroups } from "./scripts/workerd-file-groups.ts";
import { buildConsole } from "./web/build.ts";

// Three projects, one command:
// - unit:    pure protocol/ logic in Node, milliseconds each.
// - workerd: the real Worker, Durable Objects (SQLite) and local D1 with the real migrations,
//            inside workerd through the Cloudflare vitest plugin.
// - e2e:     the gateway started as `npm start` starts it (wrangler dev on loopback), driven by
//            real ACP peers from @agentclientprotocol/sdk and by the acp-gateway CLI.
// The workerd and e2e projects serve the web console from web/dist (wrangler.toml [assets]): build it
// first, on every run, so no one tests a stale or missing console (esbuild: well under a second).
await buildConsole();

/** Test files run at once (see `maxWorkers` below). */
const WORKERS = 3;

/**
 * The whole suite runs the small workerd files in groups, one Miniflare to a group (each file costs
 * about 3 s of a worker's time to start, whatever it holds); a run naming files runs them as themselves.
 */
const WORKERD_FILES = namesTestFiles(process.argv.slice(2))
  ? { include: ["test/workerd/**/*.test.ts"], exclude: [...configDefaults.exclude, "test/workerd/grouped/**"] }
  : { include: workerdFileGroups("test/workerd") };

/** The gateway as `npm start` runs it, for both e2e projects (one gateway: global-setup.ts). */
const E2E = {
  environment: "node",
  globalSetup: ["./test/e2e/global-setup.ts"],
  testTimeout: 60_000,
  hookTimeout: 120_000,
};

/** The e2e files one at a time, as files: to run one alone, and for `npm run test:slow`. */
const E2E_FILES = process.env.E2E_FILES === "1" || process.env.SLOW === "1";

/** End-to-end files that create tenants of their own and touch nothing of the dev tenant. */
const OWN_TENANT = [
  "test/e2e/people.test.ts",
  "test/e2e/console-signin.test.ts",
  "test/e2e/approvals-link.test.ts",
  "test/e2e/console-settings.test.ts",
  "test/e2e/console-what-is-asked.test.ts",
  "test/e2e/console-mode-change.test.ts",
  "test/e2e/console-prompt-queue.test.ts",
];

export default defineConfig({
  test: {
    // The JSON report is what .ci/run counts for its closing "N passed, N failed" line (the deep runs
    // write theirs elsewhere: VITEST_JSON_REPORT).
    reporters: ["default", ["json", { outputFile: process.env.VITEST_JSON_REPORT ?? ".ci/test-results.json" }]],
    // In .ci/run only a failing test's console output is printed (VITEST_QUIET_PASSED): the request
    // logs of a thousand passing ones would push the failure out of the part of the output a reader is
    // shown. Not keyed on CI: the bench and test:reliability read lines passing tests print.
    silent: process.env.VITEST_QUIET_PASSED ? "passed-only" : false,
    // Three files at a time, whatever the core count: most of a file's time is workerd, wrangler or a
    // browser working in another process. Measured on 2 cores with one kept busy (`yes`): 2 workers
    // 341 s, 3 workers 304 s, all green. The e2e files run one at a time, after the others (they share
    // one gateway and its dev tenant).
    maxWorkers: WORKERS,
    projects: [
      {
        // A failure bound, as in workerd: a property test of a few seconds took over 5 s with both cores busy.
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node", testTimeout: 30_000 },
      },
      {
        plugins: [
          cloudflareTest(async () => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                TEST_MIGRATIONS: await readD1Migrations("./db/migrations"),
                GATEWAY_ADMIN_TOKEN: "test-operator-token",
                KEY_RECHECK_MS: "300",
                // Agent links close soon after use, so an AgentObject the tests evict is idle within a moment.
                AGENT_LINK_IDLE_MS: "50",
                // Streamable HTTP: short keepalive and reconnect window, so tests see both in a second or two.
                HTTP_KEEPALIVE_MS: "200",
                HTTP_STREAM_WINDOW_MS: "1500",
                APPROVAL_LINK_SECRET: "test-approval-link-secret-0123456789abcdef",
                // The approval tests deliver webhooks to a receiver on loopback (test/e2e/approvals-receiver.ts).
                WEBHOOK_ALLOW_PRIVATE: "1",
                KEY_UNVERIFIED_GRACE_MS: "1500",
                // How many generated sequences the model-based fuzz runs (test/workerd/model-fuzz.test.ts).
                FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
                // How many events the long-replay measurement logs (test/workerd/compaction-replay.test.ts; the bench sets 100000).
                REPLAY_EVENTS: process.env.REPLAY_EVENTS ?? "",
                // How many updates the agent-burst test sends at once (test/workerd/agent-bursts.test.ts; test:slow sends 20000).
                BURST_UPDATES: process.env.BURST_UPDATES ?? "",
              },
            },
          })),
        ],
        test: {
          name: "workerd",
          // Each file starts its own Miniflare and loads the Worker; its npm dependencies pre-bundled load
          // as one module each instead of hundreds (about 1 s a file; decision 0057). Keep the list to
          // what the Worker imports.
          deps: {
            optimizer: {
              ssr: {
                enabled: true,
                include: [
                  "@hono/zod-openapi",
                  "drizzle-orm",
                  "drizzle-orm/sqlite-core",
                  "drizzle-orm/d1",
                  "hono",
                  "hono/factory",
                  "hono/utils/http-status",
                  "hono/route",
                  "hono/http-exception",
                  "hono/body-limit",
                  "@agentclientprotocol/sdk",
                  "jose",
                  "zod",
                ],
              },
            },
          },
          ...WORKERD_FILES,
          // A failure bound, not a wait: every test waits on events. With the other core busy a
          // test's setup (a tenant, an agent dialling in) can take seconds, so 5 s failed tests that pass.
          testTimeout: 30_000,
          hookTimeout: 60_000,
          setupFiles: ["./test/workerd/apply-migrations.ts"],
          // A webhook receiver on loopback for the approval tests (notifications are real HTTP).
          globalSetup: ["./test/e2e/approvals-receiver.ts"],
        },
      },
      {
        test: {
          // The files sharing the gateway's dev tenant, one after another as one file
          // (test/e2e/shared-tenant.test.ts), beside the other tests rather than after them.
          name: "e2e",
          include: ["test/e2e/shared-tenant.test.ts"],
          ...E2E,
          maxWorkers: WORKERS,
        },
      },
      ...(E2E_FILES
        ? [
            {
              test: {
                // The same files one at a time as files (E2E_FILES=1: to run one alone), and the slow ones
                // (a gateway restarted under a browser…), which `npm run test:slow` runs (SLOW=1).
                name: "e2e-files",
                include: ["test/e2e/**/*.test.ts"],
                exclude: [...OWN_TENANT, "test/e2e/shared-tenant.test.ts", ...(process.env.SLOW === "1" ? [] : ["test/e2e/slow/**"])],
                ...E2E,
                fileParallelism: false,
              },
            },
          ]
        : []),
      {
        test: {
          // The e2e files that make tenants of their own: beside the other tests, on the same gateway.
          name: "e2e-own-tenant",
          include: OWN_TENANT,
          ...E2E,
          maxWorkers: WORKERS,
        },
      },
    ],
  },
});
