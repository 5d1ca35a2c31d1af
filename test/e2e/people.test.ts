// People, not keys (decision 0025), end to end: the gateway as `npm start` runs it, a test identity
// provider on loopback (test/e2e/identity-provider.ts) that signs tokens for people, and two tenants
// that trust the same issuer with audiences of their own. A person's token is accepted on /acp and
// /v1 and named in the audit; a wrong audience, an expired token, an unknown key, a rotated-out key
// and a token of another tenant are each refused 401 with the reason; tickets open /acp once.
// Roles (decision 0028): people in several groups, mapped to roles by the tenant's settings, drive
// the SDK's real clients — an observer refused, a member's "always" applied once, four eyes.

import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { WebSocket } from "ws";
import { IdentityProvider } from "./identity-provider";
import { connectClient, dialInAgent, waitForAgent } from "./peers";
import { operatorToken } from "./tenants";

type Json = Record<string, any>;
const url = inject("gatewayUrl");

async function call(path: string, credential: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(`${url}${path}`, {
    method: init.method ?? "GET",
    headers: { Authorization: `Bearer ${credential}`, "Content-Type": "application/json", ...init.headers },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as Json };
}

async function ok(path: string, credential: string, init: { method?: string; body?: unknown } = {}): Promise<Json> {
  const { status, body } = await call(path, credential, init);
  if (status >= 300) throw new Error(`${init.method ?? "GET"} ${path}: ${status} ${JSON.stringify(body)}`);
  return body;
}

interface Tenant {
  slug: string;
  admin: string;
  client: string;
  agent: string;
  audience: string;
}

async function tenantTrusting(idp: IdentityProvider, name: string, settings: Json = {}): Promise<Tenant> {
  const slug = `${name}-${crypto.randomUUID().slice(0, 8)}`;
  const created = await ok("/v1/tenants", operatorToken(), { method: "POST", body: { slug, name } });
  const admin = created.adminKey.key as string;
  const audience = `gateway-${slug}`;
  await ok("/v1/tenant/oidc", admin, {
    method: "PUT",
    body: { issuer: idp.issuer, audience, jwksUrl: idp.jwksUrl, groupsClaim: "groups" },
  });
  // Who is which role: eng → member, leads → approver; anyone else signed in watches (observer, the default).
  await ok("/v1/tenant/settings", admin, {
    method: "PATCH",
    body: { roles: { groups: { eng: "member", leads: "approver" } }, ...settings },
  });
  const client = (await ok("/v1/keys", admin, { method: "POST", body: { kind: "client", label: "ci" } })).key as string;
  const agent = (await ok("/v1/keys", admin, { method: "POST", body: { kind: "agent" } })).key as string;
  return { slug, admin, client, agent, audience };
}

/** A WebSocket to /acp: the subprotocol the gateway chose, or the refusal's status and message. */
function openSocket(path: string, protocols: string[], headers: Record<string, string> = {}) {
  return new Promise<{ status: number; protocol?: string; message?: string }>((resolve, reject) => {
    const socket = new WebSocket(url.replace(/^http/, "ws") + path, protocols, { headers });
    socket.once("open", () => {
      resolve({ status: 101, protocol: socket.protocol });
      socket.close();
    });
    socket.once("unexpected-response", (_request, response) => {
      let text = "";
      response.on("data", (chunk: Buffer) => (text += chunk.toString()));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, message: (JSON.parse(text) as Json).error?.message }));
    });
    socket.once("error", (error) => reject(error));
  });
}

let idp: IdentityProvider;
let a: Tenant;
let b: Tenant;
beforeAll(async () => {
  idp = await IdentityProvider.start();
  a = await tenantTrusting(idp, "people-a");
  b = await tenantTrusting(idp, "people-b");
});
afterAll(async () => {
  await idp.close();
});

const asPerson = (token: string, tenant: string) => ({ headers: { "Acp-Tenant": tenant }, token });
async function restWith(token: string, tenant: string) {
  const person = asPerson(token, tenant);
  return call("/v1/sessions", person.token, { headers: person.headers });
}

