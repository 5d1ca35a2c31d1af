// The web console in Chromium (browser.ts), against the gateway as `npm start` runs it with the demo
// agent: history that replays who and what answered (decision 0048), answers with a reason, and the
// keyboard: focus never dropped to the page after an action, the first waiting request one Tab from
// the session's title or Alt+Shift+A from anywhere in it. A desktop (1280) and a phone (390).

import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROOT } from "../../scripts/local-gateway";
import { launchChromium } from "./browser";
import { waitForAgent } from "./peers";
import { NODE, killAll, startCli } from "./processes";

const url = inject("gatewayUrl");
const keys = inject("keys");
const AGENT = `console-history-${Date.now().toString(36)}`;
// A project of its own: no rule another test made for /projects/demo answers its requests.
const PROJECT = `/projects/history-${Date.now().toString(36)}`;
const REASON = "Checked the diff \u202eby hand";
const REASON_SHOWN = "Checked the diff ⟨U+202E⟩by hand";

let browser: Browser;
/** The desktop test's session, which the phone's teammate opens by its link. */
let sharedSession: string | null = null;

beforeAll(async () => {
  startCli(["agent", "--url", url, "--name", AGENT, "--", NODE, join(ROOT, "demo", "agent.ts")], { ACP_GATEWAY_KEY: keys.agent });
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, keys.client, AGENT, 30_000)]);
});

afterAll(async () => {
  await browser?.close();
  killAll();
});

async function openConsole(viewport: { width: number; height: number }, key: string, hash = ""): Promise<Page> {
  const page = await (await browser.newContext({ viewport })).newPage();
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(`${url}/${hash}`);
  await page.getByLabel("Key").fill(key);
  await page.getByLabel("Agent").fill(AGENT);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "New session" }).waitFor();
  return page;
}

/** What has focus: its tag, id and text, so a failure says where focus went. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const e = document.activeElement;
    return {
      tag: e?.tagName.toLowerCase(),
      id: e?.id ?? "",
      text: (e?.textContent ?? "").trim().slice(0, 40),
      inCard: !!e?.closest("section.permission.open"),
    };
  });

/** Presses Tab until focus is on an option of a waiting request; how many it took (at most `max`, else max + 1). */
async function tabsToWaiting(page: Page, max: number): Promise<number> {
  for (let n = 1; n <= max; n++) {
    await page.keyboard.press("Tab");
    const f = await focused(page);
    if (f.inCard && f.tag === "button") return n;
    // (`focused` keeps 40 characters of the text: "1 permission request waiting for an answ".)
    if (f.tag === "button" && /waiting for an/.test(f.text)) {
      // The attention bar's jump: Enter takes focus to the first option.
      await page.keyboard.press("Enter");
      await expect.poll(async () => (await focused(page)).inCard).toBe(true);
      return n;
    }
  }
  return max + 1;
}

const closedCards = (page: Page) => page.locator("section.permission.closed");

