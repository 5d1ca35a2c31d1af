// The web console in a real browser: headless Chromium (browser.ts) driven by playwright-core, against the
// gateway as `npm start` runs it, with the demo agent (demo/agent.ts) through `acp-gateway agent`.
// One flow on a desktop and the same flow on a 390×844 phone; screenshots go to test-results/screenshots (browser.ts).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROOT } from "../../scripts/local-gateway";
import { launchChromium, screenshotsDir } from "./browser";
import { waitForAgent } from "./peers";
import { NODE, killAll, startCli } from "./processes";

const url = inject("gatewayUrl");
const keys = inject("keys");
const AGENT = `console-demo-${Date.now().toString(36)}`;
const SHOTS = screenshotsDir();

let browser: Browser;

beforeAll(async () => {
  startCli(["agent", "--url", url, "--name", AGENT, "--", NODE, join(ROOT, "demo", "agent.ts")], { ACP_GATEWAY_KEY: keys.agent });
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, keys.client, AGENT, 30_000)]);
});

afterAll(async () => {
  await browser?.close();
  killAll();
});

async function openConsole(viewport: { width: number; height: number }): Promise<Page> {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  const page = await context.newPage();
  const external: string[] = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(url) && !r.url().startsWith("ws://127.0.0.1") && !r.url().startsWith("blob:")) external.push(r.url());
  });
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(url);
  (page as Page & { external?: string[] }).external = external;
  return page;
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel("Key").fill(key);
  await page.getByLabel("Agent").fill(AGENT);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function newSession(page: Page, project: string, agent = AGENT): Promise<void> {
  await page.getByRole("button", { name: "New session" }).click();
  await page.getByLabel("Project path").fill(project);
  await page.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(agent);
  await page.getByRole("button", { name: "Start session" }).click();
}

async function prompt(page: Page, text: string): Promise<void> {
  await page.locator("#prompt-text").fill(text);
  await page.getByRole("button", { name: "Send" }).click();
}

const openPermission = (page: Page) => page.locator("section.permission.open");

async function noHorizontalOverflow(page: Page): Promise<void> {
  const { scrollWidth, innerWidth } = await page.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
}

/**
 * Clicks `button` in the page and says whether the element `selector` names has the focus at the moment
 * it is first on the page (a MutationObserver's callback, before any other task: a person's next key
 * press, or the test's next fill). Focus given a frame later is not there yet: "focused" or what has it.
 */
async function focusedWhenShown(button: Locator, selector: string): Promise<string> {
  return button.evaluate(
    (clicked, wanted) =>
      new Promise<string>((resolve) => {
        const shown = new MutationObserver(() => {
          const element = document.querySelector(wanted);
          if (!element) return;
          shown.disconnect();
          const active = document.activeElement;
          const what = `${active?.tagName.toLowerCase()} “${(active?.textContent ?? "").trim().slice(0, 40)}”`;
          resolve(active === element ? "focused" : `not focused: the ${what} has the focus`);
        });
        shown.observe(document.body, { childList: true, subtree: true });
        (clicked as HTMLElement).click();
      }),
    selector,
  );
}

/** Scrolls so the element ends just above the sticky prompt bar: the screenshots show a whole card. */
async function showWhole(locator: Locator): Promise<void> {
  await locator.evaluate((el) => {
    const bar = document.querySelector(".prompt-bar")?.getBoundingClientRect().height ?? 0;
    window.scrollBy(0, el.getBoundingClientRect().bottom - (window.innerHeight - bar - 8));
  });
}

async function onScreen(page: Page, locator: Locator): Promise<void> {
  await locator.scrollIntoViewIfNeeded();
  const box = await locator.boundingBox();
  const width = page.viewportSize()?.width ?? 0;
  expect(box, "the control is laid out").not.toBeNull();
  expect(box!.x).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width).toBeLessThanOrEqual(width);
}

