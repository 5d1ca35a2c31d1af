// The agent bridge's crash-loop watch (cli/crash-loop.ts): quick exits in a row are reported at the
// third and given up on at the fifth; a process that ran a while starts the count again; and a
// TypeScript agent under a Node without type stripping is named as the cause, with the version needed.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CrashWatch, GIVE_UP_AFTER, QUICK_EXIT_MS, REPORT_AFTER, typeScriptAdvice } from "../../../cli/crash-loop";

describe("CrashWatch", () => {
  it("reports at the third quick exit in a row and gives up at the fifth", () => {
    const watch = new CrashWatch();
    const verdicts = Array.from({ length: GIVE_UP_AFTER }, () => watch.exited(50).verdict);
    expect(verdicts).toEqual(["restart", "restart", "report", "restart", "give-up"]);
  });

  it("a verdict other than restart needs REPORT_AFTER quick exits since the last long run (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 3 * QUICK_EXIT_MS }), { maxLength: 40 }), (lives) => {
        const watch = new CrashWatch();
        let run = 0;
        for (const lived of lives) {
          run = lived < QUICK_EXIT_MS ? run + 1 : 0;
          const { quickExits, verdict } = watch.exited(lived);
          expect(quickExits).toBe(run);
          expect(verdict).toBe(run >= GIVE_UP_AFTER ? "give-up" : run === REPORT_AFTER ? "report" : "restart");
        }
      }),
    );
  });
});

describe("typeScriptAdvice", () => {
  it("names a Node too old for a .ts agent and the version it needs", () => {
    expect(typeScriptAdvice("/usr/bin/node", ["demo/agent.ts"], "v20.20.2\n")).toBe(
      "/usr/bin/node is Node v20.20.2, which cannot run the TypeScript file demo/agent.ts: it needs Node 22.18 or later (the project's node_modules/.bin/node is one; give its path as the agent's command)",
    );
    expect(typeScriptAdvice("node", ["--enable-source-maps", "agent.mts"], "v22.17.1")).toMatch(
      /cannot run the TypeScript file agent\.mts/,
    );
  });

  it("says nothing for a Node that can, a JavaScript agent, or another program", () => {
    expect(typeScriptAdvice("node", ["demo/agent.ts"], "v22.18.0")).toBeNull();
    expect(typeScriptAdvice("node", ["demo/agent.ts"], "v24.1.0")).toBeNull();
    expect(typeScriptAdvice("node", ["agent.js"], "v20.20.2")).toBeNull();
    expect(typeScriptAdvice("python3", ["agent.ts"], "v20.20.2")).toBeNull();
    expect(typeScriptAdvice("node", ["agent.ts"], "")).toBeNull();
  });
});