describe("a person's identity token", () => {
  it("is accepted on /v1 and on /acp, and the audit names the person who answered", async () => {
    const token = await idp.token("u-alice", { audience: a.audience, claims: { name: "Alice Example", groups: ["eng"] } });
    expect((await restWith(token, a.slug)).status).toBe(200);
    const name = `people-${Date.now()}`;
    const agent = await dialInAgent({
      url,
      key: a.agent,
      name,
      script: async (turn) => {
        const answer = await turn.askPermission({ toolCallId: "p1", title: "Edit", kind: "edit", locations: [{ path: "/w/a.ts" }] });
        await turn.say(`answer: ${answer.outcome.optionId}`);
        return "end_turn";
      },
    });
    await waitForAgent(url, a.client, name);
    const alice = await connectClient({ url, key: token, tenant: a.slug, agent: name });
    const { sessionId } = await alice.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = alice.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit" }] });
    const asked = await alice.permissions.waitFor(() => true);
    asked.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    // The audit is written off the answer's path: wait for the row, with a bound.
    let row: Json | undefined;
    for (const deadline = Date.now() + 10_000; !row && Date.now() < deadline;) {
      const page = await ok(`/v1/audit?sessionId=${sessionId}`, a.admin);
      row = (page.items as Json[]).find((r) => r.sessionId === sessionId && r.decidedBy.type === "person");
      if (!row) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(row?.decidedBy).toMatchObject({ user: "Alice Example", person: { issuer: idp.issuer, subject: "u-alice" } });
    alice.close();
    agent.close();
  });

  it("opens a Streamable HTTP connection to /acp too", async () => {
    const token = await idp.token("u-alice", { audience: a.audience, claims: { name: "Alice Example" } });
    const client = await connectClient({ url, key: token, tenant: a.slug, agent: "nobody-here", transport: "http" });
    // connectClient initialized over HTTP with the token; the gateway answers session/list itself.
    expect(await client.request("session/list", {})).toMatchObject({ sessions: expect.any(Array) });
    client.close();
  });

  it("is refused 401 with the reason: wrong audience, expired, unknown key, no tenant named", async () => {
    const wrongAudience = await idp.token("u-alice", { audience: "someone-else" });
    expect(await restWith(wrongAudience, a.slug)).toMatchObject({
      status: 401,
      body: { error: { message: expect.stringMatching(/audience/) } },
    });
    const expired = await idp.token("u-alice", { audience: a.audience, expiresIn: -120 });
    expect(await restWith(expired, a.slug)).toMatchObject({ status: 401, body: { error: { message: expect.stringMatching(/expired/) } } });
    const unknownKey = await idp.token("u-alice", { audience: a.audience, key: await IdentityProvider.unpublishedKey() });
    expect(await restWith(unknownKey, a.slug)).toMatchObject({
      status: 401,
      body: { error: { message: expect.stringMatching(/does not publish/) } },
    });
    const fine = await idp.token("u-alice", { audience: a.audience });
    const unnamed = await call("/v1/sessions", fine);
    expect(unnamed).toMatchObject({ status: 401, body: { error: { message: expect.stringMatching(/Acp-Tenant/) } } });
    // And on /acp, before the upgrade.
    expect(await openSocket("/acp?agent=x", ["acp.v1"], { Authorization: `Bearer ${expired}`, "Acp-Tenant": a.slug })).toMatchObject({
      status: 401,
      message: expect.stringMatching(/expired/),
    });
  });

  it("valid for tenant A is refused in tenant B, and B cannot take A's audience", async () => {
    const forA = await idp.token("u-alice", { audience: a.audience });
    expect((await restWith(forA, a.slug)).status).toBe(200);
    expect(await restWith(forA, b.slug)).toMatchObject({ status: 401, body: { error: { message: expect.stringMatching(/audience/) } } });
    const taken = await call("/v1/tenant/oidc", b.admin, {
      method: "PUT",
      body: { issuer: idp.issuer, audience: a.audience, jwksUrl: idp.jwksUrl },
    });
    expect(taken.status).toBe(409);
    // A ticket a person of A got is refused on a request naming B.
    const ticket = await call("/v1/tickets", forA, { method: "POST", body: {}, headers: { "Acp-Tenant": a.slug } });
    expect(ticket.status).toBe(201);
    expect(await openSocket(`/acp?agent=x&tenant=${b.slug}`, ["acp.v1", ticket.body.subprotocol])).toMatchObject({
      status: 401,
      message: expect.stringMatching(/another tenant/),
    });
  });

  it("a tenant that names another's issuer and audience before it is proven takes nothing: the first to sign in proves it (decision 0041)", async () => {
    const squatter = await tenantTrusting(idp, "people-squat");
    const owner = await tenantTrusting(idp, "people-own");
    // The squatter names the owner's pair first: allowed, for a claim alone proves nothing.
    const claimed = await call("/v1/tenant/oidc", squatter.admin, {
      method: "PUT",
      body: { issuer: idp.issuer, audience: owner.audience, jwksUrl: idp.jwksUrl },
    });
    expect(claimed.status).toBe(200);
    // The owner's person signs in with it: that proves the pair for the owner.
    const token = await idp.token("u-olive", { audience: owner.audience });
    expect((await restWith(token, owner.slug)).status).toBe(200);
    // From then on the squatter gets nothing from it: its tokens are refused, and naming it again is 409.
    expect(await restWith(token, squatter.slug)).toMatchObject({
      status: 401,
      body: { error: { message: expect.stringMatching(/another tenant proved this issuer and audience first/) } },
    });
    const again = await call("/v1/tenant/oidc", squatter.admin, {
      method: "PUT",
      body: { issuer: idp.issuer, audience: owner.audience, jwksUrl: idp.jwksUrl },
    });
    expect(again).toMatchObject({ status: 409, body: { error: { message: expect.stringMatching(/has proven this issuer/) } } });
    expect((await restWith(token, owner.slug)).status).toBe(200);
  });

  it("follows key rotation: a new key is fetched once, the rotated-out key is refused; unknown keys refetch at most once per cooldown", async () => {
    const before = await idp.token("u-bob", { audience: a.audience });
    expect((await restWith(before, a.slug)).status).toBe(200);
    await idp.rotate();
    // The gateway refetches an issuer's keys at most every JWKS_COOLDOWN_MS (200 ms in these tests).
    const last = idp.fetches.at(-1) ?? 0;
    if (Date.now() - last < 250) await new Promise((resolve) => setTimeout(resolve, 250 - (Date.now() - last)));
    const fetched = idp.fetches.length;
    const after = await idp.token("u-bob", { audience: a.audience });
    expect((await restWith(after, a.slug)).status).toBe(200);
    expect(idp.fetches.length).toBe(fetched + 1);
    expect(await restWith(before, a.slug)).toMatchObject({
      status: 401,
      body: { error: { message: expect.stringMatching(/rotated out/) } },
    });
    // Tokens naming keys nobody publishes, back to back: within one cooldown, at most one more fetch.
    const burst = fetched + 1;
    for (let i = 0; i < 5; i++) {
      const forged = await idp.token("u-bob", { audience: a.audience, key: await IdentityProvider.unpublishedKey("ES256") });
      expect((await restWith(forged, a.slug)).status).toBe(401);
    }
    expect(idp.fetches.length - burst).toBeLessThanOrEqual(Math.ceil((Date.now() - (idp.fetches[burst - 1] ?? 0)) / 200) + 1);
  });
});

describe("Cloudflare Access in front of the gateway", () => {
  it("accepts Cf-Access-Jwt-Assertion for a tenant that configured Access, and names the person by email", async () => {
    const audience = `access-${a.slug}`;
    const config = await ok("/v1/tenant/access", a.admin, { method: "PUT", body: { teamDomain: idp.issuer, audience } });
    expect(config).toMatchObject({ provider: "access", issuer: idp.issuer, jwksUrl: `${idp.issuer}/cdn-cgi/access/certs` });
    const assertion = await idp.token("u-erin", { audience, claims: { email: "erin@example.com" } });
    const response = await fetch(`${url}/v1/tickets`, {
      method: "POST",
      headers: { "Cf-Access-Jwt-Assertion": assertion, "Acp-Tenant": a.slug, "Content-Type": "application/json" },
      body: "{}",
    });
    expect(response.status).toBe(201);
    const wrong = await idp.token("u-erin", { audience: a.audience });
    const refused = await fetch(`${url}/v1/sessions`, { headers: { "Cf-Access-Jwt-Assertion": wrong, "Acp-Tenant": a.slug } });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as Json).error.message).toMatch(/audience/);
  });
});