describe("the web console in Chromium", () => {
  it("desktop: a turn with tool cards and a diff, approved in the page; an always-rule shown first, then auto-answering, revoked; the audit shows each", async () => {
    const page = await openConsole({ width: 1280, height: 860 });

    // The prompt bar is not there before sign-in; a bad key says so.
    expect(await page.locator("#prompt-text").count()).toBe(0);
    await signIn(page, "not-a-key");
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("not accepted");
    // Signed in by keyboard alone, focus visible on the way.
    await page.getByLabel("Key").fill("");
    await page.getByLabel("Key").focus();
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("name"))).toBe("key");
    expect(await page.evaluate(() => getComputedStyle(document.activeElement as Element).outlineStyle)).not.toBe("none");
    await page.keyboard.type(keys.client);
    await page.keyboard.press("Tab");
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.type(AGENT);
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "New session" }).waitFor();
    expect(await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length }))).toEqual({ local: 0, session: 2 });

    // "New session" puts the cursor in its first field the moment the form is on the page (focus a frame
    // later sent keys already being typed into the Agent field to the project path: the phone test's
    // session once started in "/projects/democonsole-demo-…"); an unknown agent name and a registered
    // agent that is offline are told apart, and the tenant's agents are offered.
    expect(await focusedWhenShown(page.getByRole("button", { name: "New session" }), 'form[aria-label="New session"] [name="cwd"]')).toBe(
      "focused",
    );
    await page.getByRole("button", { name: "New session" }).click(); // closed again: newSession opens it
    const unknown = `nobody-${Date.now().toString(36)}`;
    await newSession(page, "/projects/demo", unknown);
    const newForm = page.getByRole("form", { name: "New session" });
    await expect.poll(() => newForm.getByRole("alert").textContent()).toContain(`There is no agent named “${unknown}” in this tenant`);
    expect(await newForm.getByRole("alert").textContent()).toContain(`“${AGENT}”`);
    const sleepy = `sleepy-${Date.now().toString(36)}`;
    const registered = await fetch(`${url}/v1/agents`, {
      method: "POST",
      headers: { Authorization: `Bearer ${keys.admin}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: sleepy }),
    });
    expect(registered.status).toBe(201);
    await page.getByRole("button", { name: "New session" }).click(); // closed: newSession opens it, and the agents are read again
    await newSession(page, "/projects/demo", sleepy);
    await expect.poll(() => newForm.getByRole("alert").textContent()).toContain(`Agent “${sleepy}” is offline`);
    await newForm.getByLabel("Agent").fill(AGENT);
    await page.getByRole("button", { name: "Start session" }).click();
    // The open session is in the address, so a reload opens it again.
    await expect.poll(() => new URL(page.url()).hash).toMatch(/^#\/session\/.+/);

    // A turn: streamed text, the read card completing, the edit's permission card with its diff.
    await prompt(page, "Tidy the README");
    await page.getByText("Let me look at the project first.").waitFor();
    const read = page.locator("section.tool", { hasText: "Read README.md" });
    await read.locator(".badge.status-completed").waitFor();
    const edit = openPermission(page);
    await edit.waitFor();
    expect(await edit.locator(".agent-words").textContent()).toContain("“Edit README.md”");
    expect(await edit.locator(".diff .del").textContent()).toContain("A demo project.");
    expect(await edit.locator(".diff .add").textContent()).toContain("A demo project, edited through the gateway.");
    expect(await edit.locator(".paths").textContent()).toContain("/projects/demo/README.md");
    expect(await edit.locator(".option-kind").allTextContents()).toEqual([
      "allow_once",
      "allow_always",
      "reject_once",
      "reject_always",
      "allow_always",
      "reject_always",
    ]);
    await showWhole(edit);
    await page.screenshot({ path: join(SHOTS, "console-desktop.png") });

    // Approved in the page: the agent continues, the card says who answered.
    await edit.getByRole("button", { name: /^Allow once/ }).click();
    await expect.poll(() => page.locator("section.permission.closed").first().textContent()).toContain("Answered by you (dev)");
    const editCard = page.locator("section.tool", { hasText: "Edit README.md" });
    await editCard.locator(".badge.status-completed").waitFor();

    // The command's request: "always" first shows the rule that will be stored and what it covers.
    const run = openPermission(page);
    await run.locator("pre.command", { hasText: "npm test" }).waitFor();
    // The gateway's own always (decision 0042), named by the rule it stores, beside the agent's.
    const always = run.getByRole("button", { name: /^Always \(gateway rule\): Always allow `npm test`/ });
    // Keyboard focus moves with the flow: after "always", to Confirm, as it appears.
    expect(await focusedWhenShown(always, '[aria-label="Confirm the rule"] button.option')).toBe("focused");
    const confirm = run.getByRole("group", { name: "Confirm the rule" });
    await expect.poll(() => page.evaluate(() => document.activeElement?.textContent ?? "")).toMatch(/^Confirm/);
    await expect
      .poll(() => confirm.locator(".rule-description").textContent())
      .toBe(
        `Always allow \`npm test\` with no other arguments (only --silent): no config option, nothing after \`--\`, in /projects/demo (agent ${AGENT})`,
      );
    expect(await confirm.locator(".rule-scope").textContent()).toContain("`npm test` with no other arguments (only --silent)");
    expect(await confirm.locator(".rule-scope").textContent()).toContain(
      `in /projects/demo itself (a command run in a subdirectory is asked), for agent ${AGENT}, for everyone on the team`,
    );
    await expect.poll(() => confirm.locator(".dry-run").textContent()).toContain("no current rule answers this request");
    await confirm.getByRole("button", { name: /^Confirm/ }).click();
    await page.getByText("All done: the tests pass.").waitFor();
    await page.getByText(/Remembered for the team by dev: Always allow `npm test/).waitFor();
    await page.locator("section.tool", { hasText: "Run the tests" }).locator(".badge.status-completed").waitFor();
    await expect.poll(() => page.getByRole("button", { name: "Send" }).isDisabled()).toBe(true); // empty prompt
    // Titled by its first prompt in the header as in the list, without a reload (issue 38: "Untitled session").
    await expect.poll(() => page.locator("#session-title").textContent()).toBe("Tidy the README");
    // A reload keeps the session (its URL), titled by its first prompt, with its history replayed once.
    await page.reload();
    await page.getByRole("heading", { name: "Tidy the README" }).waitFor();
    await page.getByText("All done: the tests pass.").waitFor();
    expect(await page.getByText("Let me look at the project first.").count()).toBe(1);

    // The next turn: the edit is asked again, the command is answered by the rule.
    await prompt(page, "Once more");
    await openPermission(page)
      .getByRole("button", { name: /^Allow once/ })
      .click();
    await page.getByText(/Auto-answered by the team rule “Always allow `npm test/).waitFor();
    await expect.poll(() => page.getByText("All done: the tests pass.").count()).toBe(2);

    // Rules: listed, dry-run says it would auto-answer, revoked, and the dry run says so.
    await page.getByRole("button", { name: "Rules" }).click();
    await page.getByRole("form", { name: "Filter the rules" }).getByLabel("Agent").fill(AGENT);
    await page.getByRole("form", { name: "Filter the rules" }).getByRole("button", { name: "Filter" }).click();
    const rule = page.locator("section.rule", { hasText: "npm test" });
    await rule.waitFor();
    const dryRun = page.getByRole("form", { name: "Dry run" });
    await dryRun.getByLabel("Command").fill("npm test --silent");
    await dryRun.getByLabel("Project").fill("/projects/demo");
    await dryRun.getByLabel("Agent").fill(AGENT);
    await dryRun.getByRole("button", { name: "Test" }).click();
    await expect.poll(() => dryRun.getByRole("status").textContent()).toContain("Yes: allow by the rule");
    // Expiry needs an admin key: a client key gets the gateway's 403, in words.
    await rule.getByLabel("Expires at").fill("2099-01-01T09:00");
    await rule.getByRole("button", { name: "Set expiry" }).click();
    await expect.poll(() => rule.getByRole("alert").textContent()).toContain("This key may not do that");
    await rule.getByRole("button", { name: "Revoke" }).click();
    await rule.getByRole("button", { name: "Confirm revoke" }).click();
    await page.getByText("No rules match.").waitFor();
    await dryRun.getByRole("button", { name: "Test" }).click();
    await expect.poll(() => dryRun.getByRole("status").textContent()).toContain("No: no rule covers it");

    // The audit: each decision, who or what made it; exported as NDJSON.
    await page.getByRole("button", { name: "Audit" }).click();
    const filter = page.getByRole("form", { name: "Filter the audit" });
    await filter.getByRole("textbox", { name: "Agent" }).fill(AGENT);
    await filter.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => page.locator(".audit-entry").count()).toBe(4);
    // The rule's description appears once the rules list has loaded beside the audit.
    const ruleDecided = (texts: string[]) => texts.filter((d) => d.startsWith("Auto-answered by the team rule “Always allow `npm test"));
    await expect.poll(async () => ruleDecided(await page.locator(".audit-entry .decided-by").allTextContents())).toHaveLength(1);
    const decided = await page.locator(".audit-entry .decided-by").allTextContents();
    expect(decided.filter((d) => d === "Answered by dev")).toHaveLength(3);
    expect(decided.filter((d) => d.startsWith("Auto-answered by the team rule “Always allow `npm test"))).toHaveLength(1);
    const [download] = await Promise.all([page.waitForEvent("download"), filter.getByRole("button", { name: "Export NDJSON" }).click()]);
    const lines = readFileSync((await download.path()) as string, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.decidedBy.type).sort()).toEqual(["person", "person", "person", "rule"]);

    expect((page as Page & { external?: string[] }).external).toEqual([]);
    await page.context().close();
  }, 60_000);

  it("phone, 390×844: the same flow fits the screen — Markdown rendered safely, a diff approved, an always-rule shown first then auto-answering, a cancelled turn, revoked, audited", async () => {
    const page = await openConsole({ width: 390, height: 844 });
    await signIn(page, keys.client);
    await page.getByRole("button", { name: "New session" }).waitFor();
    await noHorizontalOverflow(page);
    // The top bar on a phone: who is signed in is not cut ("d."), Sign out stays on one line.
    const who = page.locator(".topbar .who-name");
    await who.waitFor();
    expect(await who.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
    const signOut = page.getByRole("button", { name: "Sign out" });
    expect(await signOut.evaluate((e) => e.getClientRects().length === 1 && e.scrollHeight <= 44)).toBe(true);
    await onScreen(page, signOut);
    await newSession(page, "/projects/demo");

    // The agent echoes the prompt: Markdown is rendered, HTML in it is shown as text, never run.
    await prompt(page, 'Make it **bold** <img src=x onerror="window.__xss=1">');
    const reply = page.locator(".msg.agent .md").first();
    await reply.locator("strong", { hasText: "bold" }).waitFor();
    // The echo streams in chunks: wait for the whole reply before judging what it rendered.
    await page.locator(".msg.agent .md", { hasText: "<img src=x" }).first().waitFor();
    expect(await reply.locator("img").count()).toBe(0);
    expect(await reply.textContent()).toContain("<img src=x");
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();

    // The edit's diff on a phone, every option on screen; "always" shows the rule first.
    const edit = openPermission(page);
    await edit.locator(".diff .add").waitFor();
    for (const option of await edit.getByRole("button").all()) await onScreen(page, option);
    await noHorizontalOverflow(page);
    await showWhole(edit);
    await page.screenshot({ path: join(SHOTS, "console-phone.png") });
    await edit.getByRole("button", { name: /^Always allow this file/ }).click();
    const confirm = edit.getByRole("group", { name: "Confirm the rule" });
    await expect
      .poll(() => confirm.locator(".rule-description").textContent())
      .toBe(`Always allow edit of /projects/demo/README.md in /projects/demo (agent ${AGENT})`);
    expect(await confirm.locator(".rule-scope").textContent()).toContain("edit of /projects/demo/README.md only");
    await onScreen(page, confirm.getByRole("button", { name: /^Confirm/ }));
    await noHorizontalOverflow(page);
    await confirm.getByRole("button", { name: /^Confirm/ }).click();
    // Answered by keyboard.
    await openPermission(page)
      .getByRole("button", { name: /^Allow once/ })
      .focus();
    await page.keyboard.press("Enter");
    await page.getByText("All done: the tests pass.").waitFor();
    // The header takes the title the list shows (the first prompt), wrapped within the phone's width.
    await expect.poll(() => page.locator("#session-title").textContent()).toContain("Make it **bold**");
    await noHorizontalOverflow(page);

    // Next turn: the edit is auto-answered; the command waits; the turn is cancelled from the phone.
    await prompt(page, "Again");
    await page.getByText(/Auto-answered by the team rule “Always allow edit of \/projects\/demo\/README.md/).waitFor();
    await openPermission(page).locator("pre.command", { hasText: "npm test" }).waitFor();
    const cancel = page.getByRole("button", { name: "Cancel turn" });
    await onScreen(page, cancel);
    await cancel.click();
    await page.getByText("The turn was cancelled.").waitFor();
    const run = page.locator("section.tool", { hasText: "Run the tests" }).last();
    expect(await run.locator(".badge.status").textContent()).toBe("cancelled (the turn ended)");
    expect(await run.locator(".resolution").textContent()).toContain("The turn was cancelled by dev");
    expect(await page.locator("section.tool .badge.status-pending").count()).toBe(0);
    await noHorizontalOverflow(page);

    // The session list on a phone: this session, with its project.
    await page.getByRole("button", { name: "Back to the sessions" }).click();
    await page.locator(".entry", { hasText: "/projects/demo" }).first().waitFor();
    await noHorizontalOverflow(page);

    // Rules on a phone: the rule, revoked.
    await page.getByRole("button", { name: "Rules" }).click();
    await page.getByRole("form", { name: "Filter the rules" }).getByLabel("Agent").fill(AGENT);
    await page.getByRole("form", { name: "Filter the rules" }).getByRole("button", { name: "Filter" }).click();
    const rule = page.locator("section.rule", { hasText: "README.md" });
    await onScreen(page, rule.getByRole("button", { name: "Revoke" }));
    await noHorizontalOverflow(page);
    await rule.getByRole("button", { name: "Revoke" }).click();
    await rule.getByRole("button", { name: "Confirm revoke" }).click();
    await page.getByText("No rules match.").waitFor();

    // The audit on a phone: the person, the rule and the cancel.
    await page.getByRole("button", { name: "Audit" }).click();
    const filter = page.getByRole("form", { name: "Filter the audit" });
    await filter.getByRole("textbox", { name: "Session" }).fill((await sessionIdOf(page)) ?? "");
    await filter.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => page.locator(".audit-entry").count()).toBe(4);
    const decided = await page.locator(".audit-entry .decided-by").allTextContents();
    expect(decided.filter((d) => d === "Answered by dev")).toHaveLength(2);
    expect(decided).toContain(
      `Auto-answered by the team rule “Always allow edit of /projects/demo/README.md in /projects/demo (agent ${AGENT})”`,
    );
    expect(decided.filter((d) => /^(Cancelled by dev|The turn was cancelled)$/.test(d))).toHaveLength(1);
    await noHorizontalOverflow(page);
    // Readable in dark: the page follows prefers-color-scheme.
    const light = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    await page.emulateMedia({ colorScheme: "dark" });
    expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).not.toBe(light);
    await page.screenshot({ path: join(SHOTS, "console-phone-audit-dark.png") });
    expect((page as Page & { external?: string[] }).external).toEqual([]);
    await page.context().close();
  }, 60_000);
});

