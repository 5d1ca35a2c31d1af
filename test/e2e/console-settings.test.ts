// The console's tenant settings page (decision 0062) in Chromium, against the gateway as `npm start`
// runs it, in a tenant of its own (a change here must not reach the dev tenant's other tests): an admin
// at 1280 px sees each setting with what it does and its default, a refused save puts the API's issue
// beside its field with focus there, a good one is stored; an observer at 390 px reads the same
// values greyed, with no way to save, and the page fits the phone.

import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ApiEffectiveSettings } from "../../protocol/rest-api";
import { launchChromium, screenshotsDir } from "./browser";
import { operatorToken } from "./tenants";

type Json = Record<string, any>;
const url = inject("gatewayUrl");

async function ok(path: string, credential: string, init: { method?: string; body?: unknown } = {}): Promise<Json> {
  const response = await fetch(`${url}${path}`, {
    method: init.method ?? "GET",
    headers: { Authorization: `Bearer ${credential}`, "Content-Type": "application/json" },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const body = (await response.json()) as Json;
  if (response.status >= 300) throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

let browser: Browser;
let admin: string;
let observer: string;

beforeAll(async () => {
  const slug = `settings-${crypto.randomUUID().slice(0, 8)}`;
  admin = (await ok("/v1/tenants", operatorToken(), { method: "POST", body: { slug, name: "Settings" } })).adminKey.key as string;
  observer = (await ok("/v1/keys", admin, { method: "POST", body: { kind: "client", label: "olga", role: "observer" } })).key as string;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

async function openSettings(viewport: { width: number; height: number }, key: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport })).newPage();
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(`${url}/`);
  await page.getByLabel("Key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Settings" }).click();
  await page.getByRole("form", { name: "Tenant settings" }).waitFor();
  return page;
}

const setting = (page: Page, label: string) => page.getByRole("group", { name: label, exact: true });

describe("the console's settings page in Chromium", () => {
  it("desktop 1280, an admin: each setting says what it does and its default; a refused save shows the API's issue beside its field; a good one is stored", async () => {
    const page = await openSettings({ width: 1280, height: 900 }, admin);
    const deadline = setting(page, "Deadline of a permission request (ms)");
    expect(await deadline.locator(".hint").textContent()).toContain("Default: 600000 (10 min).");
    expect(await setting(page, "An agent that runs a tool unasked").locator(".hint").textContent()).toContain("Default: stop.");
    // Every setting the API lets an admin change is on the page, each with its default.
    expect(await page.locator(".setting .hint", { hasText: "Default:" }).count()).toBe(10);
    expect(await page.getByRole("button", { name: "Save settings" }).isDisabled()).toBe(true);

    // A value the API refuses: nothing saved, the API's words beside the field, focus on it.
    await deadline.getByRole("textbox").fill("5");
    await page.getByRole("combobox", { name: "An agent that runs a tool unasked" }).selectOption("tell");
    await page.getByRole("button", { name: "Save settings" }).click();
    await deadline.locator(".field-issues").waitFor();
    expect(await deadline.locator(".field-issues").textContent()).toMatch(/1000/);
    await page.screenshot({ path: join(screenshotsDir(), "console-settings-refused-1280.png"), fullPage: true });
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("setting-permissionDeadlineMs");
    expect(((await ok("/v1/tenant/settings/effective", admin)) as ApiEffectiveSettings).settings.unaskedRuns).toBe("stop");

    // Mended by keyboard and saved with Enter: both settings stored, the rest left unset.
    await page.keyboard.press("Control+A");
    await page.keyboard.type("120000");
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "Saved" }).waitFor();
    expect(await deadline.locator(".field-issues").count()).toBe(0);
    const stored = (await ok("/v1/tenant/settings/effective", admin)) as ApiEffectiveSettings;
    expect(stored.settings.permissionDeadlineMs).toBe(120_000);
    expect(stored.settings.unaskedRuns).toBe("tell");
    expect([...stored.set].sort()).toEqual(["permissionDeadlineMs", "unaskedRuns"]);
    expect(await deadline.locator(".hint").textContent()).toContain("Now: 2 min.");
  }, 60_000);

  it("phone 390, an observer: the same values, greyed, no save; the operator's limits shown; nothing wider than the screen", async () => {
    await ok("/v1/tenant/settings", admin, { method: "PATCH", body: { unaskedRuns: "tell" } });
    const page = await openSettings({ width: 390, height: 844 }, observer);
    await page.getByText("only a tenant admin can change them").waitFor();
    const unasked = page.getByRole("combobox", { name: "An agent that runs a tool unasked" });
    expect(await unasked.inputValue()).toBe("tell");
    expect(await unasked.isDisabled()).toBe(true);
    expect(await page.getByRole("textbox").first().isDisabled()).toBe(true);
    expect(await page.getByRole("button", { name: "Save settings" }).count()).toBe(0);
    expect(await page.getByRole("row", { name: /Rules/ }).first().textContent()).toContain("1,000");
    await page.screenshot({ path: join(screenshotsDir(), "console-settings-observer-390.png"), fullPage: true });
    const { scrollWidth, innerWidth } = await page.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
    }));
    expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
  }, 60_000);
});
