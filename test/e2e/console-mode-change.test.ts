// Four eyes on a mode change (decision 0061) in the console and with the SDK's client, against the
// gateway as `npm start` runs it, in a tenant of its own (settings.modes.fourEyes is the tenant's):
// - in Chromium: ada's switch to bypassPermissions is held; on a phone (390 px) ada's own card greys
//   out Approve saying a second person approves; bob (1280 px) finds it under "Waiting on you", opens
//   its card, approves, and the agent receives the set_mode; both cards say who approved, the header
//   shows the governed mode and the transcript says the agent switched; reloaded, the decided card is
//   replayed from the session's history (decision 0064);
// - with the SDK's client alone: session/set_mode stays pending until bob approves by REST, then
//   resolves with the agent's own answer.

import { join } from "node:path";
import { agent as acpAgent } from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import type { Browser, Page } from "playwright-core";
import { WebSocket } from "ws";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { launchChromium, screenshotsDir } from "./browser";
import { Recorder, connectClient, waitForAgent } from "./peers";
import { operatorToken } from "./tenants";

type Json = Record<string, any>;
const url = inject("gatewayUrl");
const AGENT = `console-modes-${Date.now().toString(36)}`;
const CWD = `/projects/modes-${Date.now().toString(36)}`;
const MODES = {
  currentModeId: "default",
  availableModes: [
    { id: "default", name: "Default" },
    { id: "bypassPermissions", name: "Bypass permissions" },
  ],
};