describe("tickets for a person", () => {
  it("a person's token gets a ticket that opens /acp once, answering acp.v1; a second use and a late one are 401", async () => {
    const token = await idp.token("u-carol", { audience: a.audience, claims: { name: "Carol" } });
    const get = (body: Json = {}) => call("/v1/tickets", token, { method: "POST", body, headers: { "Acp-Tenant": a.slug } });
    const ticket = (await get()).body;
    expect(await openSocket("/acp?agent=x", ["acp.v1", ticket.subprotocol])).toEqual({ status: 101, protocol: "acp.v1" });
    expect(await openSocket("/acp?agent=x", ["acp.v1", ticket.subprotocol])).toMatchObject({
      status: 401,
      message: expect.stringMatching(/already used/),
    });
    const short = (await get({ ttlMs: 50 })).body;
    // The ticket's time to live, and no longer: the gateway runs on this machine's clock.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, (short.expiresAt as number) - Date.now() + 5)));
    expect(await openSocket("/acp?agent=x", ["acp.v1", short.subprotocol])).toMatchObject({
      status: 401,
      message: expect.stringMatching(/expired/),
    });
  });

  it("the legacy acp.bearer subprotocol is refused by default", async () => {
    expect(await openSocket("/acp?agent=x", ["acp.v1", `acp.bearer.${a.client}`])).toMatchObject({
      status: 401,
      message: expect.stringMatching(/off for this tenant/),
    });
  });

  it("a client key can be issued to one person, with a role stored for later", async () => {
    const key = await ok("/v1/keys", a.admin, {
      method: "POST",
      body: { kind: "client", label: "Dana's laptop", user: "u-dana", role: "approver" },
    });
    expect(key).toMatchObject({ kind: "client", user: "u-dana", role: "approver" });
    const refused = await call("/v1/keys", a.admin, { method: "POST", body: { kind: "agent", user: "u-dana" } });
    expect(refused.status).toBe(400);
  });
});

