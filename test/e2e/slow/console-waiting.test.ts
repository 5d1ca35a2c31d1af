// "Waiting on you" in the console (components/waiting.tsx) in a real browser: headless Chromium
// (browser.ts) against the gateway as `npm start` runs it, with the demo agent through
// `acp-gateway agent`. A request asked in a session open on a 1280 px desktop is listed on the first
// page of a 390 px phone too, with a count in the tab's title; the phone follows the link to the
// request's card (focused, in view), answers it there, and the list follows: the next request replaces it, and nothing
// is listed once the last one is answered.

import { join } from "node:path";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROOT } from "../../../scripts/local-gateway";
import { launchChromium, screenshotsDir } from "../browser";
import { waitForAgent } from "../peers";
import { NODE, killAll, startCli } from "../processes";

const url = inject("gatewayUrl");
const keys = inject("keys");
const AGENT = `waiting-demo-${Date.now().toString(36)}`;
const SHOTS = screenshotsDir();
/** The list refreshes every 5 s (and the index lags a change by a quarter second): three refreshes. */
const LISTED_MS = 16_000;

let browser: Browser;

beforeAll(async () => {
  startCli(["agent", "--url", url, "--name", AGENT, "--", NODE, join(ROOT, "demo", "agent.ts")], { ACP_GATEWAY_KEY: keys.agent });
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, keys.client, AGENT, 30_000)]);
});

afterAll(async () => {
  await browser?.close();
  killAll();
});

async function signedIn(viewport: { width: number; height: number }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(url);
  await page.getByLabel("Key").fill(keys.client);
  await page.getByLabel("Agent").fill(AGENT);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "New session" }).waitFor();
  return page;
}

const waiting = (page: Page) => page.locator("section.waiting-on-you li");

async function noHorizontalOverflow(page: Page): Promise<void> {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

/** Whether the element has the keyboard focus and is within the viewport (at least partly). */
function focusedAndInView(element: Locator): Promise<boolean> {
  return element.evaluate((el) => {
    const box = el.getBoundingClientRect();
    return el === document.activeElement && box.bottom > 0 && box.top < window.innerHeight;
  });
}

describe("waiting on you, in Chromium", () => {
  it("a request asked on a 1280 px desktop is listed on a 390 px phone's first page with a count in the title; the phone follows the link to the request's card (focused, in view) and answers it, and the list follows; the desktop's link focuses the card of the open session", async () => {
    const desktop = await signedIn({ width: 1280, height: 860 });
    const phone = await signedIn({ width: 390, height: 844 });
    const baseTitle = await phone.title();
    await expect.poll(() => phone.locator("section.waiting-on-you").textContent()).toContain("Nothing waits on you");

    // A turn on the desktop: the demo agent asks to edit the README.
    await desktop.getByRole("button", { name: "New session" }).click();
    await desktop.getByLabel("Project path").fill("/projects/demo");
    await desktop.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(AGENT);
    await desktop.getByRole("button", { name: "Start session" }).click();
    await desktop.locator("#prompt-text").fill("Tidy the README");
    await desktop.getByRole("button", { name: "Send" }).click();
    await desktop.locator("section.permission.open").waitFor();

    // Listed on both first pages, counted in the phone's tab title.
    await expect.poll(() => waiting(phone).count(), { timeout: LISTED_MS }).toBe(1);
    expect(await waiting(phone).first().textContent()).toContain("/projects/demo/README.md");
    await expect.poll(() => phone.title()).toBe(`(1) ${baseTitle}`);
    await expect.poll(() => waiting(desktop).count(), { timeout: LISTED_MS }).toBe(1);
    await noHorizontalOverflow(phone);
    await phone.screenshot({ path: join(SHOTS, "console-waiting-phone.png") });
    await desktop.screenshot({ path: join(SHOTS, "console-waiting-desktop.png") });

    // The phone follows the link to the request's card: its session opens with that card focused and
    // in view (the keyboard starts there), and it is answered there.
    const link = waiting(phone).first().getByRole("link");
    expect(await link.getAttribute("href")).toMatch(/^#\/session\/[^/]+\/request\/.+/);
    await link.click();
    const card = phone.locator("section.permission.open");
    await card.waitFor();
    await expect.poll(() => focusedAndInView(card)).toBe(true);
    await card.getByRole("button", { name: /^Allow once/ }).click();

    // The agent's next request (the tests) takes its place in the list; the edit is gone.
    await expect.poll(async () => (await waiting(phone).allTextContents()).join("|"), { timeout: LISTED_MS }).toContain("npm test");
    expect((await waiting(phone).allTextContents()).join("|")).not.toContain("README.md");

    // On the desktop, where the session is open already, the link focuses the card too, wherever focus was.
    await expect.poll(async () => (await waiting(desktop).allTextContents()).join("|"), { timeout: LISTED_MS }).toContain("npm test");
    await desktop.locator("#prompt-text").focus();
    const run = desktop.locator("section.permission.open", { hasText: "npm test" });
    await waiting(desktop).first().getByRole("link").click();
    await expect.poll(() => focusedAndInView(run)).toBe(true);

    // Answered on the desktop: nothing waits on anyone, and the title has no count.
    await run
      .getByRole("button", { name: /^Reject/ })
      .first()
      .click();
    await expect
      .poll(() => phone.locator("section.waiting-on-you").textContent(), { timeout: LISTED_MS })
      .toContain("Nothing waits on you");
    await expect.poll(() => phone.title()).toBe(baseTitle);
    await noHorizontalOverflow(phone);
  }, 120_000);
});
