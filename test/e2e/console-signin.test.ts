// The console's sign-in through a tenant's OpenID Connect provider (decision 0030), in Chromium, against
// the gateway as `npm start` runs it and the test identity provider on loopback (identity-provider.ts):
// authorization code + PKCE in the page, the code exchanged from the browser, the ID token used as the
// bearer for the REST API and for the ticket that opens /acp, never in the address bar or localStorage.
// A tampered state and a wrong nonce are refused; sign-out and expiry forget the token. And the
// permission card greys out the options the gateway says a person may not choose: under four eyes the
// prompter's approvals, while a second person signed in through the provider approves.

import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ROOT } from "../../scripts/local-gateway";
import { launchChromium, screenshotsDir } from "./browser";
import { IdentityProvider } from "./identity-provider";
import { waitForAgent } from "./peers";
import { NODE, killAll, startCli } from "./processes";
import { operatorToken } from "./tenants";

type Json = Record<string, any>;
const url = inject("gatewayUrl");
const SHOTS = screenshotsDir();
const AGENT = `signin-demo-${Date.now().toString(36)}`;
const TOKEN_KEY = "acp-gateway-console-token";

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
let idp: IdentityProvider;
let slug: string;
let admin: string;
let clientKey: string;
const clientId = `console-${crypto.randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  idp = await IdentityProvider.start();
  slug = `signin-${crypto.randomUUID().slice(0, 8)}`;
  admin = (await ok("/v1/tenants", operatorToken(), { method: "POST", body: { slug, name: "Sign-in" } })).adminKey.key as string;
  // The client id is the audience: the console sends the ID token.
  await ok("/v1/tenant/oidc", admin, {
    method: "PUT",
    body: { issuer: idp.issuer, audience: clientId, jwksUrl: idp.jwksUrl, nameClaim: "name" },
  });
  // People signed in here prompt, answer and make rules (decision 0028: unmapped people would only watch).
  await ok("/v1/tenant/settings", admin, { method: "PATCH", body: { roles: { defaultPersonRole: "approver" } } });
  idp.addClient({ clientId, redirectUri: `${url}/callback` });
  idp.person = { subject: "u-alice", claims: { name: "Alice Example", email: "alice@example.com" } };
  clientKey = (await ok("/v1/keys", admin, { method: "POST", body: { kind: "client", label: "ci" } })).key as string;
  const agentKey = (await ok("/v1/keys", admin, { method: "POST", body: { kind: "agent" } })).key as string;
  startCli(["agent", "--url", url, "--name", AGENT, "--", NODE, join(ROOT, "demo", "agent.ts")], { ACP_GATEWAY_KEY: agentKey });
  [browser] = await Promise.all([launchChromium(), waitForAgent(url, clientKey, AGENT, 30_000)]);
});

afterAll(async () => {
  await browser?.close();
  killAll();
  await idp?.close();
});

interface Console {
  page: Page;
  context: BrowserContext;
  /** Every request the page made to the gateway. */
  requests: Request[];
}

async function openConsole(): Promise<Console> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const requests: Request[] = [];
  page.on("request", (r) => {
    if (r.url().startsWith(url)) requests.push(r);
  });
  page.on("pageerror", (e) => {
    throw e;
  });
  await page.goto(`${url}/?tenant=${slug}`);
  return { page, context, requests };
}

async function continueWithProvider(page: Page): Promise<void> {
  expect(await page.getByLabel("Tenant").inputValue()).toBe(slug);
  await page.getByRole("button", { name: "Continue with your team's provider" }).click();
}

const storage = (page: Page) =>
  page.evaluate(() => ({
    local: localStorage.length,
    session: Object.fromEntries(Object.keys(sessionStorage).map((k) => [k, sessionStorage.getItem(k)])),
  }));

async function signedIn(page: Page): Promise<string> {
  const who = page.getByLabel("Signed in as");
  await who.waitFor();
  return (await who.textContent()) ?? "";
}

describe("the console's sign-in through the tenant's provider", () => {
  it("signs in with authorization code + PKCE, shows the person, sends the ID token to the REST API and for the ticket, and names the person in the audit", async () => {
    const { page, context, requests } = await openConsole();
    const exchangesBefore = idp.tokenRequests.length;
    await continueWithProvider(page);

    expect(await signedIn(page)).toBe(`Alice Example ${new URL(idp.issuer).host}`);
    // The code and state are out of the address bar, and the code was exchanged by the page itself (CORS).
    expect(page.url()).toBe(`${url}/`);
    expect(idp.tokenRequests.slice(exchangesBefore)).toEqual([{ origin: url, status: 200 }]);
    const stored = await storage(page);
    expect(stored.local).toBe(0);
    expect(Object.keys(stored.session).sort()).toEqual(["acp-gateway-console-agent", TOKEN_KEY]);
    const token = JSON.parse(stored.session[TOKEN_KEY] ?? "{}").token as string;
    expect(token).toMatch(/^eyJ/);
    // The bearer is the ID token: its audience is the client id, its nonce the one this tab sent.
    const claims = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString()) as Json;
    expect(claims).toMatchObject({ iss: idp.issuer, aud: clientId, sub: "u-alice", nonce: expect.any(String) });

    // A session opened with a ticket; every call to /v1 but the public look-up carried the token and named the tenant.
    await page.getByRole("button", { name: "New session" }).click();
    await page.getByLabel("Project path").fill("/projects/demo");
    await page.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(AGENT);
    await page.getByRole("button", { name: "Start session" }).click();
    await expect.poll(() => new URL(page.url()).hash).toMatch(/^#\/session\/.+/);
    await page.locator("#prompt-text").fill("Tidy the README");
    await page.getByRole("button", { name: "Send" }).click();
    const edit = page.locator("section.permission.open");
    await edit.waitFor();
    await edit.getByRole("button", { name: /^Allow once/ }).click();
    await expect.poll(() => page.locator("section.permission.closed").first().textContent()).toContain("Answered by you (Alice Example)");

    const api = requests.filter((r) => new URL(r.url()).pathname.startsWith("/v1/"));
    const ticket = api.find((r) => new URL(r.url()).pathname === "/v1/tickets");
    expect(ticket?.method()).toBe("POST");
    for (const r of api.filter((r) => new URL(r.url()).pathname !== "/v1/sign-in")) {
      const headers = await r.allHeaders();
      expect(headers.authorization, r.url()).toBe(`Bearer ${token}`);
      expect(headers["acp-tenant"], r.url()).toBe(slug);
    }
    // The socket was opened with the ticket, not the token; no address held the token, and the code was
    // in the callback's own address only (the provider's redirect), never passed on as a Referer.
    expect(requests.filter((r) => r.url().includes(token))).toEqual([]);
    expect(requests.filter((r) => /[?&]code=/.test(r.url())).map((r) => new URL(r.url()).pathname)).toEqual(["/callback"]);
    for (const r of requests) expect((await r.allHeaders()).referer, r.url()).toBeUndefined();
    // The audit names the person who decided: their name, subject and provider. The row is written
    // after the answer (batched to D1), and the page reads the audit once when opened: wait for the row.
    await expect
      .poll(
        async () => {
          const response = await fetch(`${url}/v1/audit?limit=5`, { headers: { Authorization: `Bearer ${token}`, "Acp-Tenant": slug } });
          const { items } = (await response.json()) as { items: Json[] };
          return items.some((e) => e.decidedBy?.person?.subject === "u-alice");
        },
        { timeout: 20_000 },
      )
      .toBe(true);
    await page.getByRole("button", { name: "Audit" }).click();
    await expect
      .poll(() => page.locator(".audit-entry .decided-by").first().textContent())
      .toBe(`Answered by Alice Example (u-alice at ${new URL(idp.issuer).host})`);
    await page.screenshot({ path: join(SHOTS, "console-signed-in-person.png") });
    await context.close();
  });

  it("refuses a callback whose state is not the one this tab sent, without exchanging its code", async () => {
    const { page, context, requests } = await openConsole();
    const exchangesBefore = idp.tokenRequests.length;
    idp.misbehaveOnce = { state: "tampered-by-someone-else" };
    await continueWithProvider(page);
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("its state differs");
    expect(idp.tokenRequests.length).toBe(exchangesBefore);
    expect(page.url()).toBe(`${url}/`);
    expect((await storage(page)).session[TOKEN_KEY]).toBeUndefined();
    expect(requests.some((r) => r.headers().authorization !== undefined)).toBe(false);
    // The pending sign-in was used up: the same callback again is refused too.
    await page.goto(`${url}/callback?code=x&state=tampered-by-someone-else`);
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("did not start that sign-in");
    await context.close();
  });

  it("refuses an ID token whose nonce is not the one this tab sent", async () => {
    const { page, context, requests } = await openConsole();
    const exchangesBefore = idp.tokenRequests.length;
    idp.misbehaveOnce = { nonce: "a-nonce-from-another-sign-in" };
    await continueWithProvider(page);
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("its nonce differs");
    // The code was exchanged, and what came back was not accepted: nothing stored, nothing sent to the gateway.
    expect(idp.tokenRequests.slice(exchangesBefore)).toEqual([{ origin: url, status: 200 }]);
    expect((await storage(page)).session[TOKEN_KEY]).toBeUndefined();
    expect(requests.some((r) => r.headers().authorization !== undefined)).toBe(false);
    await context.close();
  });

  it("forgets the token on sign-out, and a reload asks to sign in again", async () => {
    const { page, context } = await openConsole();
    await continueWithProvider(page);
    await signedIn(page);
    expect((await storage(page)).session[TOKEN_KEY]).toBeDefined();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("Tenant").waitFor();
    expect((await storage(page)).session[TOKEN_KEY]).toBeUndefined();
    await page.reload();
    await page.getByLabel("Tenant").waitFor();
    expect(await page.getByLabel("Signed in as").count()).toBe(0);
    await context.close();
  });

  it("signs out when the token expires, saying why", async () => {
    const person = idp.person;
    idp.person = { subject: "u-brief", claims: { name: "Brief Person" }, expiresIn: 4 };
    try {
      const { page, context } = await openConsole();
      await continueWithProvider(page);
      await expect.poll(() => page.getByRole("alert").textContent(), { timeout: 20_000 }).toContain("expired");
      expect(await page.getByRole("alert").textContent()).toContain(`Your sign-in with ${new URL(idp.issuer).host} expired`);
      expect((await storage(page)).session[TOKEN_KEY]).toBeUndefined();
      await context.close();
    } finally {
      idp.person = person;
    }
  });

  it("tells a tenant without a provider to sign in with a key", async () => {
    const { page, context, requests } = await openConsole();
    await page.getByLabel("Tenant").fill("no-such-tenant");
    await page.getByRole("button", { name: "Continue with your team's provider" }).click();
    await expect.poll(() => page.getByRole("status").textContent()).toBe("Tenant “no-such-tenant” signs in with a key: enter yours below.");
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("name"))).toBe("key");
    await page.screenshot({ path: join(SHOTS, "console-sign-in.png") });
    expect(requests.every((r) => new URL(r.url()).origin === url)).toBe(true);
    await context.close();
  });
});

describe("permission options a person cannot choose, as the gateway says", () => {
  it("four eyes in the browser: the prompter's page greys out the approvals with the gateway's reason and may still reject; a second person, signed in through the provider, approves", async () => {
    // The tenant's policy: an edit needs a second person (decision 0028). Read as each turn starts.
    await ok("/v1/tenant/settings", admin, { method: "PATCH", body: { fourEyes: { operations: [{ kind: "edit" }] } } });
    const prompter = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const second = await browser.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const page = await prompter.newPage();
      await page.goto(url);
      await page.getByLabel("Key").fill(clientKey);
      await page.getByLabel("Agent").fill(AGENT);
      await page.getByRole("button", { name: "Sign in" }).click();
      expect(await signedIn(page)).toBe("ci key");
      await page.getByRole("button", { name: "New session" }).click();
      await page.getByLabel("Project path").fill("/projects/demo");
      await page.getByRole("form", { name: "New session" }).getByLabel("Agent").fill(AGENT);
      await page.getByRole("button", { name: "Start session" }).click();
      await page.locator("#prompt-text").fill("Tidy the README");
      await page.getByRole("button", { name: "Send" }).click();
      const card = page.locator("section.permission.open");
      await card.waitFor();
      expect(await card.textContent(), "precondition: the edit is the request asked").toContain("README.md");
      const buttons = card.getByRole("group", { name: "Options" }).getByRole("button");
      const states = () =>
        buttons.evaluateAll((all) => all.map((b) => [b.querySelector(".option-kind")?.textContent, (b as HTMLButtonElement).disabled]));
      expect(await states()).toEqual([
        ["allow_once", true],
        ["allow_always", true],
        ["reject_once", false],
        ["reject_always", false],
      ]);
      const reason = (await card.locator(".not-yours").textContent()) ?? "";
      expect(reason).toContain("needs a second person's approval");
      // The prompter here holds a key issued to no person: four eyes counts people (decision 0041), so
      // that is the first reason the gateway gives, before whose turn it is.
      expect(reason).toContain("your credential names nobody");
      expect(await card.getByRole("button", { name: /^Allow once/ }).getAttribute("title")).toBe(reason);
      await card.screenshot({ path: join(SHOTS, "console-four-eyes-prompter.png") });

      // The second person: Alice, signed in through the provider, opens the session from the list and approves.
      const other = await second.newPage();
      await other.goto(`${url}/?tenant=${slug}`);
      await continueWithProvider(other);
      expect(await signedIn(other)).toBe(`Alice Example ${new URL(idp.issuer).host}`);
      await other.locator(".entry", { hasText: "approval" }).first().click();
      const hers = other.locator("section.permission.open");
      await hers.waitFor();
      const allow = hers.getByRole("button", { name: /^Allow once/ });
      expect(await allow.isDisabled()).toBe(false);
      await allow.click();
      await expect
        .poll(() => page.locator("section.permission.closed").first().textContent())
        .toContain("Answered by Alice Example — “Allow once” (allow_once)");
      // The next request of the turn (the tests run, an execute) needs no second person: the prompter answers it.
      const run = page.locator("section.permission.open");
      await run.locator("pre.command", { hasText: "npm test" }).waitFor();
      expect(await run.getByRole("button", { name: /^Allow once/ }).isDisabled()).toBe(false);
      await run
        .getByRole("button", { name: /^Reject/ })
        .first()
        .click();
      await expect.poll(() => page.locator("section.permission.closed").last().textContent()).toContain("Answered by you (ci)");
    } finally {
      await ok("/v1/tenant/settings", admin, { method: "PATCH", body: { fourEyes: { operations: [] } } });
      await prompter.close();
      await second.close();
    }
  });
});

describe("the test identity provider, as strict as a real one for this flow", () => {
  const verifier = "v".repeat(43);
  const challenge = createHash("sha256").update(verifier).digest("base64url");
  const authorize = (params: Record<string, string>) =>
    fetch(
      `${idp.issuer}/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: `${url}/callback`,
        scope: "openid",
        state: "s1",
        nonce: "n1",
        code_challenge: challenge,
        code_challenge_method: "S256",
        ...params,
      })}`,
      { redirect: "manual" },
    );
  const redeem = (code: string, codeVerifier: string) =>
    fetch(`${idp.issuer}/token`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        client_id: clientId,
        redirect_uri: `${url}/callback`,
        code_verifier: codeVerifier,
      }),
    });

  it("never redirects to an unregistered redirect URI or for an unknown client, and refuses a challenge that is not S256", async () => {
    const faults: Record<string, string>[] = [{ redirect_uri: "http://127.0.0.1:1/elsewhere" }, { client_id: "someone-else" }];
    for (const params of faults) {
      const response = await authorize(params);
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();
    }
    const plain = await authorize({ code_challenge_method: "plain", code_challenge: verifier });
    expect(plain.status).toBe(302);
    const back = new URL(plain.headers.get("location") ?? "");
    expect(Object.fromEntries(back.searchParams)).toEqual({ state: "s1", error: "invalid_request" });
  });

  it("gives the code's tokens only for the verifier of its challenge, once, with the nonce echoed", async () => {
    const code = async () => new URL((await authorize({})).headers.get("location") ?? "").searchParams.get("code") ?? "";
    const first = await code();
    expect((await redeem(first, "w".repeat(43))).status).toBe(400);
    // A refused attempt uses the code up, as providers do.
    expect((await redeem(first, verifier)).status).toBe(400);
    const second = await code();
    const response = await redeem(second, verifier);
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const body = (await response.json()) as Json;
    const claims = JSON.parse(Buffer.from(String(body.id_token).split(".")[1] ?? "", "base64url").toString()) as Json;
    expect(claims).toMatchObject({ iss: idp.issuer, aud: clientId, sub: "u-alice", nonce: "n1" });
    expect((await redeem(second, verifier)).status).toBe(400);
  });
});