async function call(path: string, credential: string, init: { method?: string; body?: unknown } = {}): Promise<Json> {
  const response = await fetch(`${url}${path}`, {
    method: init.method ?? "GET",
    headers: { Authorization: `Bearer ${credential}`, "Content-Type": "application/json" },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const body = (await response.json()) as Json;
  if (response.status >= 300) throw new Error(`${init.method ?? "GET"} ${path}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/** An SDK agent that advertises two modes and answers session/set_mode, reporting the new mode first as real agents do. */
function modesAgent(key: string) {
  const setModes = new Recorder<Json>();
  let n = 0;
  const app = acpAgent({ name: "modes-agent" })
    .onRequest("initialize", () => ({
      protocolVersion: 1,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "modes-agent", version: "1.0.0" },
      authMethods: [],
    }))
    .onRequest("session/new", () => ({ sessionId: `modes-${Date.now()}-${n++}`, modes: MODES }))
    .onRequest("session/prompt", () => ({ stopReason: "end_turn" as const }))
    .onRequest("session/set_mode", async ({ params, client }) => {
      setModes.push(params as Json);
      await client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "current_mode_update", currentModeId: params.modeId },
      });
      return { _meta: { answeredBy: "modes-agent", modeId: params.modeId } };
    });
  const stream = createWebSocketStream(`${url.replace(/^http/, "ws")}/agents/${encodeURIComponent(AGENT)}/connect`, {
    // SAFETY: ws's WebSocket has the constructor shape the SDK asks for.
    WebSocket: WebSocket as never,
    headers: { Authorization: `Bearer ${key}` },
  });
  const connection = app.connect(stream);
  return { setModes, close: () => connection.close() };
}

let browser: Browser;
let ada: string;
let bob: string;
let agent: ReturnType<typeof modesAgent>;

beforeAll(async () => {
  const slug = `modes-${crypto.randomUUID().slice(0, 8)}`;
  const admin = (await call("/v1/tenants", operatorToken(), { method: "POST", body: { slug, name: "Modes" } })).adminKey.key as string;
  await call("/v1/tenant/settings", admin, { method: "PATCH", body: { modes: { fourEyes: true } } });
  const person = async (user: string) =>
    (await call("/v1/keys", admin, { method: "POST", body: { kind: "client", label: user, user, role: "approver" } })).key as string;
  [ada, bob] = await Promise.all([person("ada"), person("bob")]);
  const agentKey = (await call("/v1/keys", admin, { method: "POST", body: { kind: "agent" } })).key as string;
  agent = modesAgent(agentKey);
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, ada, AGENT, 30_000)]);
});

afterAll(async () => {
  agent?.close();
  await browser?.close();
});

async function signIn(page: Page, key: string, hash = ""): Promise<void> {
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(`${url}/${hash}`);
  await page.getByLabel("Key").fill(key);
  await page.getByLabel("Agent").fill(AGENT);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** Ada's SDK client opens a session and proposes bypassPermissions: the request the gateway holds, and its proposal id. */
async function proposeBypass() {
  const client = await connectClient({ url, key: ada, agent: AGENT });
  const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: CWD, mcpServers: [] });
  let settled = false;
  const set = client.request<Json>("session/set_mode", { sessionId, modeId: "bypassPermissions" }).finally(() => (settled = true));
  set.catch(() => undefined);
  const waiting = await client.notices.waitFor((m) => m.method === "_acp_gateway/mode_change_waiting", 30_000, "mode_change_waiting");
  return { client, sessionId, set, proposalId: waiting.params.proposalId as string, settled: () => settled };
}

describe("a held mode change in the console", () => {
  it("390 px: the proposer's Approve is greyed out; 1280 px: a second person approves it from Waiting on you, and the agent receives the set_mode", async () => {
    const { client, sessionId, set, proposalId } = await proposeBypass();

    const phone = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage();
    await signIn(phone, ada, `#/session/${encodeURIComponent(sessionId)}`);
    const own = phone.locator("section.mode-change.open");
    await own.waitFor({ timeout: 30_000 });
    expect(await own.textContent()).toContain("ada proposes switching the session's mode to bypassPermissions.");
    await expect.poll(() => own.getByRole("button", { name: "Approve" }).isDisabled(), { timeout: 15_000 }).toBe(true);
    expect(await own.locator(".not-yours").textContent()).toMatch(/You proposed this change: four eyes needs a second person/);
    expect(await own.getByRole("button", { name: "Refuse" }).isEnabled()).toBe(true);
    expect(await phone.locator(".session-head .badge.mode").textContent()).toBe("Mode: Default (default)");
    const width = await phone.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
    expect(width.scroll).toBeLessThanOrEqual(width.inner);
    await phone.screenshot({ path: join(screenshotsDir(), "console-mode-change-390.png"), fullPage: true });
    expect(agent.setModes.items).toEqual([]);

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await signIn(page, bob);
    const listed = page.getByRole("list", { name: "Mode changes waiting for a second person" }).getByRole("link");
    await listed.first().waitFor({ timeout: 30_000 });
    expect(await listed.first().textContent()).toBe("session/set_mode mode=bypassPermissions");
    await listed.first().click();
    const card = page.locator("section.mode-change.open");
    await card.waitFor({ timeout: 30_000 });
    await expect.poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-card"))).toBe(`mode:${proposalId}`);
    await page.screenshot({ path: join(screenshotsDir(), "console-mode-change-1280.png"), fullPage: true });
    await card.getByRole("button", { name: "Approve" }).click();

    const relayed = await agent.setModes.waitFor(() => true, 30_000, "the agent's session/set_mode");
    expect(relayed).toMatchObject({ modeId: "bypassPermissions" });
    expect(await set).toMatchObject({ _meta: { answeredBy: "modes-agent" } });
    for (const p of [page, phone]) {
      await p.locator("section.mode-change.closed .resolution", { hasText: "Approved by bob: the change went to the agent." }).waitFor();
      await p.locator(".session-head .badge.mode.governed", { hasText: "bypassPermissions" }).waitFor();
      await p.locator(".notice.warn", { hasText: "switched this session's mode to bypassPermissions" }).waitFor();
    }
    // A reload replays the session's history: the decided card is there again, as it ended live (decision 0064).
    await phone.reload();
    const replayed = phone.locator("section.mode-change.closed");
    await replayed.locator(".resolution", { hasText: "Approved by bob: the change went to the agent." }).waitFor({ timeout: 30_000 });
    expect(await replayed.textContent()).toContain("ada proposes switching the session's mode to bypassPermissions.");
    expect(await phone.locator("section.mode-change").count()).toBe(1);
    client.close();
  }, 120_000);
});

describe("a held mode change with the SDK's client", () => {
  it("session/set_mode stays pending, nothing reaches the agent, until a second person approves by REST; then it resolves with the agent's answer", async () => {
    const before = agent.setModes.items.length;
    const { client, sessionId, set, proposalId, settled } = await proposeBypass();
    // The proposer's own approval is refused, and the gateway's answer to it comes after the hold: still pending.
    const own = await fetch(`${url}/v1/sessions/${encodeURIComponent(sessionId)}/mode-changes/${encodeURIComponent(proposalId)}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${ada}`, "Content-Type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(own.status).toBe(403);
    expect(settled()).toBe(false);
    expect(agent.setModes.items.length).toBe(before);

    const decided = await call(`/v1/sessions/${encodeURIComponent(sessionId)}/mode-changes/${encodeURIComponent(proposalId)}`, bob, {
      method: "POST",
      body: { decision: "approve" },
    });
    expect(decided).toEqual({ outcome: "approved" });
    expect(await set).toMatchObject({ _meta: { answeredBy: "modes-agent", modeId: "bypassPermissions" } });
    expect(agent.setModes.items.slice(before)).toMatchObject([{ sessionId, modeId: "bypassPermissions" }]);
    client.close();
  }, 60_000);
});
