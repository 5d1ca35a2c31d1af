// Prompt queueing in the console (decision 0067), in Chromium, against the gateway as `npm start` runs
// it, in a tenant of its own: for an agent that advertises it as claude-agent-acp does, Send stays on
// while a turn runs and says a prompt joins the running turn; each prompt sent then reaches the agent;
// the sixth in flight is refused (`prompt_queue_full`) in words, its text back in the box; the turn
// ends with the last answer. At 390 px (a phone) and 1280 px.

import { join } from "node:path";
import { agent as acpAgent } from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import type { Browser, Page } from "playwright-core";
import { WebSocket } from "ws";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium, screenshotsDir } from "./browser";
import { Recorder, waitForAgent } from "./peers";
import { tenantOfItsOwn } from "./tenants";

const url = inject("gatewayUrl");
const AGENT = `console-queue-${Date.now().toString(36)}`;

interface HeldPrompt {
  sessionId: string;
  text: string;
  answer(stopReason: "end_turn" | "cancelled"): void;
}

/**
 * An SDK agent that advertises prompt queueing where claude-agent-acp does and holds every prompt
 * until the test answers it: prompts the gateway relays while a turn runs arrive here at once.
 */
function queueingAgent(key: string) {
  const prompts = new Recorder<HeldPrompt>();
  let n = 0;
  const app = acpAgent({ name: "queueing-agent" })
    .onRequest("initialize", () => ({
      protocolVersion: 1,
      agentCapabilities: { loadSession: false, _meta: { claudeCode: { promptQueueing: true } } },
      agentInfo: { name: "queueing-agent", version: "1.0.0" },
      authMethods: [],
    }))
    .onRequest("session/new", () => ({ sessionId: `queue-${Date.now()}-${n++}` }))
    .onRequest(
      "session/prompt",
      ({ params }) =>
        new Promise<{ stopReason: "end_turn" | "cancelled" }>((resolve) => {
          const first = params.prompt[0];
          prompts.push({
            sessionId: params.sessionId,
            text: first?.type === "text" ? first.text : "",
            answer: (stopReason) => resolve({ stopReason }),
          });
        }),
    );
  const stream = createWebSocketStream(`${url.replace(/^http/, "ws")}/agents/${encodeURIComponent(AGENT)}/connect`, {
    // SAFETY: ws's WebSocket has the constructor shape the SDK asks for.
    WebSocket: WebSocket as never,
    headers: { Authorization: `Bearer ${key}` },
  });
  const connection = app.connect(stream);
  return { prompts, close: () => connection.close() };
}

let browser: Browser;
let client: string;
let agent: ReturnType<typeof queueingAgent>;

beforeAll(async () => {
  const keys = await tenantOfItsOwn(url, "console-queue");
  client = keys.client;
  agent = queueingAgent(keys.agent);
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, client, AGENT, 30_000)]);
});

afterAll(async () => {
  agent?.close();
  await browser?.close();
});

async function newSession(width: number): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width, height: width < 600 ? 844 : 860 } })).newPage();
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(`${url}/`);
  await page.getByLabel("Key").fill(client);
  await page.getByLabel("Agent").fill(AGENT);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "New session" }).click();
  await page.getByLabel("Project path").fill(`/projects/queue-${width}`);
  await page.getByRole("button", { name: "Start session" }).click();
  return page;
}

describe("prompt queueing in the console", () => {
  for (const width of [390, 1280]) {
    it(`${width} px: Send stays on while the turn runs and says the prompt joins it; the sixth in flight is refused in words`, async () => {
      const page = await newSession(width);
      const send = page.getByRole("button", { name: "Send" });
      const box = page.locator("#prompt-text");
      const hint = page.getByText("a prompt you send now joins its running turn");
      const earlier = new Set(agent.prompts.items); // the other width's session sent the same words
      const reached = (text: string) => agent.prompts.waitFor((p) => !earlier.has(p) && p.text === text, 15_000, `“${text}” at the agent`);

      await box.fill("Fix the build");
      await send.click();
      const first = await reached("Fix the build");
      const mine = () => agent.prompts.items.filter((p) => p.sessionId === first.sessionId);
      await page.locator("article.session .badge.turn-running").waitFor();
      // The turn runs: Send stays on, and says where the prompt goes.
      await hint.waitFor();
      await box.fill("And run the tests");
      expect(await send.isDisabled()).toBe(false);
      expect(await send.getAttribute("aria-describedby")).toBe("prompt-joins");
      await send.click();
      await reached("And run the tests");
      for (const text of ["Third", "Fourth", "Fifth"]) {
        await box.fill(text);
        await send.click();
        await reached(text);
      }
      expect(mine()).toHaveLength(5);

      // The sixth in flight: refused by the gateway, said in words, the words back in the box; the turn goes on.
      await box.fill("Sixth");
      await send.click();
      const alert = page.getByRole("alert").filter({ hasText: "Not sent" });
      await alert.waitFor();
      expect(await alert.textContent()).toContain("this turn already has 5 prompts in flight, the most the gateway takes");
      expect(await box.inputValue()).toBe("Sixth");
      expect(mine()).toHaveLength(5);
      expect(await page.locator("article.session .badge.turn-running").count()).toBe(1);
      await page.screenshot({ path: join(screenshotsDir(), `console-prompt-queue-${width}.png`), fullPage: false });

      // As claude-agent-acp does: the running prompt answered end_turn on hand-over, then the rest; the turn ends with the last.
      for (const held of mine().slice(0, 4)) held.answer("end_turn");
      await hint.waitFor(); // four answered, one in flight: still running, still joining
      mine()[4]?.answer("end_turn");
      await page.locator("article.session .badge.turn-idle").waitFor({ timeout: 15_000 });
      await hint.waitFor({ state: "detached" });
      expect(await page.getByText(/The prompt failed/).count()).toBe(0);
      await page.context().close();
    }, 90_000);
  }
});
