// A session the gateway stops because its agent ran a tool call unasked (decision 0056), in the
// console in headless Chromium against the gateway as `npm start` runs it: an SDK agent writes a file
// without asking; the page says why the session stopped and offers Resume; a prompt sent meanwhile
// is refused with the reason and never reaches the agent; Resume (the dev tenant's client key is an
// approver) lets the next prompt through.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium } from "../browser";
import { dialInAgent, waitForAgent } from "../peers";

const url = inject("gatewayUrl");
const keys = inject("keys");
const AGENT = `held-${Date.now().toString(36)}`;

let browser: Browser;
let agent: Awaited<ReturnType<typeof dialInAgent>>;

beforeAll(async () => {
  let turns = 0;
  agent = await dialInAgent({
    url,
    key: keys.agent,
    name: AGENT,
    // The first turn writes a file nobody was asked about, then waits to be cancelled; later turns answer.
    script: async (turn) => {
      if (++turns > 1) {
        await turn.say("Back to work.");
        return "end_turn";
      }
      await turn.update({
        sessionUpdate: "tool_call",
        toolCallId: "w1",
        title: "Write notes.txt",
        kind: "edit",
        status: "completed",
        locations: [{ path: "/projects/demo/notes.txt" }],
        rawInput: { file_path: "/projects/demo/notes.txt", content: "hi" },
      });
      await new Promise((resolve) => turn.signal.addEventListener("abort", resolve));
      return "cancelled";
    },
  });
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, keys.client, AGENT, 30_000)]);
});

afterAll(async () => {
  await browser?.close();
  agent?.close();
});

async function signedIn(): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
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

describe("a session stopped after an unasked run, in Chromium", () => {
  it("says why and offers Resume; a prompt meanwhile is refused and never reaches the agent; after Resume the next prompt runs", async () => {
    const page = await signedIn();
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel("Project path").fill("/projects/demo");
    await page.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(AGENT);
    await page.getByRole("button", { name: "Start session" }).click();
    await page.locator("#prompt-text").fill("Take notes");
    await page.getByRole("button", { name: "Send" }).click();

    const held = page.locator(".held");
    await held.waitFor();
    expect(await held.textContent()).toMatch(/ran a tool call \(edit: \/projects\/demo\/notes\.txt\) without asking anyone/);

    // Sent while held: refused with the reason, and the agent never gets it.
    await page.locator("#prompt-text").fill("Go on anyway");
    await page.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => page.locator("article").first().textContent()).toMatch(/is stopped: the agent ran a tool call/);
    expect(agent.prompts.items).toHaveLength(1);

    await held.getByRole("button", { name: "Resume session" }).click();
    await held.waitFor({ state: "detached" });
    await page.locator("#prompt-text").fill("Carry on");
    await page.getByRole("button", { name: "Send" }).click();
    await expect.poll(() => page.locator("article").first().textContent()).toContain("Back to work.");
    expect(agent.prompts.items).toHaveLength(2);
  }, 60_000);
});
