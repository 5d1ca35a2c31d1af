// Approvals that reach the person, end to end: the gateway as `npm start` runs it, a real SDK agent
// that asks permission while nobody has the session open, a webhook receiver on loopback that gets
// the signed notification, and headless Chromium at phone size answering through the link.

import nodeCrypto from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { verifySignature } from "../../protocol/webhook-signature";
import { type Receiver, startReceiver } from "./approvals-receiver";
import { launchChromium, screenshotsDir } from "./browser";
import { connectClient, dialInAgent, waitForAgent } from "./peers";
import { blocksAfter } from "./readme";
import { operatorToken } from "./tenants";

type Json = Record<string, any>;
const url = inject("gatewayUrl");

/** The operator token of the local gateway: .dev.vars, which `npm start` writes from the example. */
async function api(path: string, key: string, method = "GET", body?: unknown): Promise<Json> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await response.json()) as Json;
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe("approval links end to end", () => {
  it("an agent asks with nobody attached; the signed webhook's link answers it from a phone-sized browser, once", async () => {
    // A tenant of its own, so its targets and its short notifyAfterMs touch no other test.
    const slug = `appr-${crypto.randomUUID().slice(0, 8)}`;
    const operator = operatorToken();
    const created = await api("/v1/tenants", operator, "POST", { slug, name: "Approvals e2e" });
    const admin = created.adminKey.key as string;
    await api(`/v1/tenants/${created.tenant.id}`, operator, "PATCH", { settings: { notifyAfterMs: 300 } });
    const clientKey = (await api("/v1/keys", admin, "POST", { kind: "client", label: "alice" })).key as string;
    const agentKey = (await api("/v1/keys", admin, "POST", { kind: "agent" })).key as string;
    const channel = `e2e-${crypto.randomUUID()}`;
    const target = await api("/v1/notification-targets", admin, "POST", { name: "phone", url: `${receiver.url}/hook/${channel}` });

    let left!: () => void;
    const nobodyAttached = new Promise<void>((resolve) => (left = resolve));
    let answered!: (answer: Json) => void;
    const agentGot = new Promise<Json>((resolve) => (answered = resolve));
    const name = "builder";
    const agent = await dialInAgent({
      url,
      key: agentKey,
      name,
      script: async (turn) => {
        await nobodyAttached;
        const answer = await turn.askPermission({
          toolCallId: "rm-1",
          title: "Clean the build output",
          kind: "execute",
          status: "pending",
          rawInput: { command: "rm -rf dist", cwd: "/projects/demo" },
        });
        answered(answer);
        return "end_turn";
      },
    });
    await waitForAgent(url, clientKey, name);
    const client = await connectClient({ url, key: clientKey, agent: name });
    const { sessionId } = await client.request<{ sessionId: string }>("session/new", { cwd: "/projects/demo", mcpServers: [] });
    void client.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "clean up" }] }).catch(() => undefined);
    await agent.prompts.waitFor(() => true);
    client.close();
    left();

    const delivery = await receiver.next(channel, 20_000);
    expect(delivery).not.toBeNull();
    const { headers, body } = delivery as { headers: Record<string, string>; body: string };
    expect(await verifySignature(target.secret as string, body, headers["x-acp-gateway-signature"] ?? null)).toEqual({ ok: true });
    expect(await verifySignature("whsec_wrong-secret-000000000000", body, headers["x-acp-gateway-signature"] ?? null)).toEqual({
      ok: false,
      reason: "mismatch",
    });
    // The README's own verification snippet, as written, accepts it with the secret and refuses it without.
    const [readmeCheck] = blocksAfter("## Notifications: approvals that reach the person", "js");
    const verifiedAsWritten = (secret: string) =>
      new Function("crypto", "req", "rawBody", "SECRET", `${readmeCheck!}\nreturn Boolean(ok);`)(
        nodeCrypto,
        { headers },
        body,
        secret,
      ) as boolean;
    expect(verifiedAsWritten(target.secret as string)).toBe(true);
    expect(verifiedAsWritten("whsec_wrong-secret-000000000000")).toBe(false);
    const payload = JSON.parse(body) as Json;
    expect(payload).toMatchObject({
      type: "permission.waiting",
      session: { id: sessionId, agent: name, cwd: "/projects/demo" },
      operation: { kind: "execute", agentTitle: "Clean the build output", command: { text: "rm -rf dist", cwd: "/projects/demo" } },
      target: { id: target.id, name: "phone" },
    });
    const link = payload.link.url as string;
    expect(link.startsWith(`${url}/approve/`)).toBe(true);

    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
      const opened = await page.goto(link);
      expect(opened?.status()).toBe(200);
      await expect(page.locator("pre").first().textContent()).resolves.toContain("$ rm -rf dist");
      // Nothing is wider than the phone.
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      const shots = screenshotsDir();
      await page.screenshot({ path: join(shots, "approval-phone.png"), fullPage: true });
      await page.emulateMedia({ colorScheme: "dark" });
      await page.screenshot({ path: join(shots, "approval-phone-dark.png"), fullPage: true });
      await page.emulateMedia({ colorScheme: "light" });

      await page.getByRole("button", { name: /Allow once/ }).click();
      await page.waitForSelector("h1:text('Answered')");
      expect(await agentGot).toEqual({ outcome: { outcome: "selected", optionId: "allow-once" } });

      const again = await page.goto(link);
      expect(again?.status()).toBe(410);
      await expect(page.locator("h1").textContent()).resolves.toBe("This link was already used");
    } finally {
      await browser.close();
      agent.close();
    }

    // The audit is written off the hot path: it appears shortly after the answer.
    await expect
      .poll(async () => (await api(`/v1/audit?sessionId=${sessionId}`, admin)).items[0], { timeout: 10_000 })
      .toMatchObject({ optionId: "allow-once", decidedBy: { type: "link", key: payload.deliveryId } });
  });
});