describe("the web console with two people on one session", () => {
  it("the other person's page follows the turn live, answers first, and the first page's card says who; the turn's end reaches both", async () => {
    const first = await openConsole({ width: 1280, height: 860 });
    await signIn(first, keys.client);
    await newSession(first, "/projects/demo");
    await prompt(first, "Shared turn");
    await openPermission(first).waitFor();

    // The second person (another key: "you" is the signed-in person, decision 0048) opens the same
    // session from the list, mid-turn: history, then the waiting request.
    const second = await openConsole({ width: 390, height: 844 });
    await signIn(second, keys.admin);
    await second.locator(".entry", { hasText: "approval" }).first().waitFor();
    expect(await second.locator(".entry").first().textContent()).toContain("1 approval waiting");
    await second.locator(".entry").first().click();
    const asked = second.locator(".msg.user", { hasText: "Shared turn" });
    await asked.waitFor();
    expect(await asked.locator(".who").textContent()).toBe("dev"); // who prompted, from the gateway
    await openPermission(second)
      .getByRole("button", { name: /^Allow once/ })
      .click();

    await expect
      .poll(() => first.locator("section.permission.closed").first().textContent())
      .toContain("Answered by dev-admin — “Allow once” (allow_once)");
    expect(await first.locator("section.permission.closed").first().textContent()).not.toContain("you");
    await openPermission(second).locator("pre.command", { hasText: "npm test" }).waitFor();
    await openPermission(first)
      .getByRole("button", { name: /^Reject/ })
      .first()
      .click();
    await second.getByText("Understood, I did not run the tests.").waitFor();
    expect(await second.locator("section.permission.closed").last().textContent()).toContain("Answered by dev — “Reject” (reject_once)");
    // The turn was the first page's; the second learns it ended and may prompt.
    await expect.poll(() => second.getByRole("button", { name: "Cancel turn" }).isDisabled(), { timeout: 10_000 }).toBe(true);
    await first.context().close();
    await second.context().close();
  }, 60_000);
});

