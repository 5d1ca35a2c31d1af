// Every wrangler the project starts (npm start, the e2e gateway, the bench) runs without wrangler's
// local trace collector unless the caller asks for it: the collector runs in the gateway's own
// workerd thread and doubled every local round trip (docs/decisions/0037-bench-without-wranglers-trace-collector.md).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT, wranglerEnv } from "../../scripts/local-gateway.ts";

const VARIABLE = "X_LOCAL_OBSERVABILITY";
const callers = process.env[VARIABLE];

afterEach(() => {
  if (callers === undefined) delete process.env[VARIABLE];
  else process.env[VARIABLE] = callers;
});

describe("wranglerEnv: wrangler's local trace collector", () => {
  it("is off unless the caller set it", () => {
    delete process.env[VARIABLE];
    expect(wranglerEnv()[VARIABLE]).toBe("false");
  });

  it("keeps the caller's choice", () => {
    process.env[VARIABLE] = "true";
    expect(wranglerEnv()[VARIABLE]).toBe("true");
  });

  it("is the variable the installed wrangler reads, on by default (a rename would turn the collector back on unseen)", () => {
    const cli = readFileSync(join(ROOT, "node_modules", "wrangler", "wrangler-dist", "cli.js"), "utf8");
    const declared = new RegExp(`variableName: "${VARIABLE}",\\s*defaultValue: true`);
    expect(cli).toMatch(declared);
  });
});
