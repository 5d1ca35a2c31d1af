// The console outlives a gateway restart: its own gateway (started as `npm start` starts it) is
// stopped under an open session and started again on the same port and state. The page says it is
// reconnecting where the person is looking, keeps Send disabled meanwhile, comes back by itself,
// attaches the session again without duplicating its history, and a prompt works — twice, across
// two restarts (issue 38). Slow (three gateway starts): `npm run test:slow`.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { type LocalGateway, ROOT, startLocalGateway } from "../../../scripts/local-gateway";
import { launchChromium } from "../browser";
import { waitForAgent } from "../peers";
import { NODE, killAll, startCli } from "../processes";

const state = mkdtempSync(join(tmpdir(), "acp-console-reconnect-"));
const random = () => `e2e-${crypto.randomUUID()}`;
const keys = { client: random(), agent: random(), admin: random() };
const AGENT = "reconnect-demo";
let gateway: LocalGateway | undefined;
let browser: Browser | undefined;

afterAll(async () => {
  await browser?.close();
  killAll();
  await gateway?.stop();
  rmSync(state, { recursive: true, force: true });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

describe("the console across gateway restarts", () => {
  it("shows that it is reconnecting, comes back by itself, re-attaches the session once, and prompts again", async () => {
    const port = await freePort();
    const start = () => startLocalGateway({ port, persistTo: state, keys, quiet: true });
    gateway = await start();
    const url = gateway.url;
    startCli(["agent", "--url", url, "--name", AGENT, "--", NODE, join(ROOT, "demo", "agent.ts")], { ACP_GATEWAY_KEY: keys.agent });
    [browser] = await Promise.all([launchChromium(), waitForAgent(url, keys.client, AGENT, 30_000)]);
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
    page.on("pageerror", (e) => {
      throw e;
    });
    await page.goto(url);
    await page.getByLabel("Key").fill(keys.client);
    await page.getByLabel("Agent").fill(AGENT);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel("Project path").fill("/projects/demo");
    await page.getByRole("button", { name: "Start session" }).click();
    await page.locator("#prompt-text").fill("Tidy the README");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("Let me look at the project first.").waitFor();
    // Precondition: the session is open and connected before the gateway goes.
    expect(await page.getByText(/Reconnecting/).count()).toBe(0);

    await gateway.stop();
    const status = page.getByRole("status").filter({ hasText: "Reconnecting" });
    await status.waitFor();
    expect(await status.textContent()).toContain("The connection to the gateway was lost");
    await page.locator("#prompt-text").fill("Again");
    expect(await page.getByRole("button", { name: "Send" }).isDisabled()).toBe(true);

    gateway = await start();
    await waitForAgent(url, keys.client, AGENT, 60_000);
    // Back by itself (backoff tops out at 30 s ±25%), the session attached again, its history once.
    await status.waitFor({ state: "detached", timeout: 45_000 });
    await expect.poll(() => page.getByText("Let me look at the project first.").count(), { timeout: 15_000 }).toBe(1);
    await expect.poll(() => page.getByRole("button", { name: "Send" }).isDisabled()).toBe(false);
    await page.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => page.getByText("Let me look at the project first.").count(), { timeout: 30_000 }).toBe(2);

    // A second restart (issue 38: the console gave up after two). The view was keyed on the link's
    // connection id, which the first reconnect changed: the sessions list's next refresh remounted
    // it, closing the link for good ("Could not load the session: Not connected to the gateway.").
    await gateway.stop();
    await status.waitFor();
    // The state is reachable by keyboard, where the person is looking.
    await status.focus();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("link-status");
    gateway = await start();
    await waitForAgent(url, keys.client, AGENT, 60_000);
    await status.waitFor({ state: "detached", timeout: 45_000 });
    await expect.poll(() => page.getByText("Let me look at the project first.").count(), { timeout: 15_000 }).toBe(2);
    expect(await page.getByText(/Could not load the session/).count()).toBe(0);
    await page.locator("#prompt-text").fill("And once more");
    await expect.poll(() => page.getByRole("button", { name: "Send" }).isDisabled()).toBe(false);
    await page.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => page.getByText("Let me look at the project first.").count(), { timeout: 30_000 }).toBe(3);
  }, 420_000);
});