describe("the web console shows hostile agent text as it is", () => {
  it("terminal escapes and a direction override the agent echoes are shown as ␛ and ⟨U+202E⟩, with a warning beside them", async () => {
    const page = await openConsole({ width: 1280, height: 860 });
    await signIn(page, keys.client);
    await newSession(page, "/projects/hostile");
    // The demo agent echoes the prompt: its message carries the escapes back.
    await prompt(page, "ls\u001b[2K\u001b[1A safe \u202eexe.sh");
    const said = page.locator(".msg.agent", { hasText: "You asked" });
    await said.getByText("Let me look at the project first.").waitFor();
    const text = (await said.textContent()) ?? "";
    expect(text).toContain("ls␛[2K␛[1A safe ⟨U+202E⟩exe.sh");
    expect(text.includes("\u001b") || text.includes("\u202e")).toBe(false);
    expect(await said.locator(".display-warn").textContent()).toContain("control or invisible characters");
    // The person's own message, as other people see it, is shown the same way.
    expect(await page.locator(".msg.user").last().textContent()).toContain("ls␛[2K␛[1A safe ⟨U+202E⟩exe.sh");
    await page.getByRole("button", { name: "Cancel turn" }).click();
    await page.context().close();
  }, 60_000);
});

/** The id of the newest session of the test's agent (the phone's), from the sessions API. */
async function sessionIdOf(page: Page): Promise<string | undefined> {
  const response = await page.request.get(`${url}/v1/sessions?limit=200`, { headers: { Authorization: `Bearer ${keys.client}` } });
  const { items } = (await response.json()) as { items: { id: string; agent: string; createdAt: number }[] };
  return items.filter((s) => s.agent === AGENT).sort((a, b) => b.createdAt - a.createdAt)[0]?.id;
}
