// The console resumes its session's stream after the network drops (decisions 0050, 0054), in
// Chromium, against the gateway as `npm start` runs it, through a TCP proxy the test cuts: the page
// sends `stream/resume` with its last cursor instead of session/load, shows what the agent said while
// it was away once, and the prompt in flight gets its own answer instead of failing.
import type { Browser } from "playwright-core";
import { afterAll, describe, expect, inject, it } from "vitest";
import { launchChromium } from "./browser";
import { dialInAgent, waitForAgent } from "./peers";
import { tcpProxy } from "./tcp-proxy";

const url = inject("gatewayUrl");
const keys = inject("keys");
let browser: Browser | undefined;

afterAll(async () => {
  await browser?.close();
});

describe("the console after a dropped connection", () => {
  it("resumes the session's stream: no session/load, what was missed shown once, the prompt's own answer", async () => {
    const name = `console-resume-${Date.now()}`;
    let release: () => void = () => undefined;
    const away = new Promise<void>((resolve) => (release = resolve));
    let saidAway: () => void = () => undefined;
    const said = new Promise<void>((resolve) => (saidAway = resolve));
    const agent = await dialInAgent({
      url,
      key: keys.agent,
      name,
      script: async (turn) => {
        await turn.say("Before the drop.");
        await away;
        await turn.say("While you were away.");
        saidAway();
        return "end_turn";
      },
    });
    await waitForAgent(url, keys.client, name);
    const proxy = await tcpProxy(Number(new URL(url).port));
    browser = await launchChromium();
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
    page.on("pageerror", (e) => {
      throw e;
    });
    const sent: string[] = [];
    page.on("websocket", (ws) => ws.on("framesent", (frame) => sent.push(String(frame.payload))));

    await page.goto(`http://127.0.0.1:${proxy.port}/`);
    await page.getByLabel("Key").fill(keys.client);
    await page.getByLabel("Agent").fill(name);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel("Project path").fill("/projects/demo");
    await page.getByRole("button", { name: "Start session" }).click();
    await page.locator("#prompt-text").fill("Go on");
    await page.getByRole("button", { name: "Send" }).click();
    await page.getByText("Before the drop.").waitFor();

    proxy.cut({ refuse: true });
    const status = page.getByRole("status").filter({ hasText: "Reconnecting" });
    await status.waitFor();
    release(); // the agent goes on, and its turn ends, while the page cannot reach the gateway
    await said;
    proxy.resume();
    await status.waitFor({ state: "detached", timeout: 30_000 });
    await page.getByText("While you were away.").waitFor({ timeout: 15_000 });
    // The prompt in flight was answered on the resumed stream: the turn ends, Send comes back, no failure shown.
    await page.locator("#prompt-text").fill("And now");
    await expect.poll(() => page.getByRole("button", { name: "Send" }).isDisabled(), { timeout: 15_000 }).toBe(false);
    expect(await page.getByText(/The prompt failed/).count()).toBe(0);
    expect(await page.getByText("Before the drop.").count()).toBe(1);
    expect(await page.getByText("While you were away.").count()).toBe(1);
    const methods = sent.map((f) => (JSON.parse(f) as { method?: string }).method);
    expect(methods).toContain("stream/resume");
    expect(methods).not.toContain("session/load");
    agent.close();
    proxy.close();
  }, 90_000);
});
