import { defineConfig } from "vitest/config";
import { buildConsole } from "../../web/build.ts";

// `npm run test:agents`: the real agents (installed in test/agents/node_modules by the script) behind
// a gateway started as the e2e tests start it (one wrangler dev, test/e2e/global-setup.ts). Its own
// config, so the root `npm test` neither installs nor runs them. The gateway serves the console
// from web/dist: built first, as in the root config.
await buildConsole();

export default defineConfig({
  test: {
    name: "agents",
    root: new URL("../..", import.meta.url).pathname,
    include: ["test/agents/**/*.test.ts"],
    environment: "node",
    globalSetup: ["./test/e2e/global-setup.ts"],
    // A failure bound, not a wait: a real agent's first turn starts its runtime and model client.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // One file at a time (each agent has a tenant of its own, made by the operator API; they share the one gateway).
    fileParallelism: false,
    // As in the root config: in .ci/run only a failing test's console output is printed.
    silent: process.env.VITEST_QUIET_PASSED ? "passed-only" : false,
    // .ci/run counts this run from its JSON report, as it counts the other deep runs.
    reporters: ["default", ["json", { outputFile: process.env.VITEST_JSON_REPORT ?? ".ci/agents-results.json" }]],
  },
});
