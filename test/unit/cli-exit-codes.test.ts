// The acp-gateway command's exit codes where no gateway is needed to tell them: a gateway it can never
// reach (1, after its few first attempts with backoff) and a URL that is not one (2, at once). The
// refused key, which needs a gateway to refuse it, is in test/e2e/cli.test.ts.
import { afterAll, describe, expect, it } from "vitest";
import { exitOf, killAll, startCli } from "../e2e/processes";

afterAll(killAll);

describe("acp-gateway exit codes without a gateway", () => {
  it("exits 1 for a gateway it cannot reach, after retrying, with a message naming it", async () => {
    // Port 1 on loopback: nothing listens there, so every attempt is refused at once.
    const unreachable = startCli(["client", "--url", "http://127.0.0.1:1", "--agent", "x"], { ACP_GATEWAY_KEY: "any-key" });
    expect(await exitOf(unreachable, 30_000)).toBe(1);
    const log = unreachable.log.join("");
    expect(log).toMatch(/cannot reach the gateway \(.*\); retrying in \d+ ms/);
    expect(log).toMatch(/cannot reach the gateway at ws:\/\/127\.0\.0\.1:1\/acp/);
  }, 60_000);

  it("exits 2 at once for a --url that is not a URL", async () => {
    const badUrl = startCli(["agent", "--url", "not a url", "--name", "x", "--", "true"], { ACP_GATEWAY_KEY: "any-key" });
    expect(await exitOf(badUrl)).toBe(2);
    expect(badUrl.log.join("")).toMatch(/is not a URL/);
  }, 30_000);
});
