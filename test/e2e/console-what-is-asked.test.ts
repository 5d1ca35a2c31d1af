// What a permission card shows of what is asked, in Chromium against the gateway as `npm start` runs
// it, in a tenant of its own (unseen changes are the tenant's, and would hold the dev tenant's rules):
// - asked because of unseen changes (decision 0062): an edit a rule answered in this session as its
//   diff, one in another session as a link to that session's card, and a command's writes (`*`) said
//   to be impossible to show; at 1280 px as it arrives, at 390 px opened by a teammate's link; the
//   command's writes stay unseen until the person ticks "I accept what this may have written" by
//   keyboard on the next card (decision 0068);
// - the frozen operation (decision 0040, issue 35): when the agent changes the tool call's row while a
//   person reads, the card shows the new operation and says so, never the one first shown.

import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium, screenshotsDir } from "./browser";
import { connectClient, dialInAgent, waitForAgent } from "./peers";
import { operatorToken } from "./tenants";

type Json = Record<string, any>;
const url = inject("gatewayUrl");
const AGENT = `console-unseen-${Date.now().toString(36)}`;
const CWD = `/projects/unseen-${Date.now().toString(36)}`;

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

const run = (toolCallId: string, command: string) => ({ toolCallId, title: "Run", kind: "execute", rawInput: { command } });
const edit = (toolCallId: string, path: string, oldText: string, newText: string) => ({
  toolCallId,
  title: "Edit",
  kind: "edit",
  rawInput: { file_path: path, old_string: oldText, new_string: newText },
  locations: [{ path }],
  content: [{ type: "diff", path, oldText, newText }],
});

let browser: Browser;
let clientKey: string;
let agent: Awaited<ReturnType<typeof dialInAgent>>;
/** The agent's turns, in order: session B's (a command and an edit the rules answer), then A's. */
const turns: ((turn: Parameters<Parameters<typeof dialInAgent>[0]["script"]>[0]) => Promise<"end_turn">)[] = [];

beforeAll(async () => {
  const slug = `unseen-${crypto.randomUUID().slice(0, 8)}`;
  const admin = (await ok("/v1/tenants", operatorToken(), { method: "POST", body: { slug, name: "Unseen" } })).adminKey.key as string;
  clientKey = (await ok("/v1/keys", admin, { method: "POST", body: { kind: "client", label: "ci" } })).key as string;
  const agentKey = (await ok("/v1/keys", admin, { method: "POST", body: { kind: "agent" } })).key as string;
  const rule = (matcher: Json) => ok("/v1/rules", admin, { method: "POST", body: { decision: "allow", matcher, scope: { project: CWD } } });
  await rule({ type: "path", glob: `${CWD}/src/**`, kinds: ["edit"] });
  await rule({ type: "argv", argv: ["cp", "notes.txt", "Makefile.sh"] });
  await rule({ type: "command", prefix: ["make", "test"] });
  agent = await dialInAgent({
    url,
    key: agentKey,
    name: AGENT,
    script: (turn) => {
      const next = turns.shift();
      if (!next) throw new Error("the agent was prompted more often than the test scripted");
      return next(turn);
    },
  });
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, clientKey, AGENT, 30_000)]);
});

afterAll(async () => {
  agent?.close();
  await browser?.close();
});

/** The agent reports a tool call, asks about it, and reports it finished once answered: what a real agent does. */
async function step(turn: Parameters<Parameters<typeof dialInAgent>[0]["script"]>[0], call: Json): Promise<Json> {
  await turn.update({ sessionUpdate: "tool_call", ...call, status: "pending" });
  const answer = await turn.askPermission(call);
  await turn.update({ sessionUpdate: "tool_call_update", toolCallId: call.toolCallId, status: "completed" });
  return answer;
}