async function noHorizontalOverflow(page: Page): Promise<void> {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

describe("the console's history, reasons and keyboard in Chromium", () => {
  it("desktop 1280: a turn answered by keyboard with a reason; after a reload the cards say the same, the prompt is 'You'; the audit links the session", async () => {
    const page = await openConsole({ width: 1280, height: 860 }, keys.client);

    // Creating a session puts focus in the prompt box; sending keeps it there.
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel("Project path").fill(PROJECT);
    await page.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(AGENT);
    await page.getByRole("button", { name: "Start session" }).click();
    await expect.poll(async () => (await focused(page)).id).toBe("prompt-text");
    await page.keyboard.type("Keyboard history");
    await page.keyboard.press("Enter");
    const edit = page.locator("section.permission.open");
    await edit.locator(".diff .add").waitFor();
    expect((await focused(page)).id).toBe("prompt-text");
    // The header has the session's title while the turn runs, as the list does.
    expect(await page.locator("#session-title").textContent()).toBe("Keyboard history");

    // Alt+Shift+A from the prompt box: the waiting request's first option. Shift+Tab to its reason.
    await page.keyboard.press("Alt+Shift+A");
    expect(await focused(page)).toMatchObject({ tag: "button", inCard: true, text: expect.stringMatching(/^Allow once/) });
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.insertText(REASON);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    // Answered: focus goes to the prompt box (nothing else waits yet), never to the page.
    await expect.poll(async () => (await focused(page)).tag).not.toBe("body");

    // The next request: one Tab from the session's title (the attention bar's jump), then Reject.
    await page.locator("section.permission.open pre.command", { hasText: "npm test" }).waitFor();
    await page.locator("#session-title").focus();
    expect(await tabsToWaiting(page, 3)).toBeLessThanOrEqual(3);
    await page.locator("section.permission.open .reason-field input").fill("Not in this turn");
    await page
      .locator("section.permission.open")
      .getByRole("button", { name: /^Reject/ })
      .first()
      .click();
    await page.getByText("Understood, I did not run the tests.").waitFor();
    expect((await focused(page)).tag).not.toBe("body");

    const live = await closedCards(page).allTextContents();
    expect(live.join("\n")).toContain("Answered by you (dev) — “Allow once” (allow_once)");
    expect(live.join("\n")).toContain(`Reason: “${REASON_SHOWN}”`);
    expect(live.join("\n")).toContain("Answered by you (dev) — “Reject” (reject_once)");
    expect(live.join("\n")).toContain("Reason: “Not in this turn”");

    // A reload replays the session from its log: the same cards, in the same words; the prompt is "You".
    sharedSession = decodeURIComponent(new URL(page.url()).hash.replace("#/session/", ""));
    expect(sharedSession).not.toBe("");
    await page.reload();
    await page.getByText("Understood, I did not run the tests.").waitFor();
    await expect.poll(() => closedCards(page).allTextContents()).toEqual(live);
    expect(await page.locator(".msg.user .who").first().textContent()).toBe("You");
    expect(await page.locator("#session-title").textContent()).toBe("Keyboard history");

    // The audit keeps the reason and links the session: following it opens the session.
    await page.getByRole("button", { name: "Audit" }).click();
    const entry = page.locator(".audit-entry", { hasText: REASON_SHOWN }).first();
    await entry.waitFor();
    await entry.getByRole("link", { name: /^Open session/ }).click();
    await page.locator("#session-title", { hasText: "Keyboard history" }).waitFor();
    await expect.poll(() => closedCards(page).count()).toBe(2);
    await page.context().close();
  }, 60_000);

  it("phone 390: a teammate opening the link sees who answered and why, not 'You'; the top bar fits; a new request one Tab from the title", async () => {
    expect(sharedSession, "the desktop test made the session").not.toBeNull();
    const page = await openConsole({ width: 390, height: 844 }, keys.admin, `#/session/${encodeURIComponent(sharedSession ?? "")}`);
    await page.getByText("Understood, I did not run the tests.").waitFor();
    const cards = (await closedCards(page).allTextContents()).join("\n");
    expect(cards).toContain("Answered by dev — “Allow once” (allow_once)");
    expect(cards).toContain(`Reason: “${REASON_SHOWN}”`);
    expect(cards).not.toContain("you");
    expect(await page.locator(".msg.user .who").first().textContent()).toBe("dev");
    expect(await page.locator("#session-title").textContent()).toBe("Keyboard history");
    // Opening the session put focus on its title.
    expect((await focused(page)).id).toBe("session-title");

    // The top bar on a phone: who is signed in is not cut, Sign out stays on one line, nothing overflows.
    const who = page.locator(".topbar .who-name");
    expect(await who.textContent()).toBe("dev-admin");
    expect(await who.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
    const signOut = page.getByRole("button", { name: "Sign out" });
    expect(await signOut.evaluate((e) => e.getClientRects().length === 1 && e.scrollHeight <= 44)).toBe(true);
    await noHorizontalOverflow(page);

    // The teammate's own turn: the waiting request one Tab from the title, answered; focus stays in the page.
    await page.locator("#prompt-text").fill("Phone turn");
    await page.getByRole("button", { name: "Send" }).click();
    expect((await focused(page)).id).toBe("prompt-text");
    await page.locator("section.permission.open .diff .add").waitFor();
    await page.locator("#session-title").focus();
    expect(await tabsToWaiting(page, 3)).toBeLessThanOrEqual(3);
    await page.keyboard.press("Enter"); // Allow once
    await page.locator("section.permission.open pre.command", { hasText: "npm test" }).waitFor();
    // A request arriving later never takes focus; Alt+Shift+A goes to it.
    expect((await focused(page)).tag).not.toBe("body");
    await page.keyboard.press("Alt+Shift+A");
    expect(await focused(page)).toMatchObject({ inCard: true, text: expect.stringMatching(/^Allow once/) });
    await page
      .locator("section.permission.open")
      .getByRole("button", { name: /^Reject/ })
      .first()
      .click();
    await expect.poll(() => page.getByText("Understood, I did not run the tests.").count()).toBe(2);
    expect(await page.locator(".msg.user .who").last().textContent()).toBe("You");
    await noHorizontalOverflow(page);
    await page.context().close();
  }, 60_000);
});