describe("roles for people, end to end (decision 0028)", () => {
  /** An agent whose every turn asks permission for `toolCall` and says what it was answered. */
  async function askingAgent(t: Tenant, toolCall: Json) {
    const name = `roles-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await dialInAgent({
      url,
      key: t.agent,
      name,
      script: async (turn) => {
        const answer = await turn.askPermission(toolCall);
        await turn.say(`answer: ${answer.outcome.optionId}`);
        return "end_turn";
      },
    });
    await waitForAgent(url, t.client, name);
    return { name, agent };
  }
  const person = (subject: string, groups: string[], t: Tenant) =>
    idp.token(subject, { audience: t.audience, claims: { name: subject, groups } });
  async function auditOf(t: Tenant, subject: string, count: number): Promise<Json[]> {
    for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
      const page = await ok(`/v1/audit?person=${encodeURIComponent(`${idp.issuer}|${subject}`)}`, t.admin);
      if ((page.items as Json[]).length >= count) return page.items as Json[];
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`fewer than ${count} audit rows of ${subject}`);
  }

  it("a signed-in person in no mapped group watches: session/list works, session/new is refused with -32003; a member may", async () => {
    const { name, agent } = await askingAgent(a, { toolCallId: "x", title: "Read", kind: "read" });
    const olga = await connectClient({ url, key: await person("u-olga", ["visitors"], a), tenant: a.slug, agent: name });
    expect(await olga.request("session/list", {})).toMatchObject({ sessions: expect.any(Array) });
    await expect(olga.request("session/new", { cwd: "/w", mcpServers: [] })).rejects.toMatchObject({
      code: -32003,
      message: expect.stringMatching(/observer.*session\/new/),
    });
    const mia = await connectClient({ url, key: await person("u-mia", ["eng"], a), tenant: a.slug, agent: name });
    expect(await mia.request("session/new", { cwd: "/w", mcpServers: [] })).toMatchObject({ sessionId: expect.any(String) });
    olga.close();
    mia.close();
    agent.close();
  });

  it("a member's always-answer is applied once and every client is told the rule was not stored", async () => {
    const { name, agent } = await askingAgent(a, { toolCallId: "e1", title: "Edit", kind: "edit", locations: [{ path: "/w/a.ts" }] });
    const mia = await connectClient({ url, key: await person("u-mia", ["eng"], a), tenant: a.slug, agent: name });
    const { sessionId } = await mia.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = mia.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "edit" }] });
    const asked = await mia.permissions.waitFor(() => true);
    // The request carries no rawInput: nothing may be remembered from it (decision 0040), so the gateway offers no always of its own.
    expect(asked.params._meta.acpGateway.answerable).toMatchObject({
      optionIds: ["allow-once", "allow-always", "reject-once"],
      reason: expect.stringMatching(/only approvers store rules/),
    });
    asked.answer({ outcome: { outcome: "selected", optionId: "allow-always" } });
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    const said = await mia.updates.waitFor((u) => u.update?.content?.text?.startsWith("answer:"));
    expect(said.update.content.text).toBe("answer: allow-once");
    const told = await mia.notices.waitFor((n) => n.method === "_acp_gateway/rule_not_created");
    expect(told.params.reason).toMatch(/member/);
    expect((await ok("/v1/rules", a.admin)).items).toEqual([]);
    mia.close();
    agent.close();
  });

  it("a person whose role changes (the tenant maps their group anew) is disconnected with 4403 and reconnects with the new role", async () => {
    const d = await tenantTrusting(idp, "people-d");
    const token = await person("u-max", ["eng"], d);
    const socket = new WebSocket(`${url.replace(/^http/, "ws")}/acp?agent=x`, ["acp.v1"], {
      headers: { Authorization: `Bearer ${token}`, "Acp-Tenant": d.slug },
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.once("close", (code, reason) => resolve({ code, reason: reason.toString() })),
    );
    await new Promise((resolve, reject) => {
      socket.once("open", resolve);
      socket.once("error", reject);
    });
    await ok("/v1/tenant/settings", d.admin, { method: "PATCH", body: { roles: { groups: { eng: "observer" } } } });
    expect(await closed).toEqual({ code: 4403, reason: expect.stringMatching(/role changed from member to observer; reconnect/) });
    const again = await connectClient({ url, key: token, tenant: d.slug, agent: "x" });
    await expect(again.request("session/new", { cwd: "/w", mcpServers: [] })).rejects.toMatchObject({ code: -32003 });
    again.close();
  });

  it("four eyes: the prompter's approval is refused and audited, a second approver's accepted; a person's decisions are listed", async () => {
    const c = await tenantTrusting(idp, "people-c", { fourEyes: { operations: [{ program: "rm" }] } });
    const { name, agent } = await askingAgent(c, {
      toolCallId: "r1",
      title: "Clean",
      kind: "execute",
      rawInput: { command: "rm -rf /w/build" },
    });
    const lee = await connectClient({ url, key: await person("u-lee", ["leads"], c), tenant: c.slug, agent: name });
    const { sessionId } = await lee.request<{ sessionId: string }>("session/new", { cwd: "/w", mcpServers: [] });
    const prompt = lee.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "clean" }] });
    const first = await lee.permissions.waitFor(() => true);
    expect(first.params._meta.acpGateway).toMatchObject({
      answerable: { optionIds: ["reject-once"], reason: expect.stringMatching(/you prompted this turn/) },
      fourEyes: { require: "not_prompter", unsatisfiable: expect.stringMatching(/nobody attached can approve/) },
    });
    await lee.notices.waitFor((n) => n.method === "_acp_gateway/four_eyes_unsatisfiable");
    // Lee approves anyway (a client that ignores answerable): refused, and asked again.
    first.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
    const again = await lee.permissions.waitFor((p) => p !== first);
    expect(again.params._meta.acpGateway.answerable.optionIds).toEqual(["reject-once"]);
    // Liz, another lead, attaches and approves: the turn goes on.
    const liz = await connectClient({ url, key: await person("u-liz", ["leads"], c), tenant: c.slug, agent: name });
    await liz.request("session/load", { sessionId, cwd: "/w", mcpServers: [] });
    const hers = await liz.permissions.waitFor(() => true);
    expect(hers.params._meta.acpGateway.answerable.optionIds).toContain("allow-once");
    hers.answer({ outcome: { outcome: "selected", optionId: "allow-once" } });
    expect(await prompt).toEqual({ stopReason: "end_turn" });
    const [refused] = await auditOf(c, "u-lee", 1);
    expect(refused).toMatchObject({
      outcome: "refused",
      decidedBy: { person: { issuer: idp.issuer, subject: "u-lee" }, role: "approver", user: "u-lee", connectionId: expect.any(String) },
      policy: "four_eyes:not_prompter",
      reason: expect.stringMatching(/prompted this turn/),
    });
    const [approved] = await auditOf(c, "u-liz", 1);
    expect(approved).toMatchObject({
      outcome: "selected",
      optionId: "allow-once",
      decidedBy: { role: "approver", user: "u-liz" },
      policy: "four_eyes:not_prompter",
    });
    lee.close();
    liz.close();
    agent.close();
  });
});