async function signIn(page: Page, hash = ""): Promise<void> {
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(`${url}/${hash}`);
  await page.getByLabel("Key").fill(clientKey);
  await page.getByLabel("Agent").fill(AGENT);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe("unseen changes on the card in Chromium", () => {
  it("1280 then 390: this session's edit as its diff, another session's as a link to its card, a command's writes said unshowable", async () => {
    // Session B, driven by an SDK client: a command an exact rule answers (it may write anything), then an edit.
    const answers: Json[] = [];
    turns.push(async (turn) => {
      answers.push(await step(turn, run("c1", "cp notes.txt Makefile.sh")));
      answers.push(await step(turn, edit("eB", `${CWD}/src/b.c`, "int b = 1;", "int b = 2;")));
      return "end_turn";
    });
    const sdk = await connectClient({ url, key: clientKey, agent: AGENT });
    const { sessionId: b } = await sdk.request<{ sessionId: string }>("session/new", { cwd: CWD, mcpServers: [] });
    await sdk.request("session/prompt", { sessionId: b, prompt: [{ type: "text", text: "Prepare" }] });
    expect(answers.map((a) => a.outcome)).toEqual([
      { outcome: "selected", optionId: "allow-once" },
      { outcome: "selected", optionId: "allow-once" },
    ]);
    sdk.close();

    // Session A, in the browser: an edit the rule answers, then make test, which the rule may not answer now.
    let made: Json | undefined;
    let again: Json | undefined;
    let third: Json | undefined;
    turns.push(async (turn) => {
      await step(turn, edit("eA", `${CWD}/src/a.c`, "int a = 1;", "int a = 2;"));
      made = await step(turn, run("m1", "make test"));
      // The card showed both diffs (decision 0064): they are seen. The command's writes were not accepted
      // (decision 0068): the next make test is asked again, listing only them.
      again = await step(turn, run("m2", "make test"));
      // Accepted on that card: seen, and the rule answers make test again, nobody asked.
      third = await step(turn, run("m3", "make test"));
      return "end_turn";
    });
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page);
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel("Project path").fill(CWD);
    await page.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(AGENT);
    await page.getByRole("button", { name: "Start session" }).click();
    const started = page.locator("#prompt-text").or(page.getByRole("alert"));
    await started.first().waitFor();
    expect(await page.getByRole("alert").allTextContents()).toEqual([]);
    await page.locator("#prompt-text").fill("Build it");
    await page.getByRole("button", { name: "Send" }).click();
    const unseen = page.locator("section.permission.open .unseen-changes");
    await unseen.waitFor({ timeout: 30_000 });
    const a = decodeURIComponent(new URL(page.url()).hash.replace(/^#\/session\//, "").split("/")[0] ?? "");
    await checkCard(page, b);
    await page.screenshot({ path: join(screenshotsDir(), "console-unseen-1280.png"), fullPage: true });

    // A teammate opens session A by its link on a phone: the same card, from the session's history.
    const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    await signIn(phone, `#/session/${encodeURIComponent(a)}`);
    await phone.locator("section.permission.open .unseen-changes").waitFor({ timeout: 30_000 });
    await checkCard(phone, b);
    const { scrollWidth, innerWidth } = await phone.evaluate(() => ({
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
    }));
    expect(scrollWidth).toBeLessThanOrEqual(innerWidth);

    // Allowed by the person who saw it, the command's box left unticked: the agent gets the answer.
    await page
      .locator("section.permission.open")
      .getByRole("button", { name: /^Allow once/ })
      .click();
    await expect.poll(() => made?.outcome, { timeout: 30_000 }).toEqual({ outcome: "selected", optionId: "allow-once" });
    // The next make test is asked: the command's writes are still unseen, alone on the card.
    const card = page.locator("section.permission.open[data-tool-call-id='m2']");
    await card.waitFor({ timeout: 30_000 });
    const left = card.locator(".unseen-changes");
    expect(await left.locator(".unseen-head").textContent()).toContain("(1; 1 cannot be shown)");
    expect(await left.locator("li").count()).toBe(1);
    expect(again).toBeUndefined();
    // By keyboard: from the link to the command's session, Tab reaches its box, Space ticks it.
    await left.locator("li.anything").getByRole("link", { name: "another session" }).focus();
    await page.keyboard.press("Tab");
    const box = left.getByRole("checkbox", { name: "I accept what this may have written" });
    expect(await box.evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press("Space");
    expect(await box.isChecked()).toBe(true);
    await page.screenshot({ path: join(screenshotsDir(), "console-unseen-accept-1280.png"), fullPage: true });
    await card.getByRole("button", { name: /^Allow once/ }).click();
    await expect.poll(() => again?.outcome, { timeout: 30_000 }).toEqual({ outcome: "selected", optionId: "allow-once" });
    await expect.poll(() => third?.outcome, { timeout: 30_000 }).toEqual({ outcome: "selected", optionId: "allow-once" });
    expect(await page.locator("section.permission[data-tool-call-id='m3']").count()).toBe(0);
  }, 120_000);
});

describe("the frozen operation in Chromium", () => {
  it("the agent changes git status to a push while the person reads: the card shows the push and says it changed; the person's reject reaches the agent", async () => {
    let asked: Promise<Json> | undefined;
    let change: () => void = () => undefined;
    const changed = new Promise<void>((resolve) => (change = resolve));
    turns.push(async (turn) => {
      const call = run("g1", "git status");
      await turn.update({ sessionUpdate: "tool_call", ...call, status: "pending" });
      asked = turn.askPermission(call);
      await changed;
      await turn.update({ sessionUpdate: "tool_call_update", toolCallId: "g1", rawInput: { command: "git push --force origin main" } });
      await asked;
      return "end_turn";
    });
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page);
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel("Project path").fill(CWD);
    await page.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(AGENT);
    await page.getByRole("button", { name: "Start session" }).click();
    await page.locator("#prompt-text").fill("Status");
    await page.getByRole("button", { name: "Send" }).click();
    const card = page.locator("section.permission.open");
    await card.locator("pre.command", { hasText: "git status" }).waitFor();

    change();
    await card.locator("pre.command", { hasText: "git push --force origin main" }).waitFor();
    expect(await card.locator("pre.command", { hasText: "git status" }).count()).toBe(0);
    expect(await card.textContent()).toContain("The agent changed this request (rawInput) after it was asked; this is the new one.");
    await page
      .locator(".notice.warn", { hasText: /changed/ })
      .first()
      .waitFor();
    expect(await page.locator("section.permission.open").count()).toBe(1);

    await card.getByRole("button", { name: /^Reject/ }).click();
    await expect
      .poll(async () => ((await asked) as Json | undefined)?.outcome, { timeout: 30_000 })
      .toEqual({ outcome: "selected", optionId: "reject-once" });
  }, 120_000);
});

/** The waiting card's unseen changes: A's edit as its diff, B's edit as a link, B's command as what cannot be shown. */
async function checkCard(page: Page, b: string): Promise<void> {
  const unseen = page.locator("section.permission.open .unseen-changes");
  expect(await unseen.locator(".unseen-head").textContent()).toContain("(3; 1 cannot be shown)");
  const diff = unseen.getByRole("figure", { name: `Diff of ${CWD}/src/a.c` });
  expect(await diff.locator(".line.add").textContent()).toContain("int a = 2;");
  expect(await diff.locator(".line.del").textContent()).toContain("int a = 1;");
  // Another session's edit: its diff as the gateway sent it with the change (decision 0064), and a link to its card.
  const other = unseen.getByRole("figure", { name: `Diff of ${CWD}/src/b.c` });
  expect(await other.locator(".line.add").textContent()).toContain("int b = 2;");
  const elsewhere = unseen.locator("li.diff").filter({ hasText: "int b = 2;" });
  expect(await elsewhere.getByRole("link", { name: "another session" }).getAttribute("href")).toBe(
    `#/session/${encodeURIComponent(b)}/request/eB`,
  );
  const command = unseen.locator("li.anything");
  expect(await command.textContent()).toMatch(/Cannot be shown:.*may have written anything/);
  // What is known of it (decision 0068): the command, where it ran, the rule that answered it, and an unticked acceptance.
  expect(await command.locator("code").first().textContent()).toBe("cp notes.txt Makefile.sh");
  expect(await command.locator(".accept").textContent()).toMatch(new RegExp(`Ran in ${CWD}\\. Answered by rule rule_\\S+ at .+\\.`));
  expect(await command.getByRole("checkbox", { name: "I accept what this may have written" }).isChecked()).toBe(false);
  expect(await command.getByRole("link", { name: "another session" }).getAttribute("href")).toBe(
    `#/session/${encodeURIComponent(b)}/request/c1`,
  );
}
