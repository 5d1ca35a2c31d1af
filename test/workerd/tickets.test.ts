// Browser tickets (decision 0025): POST /v1/tickets returns a single-use ticket for /acp, offered as the
// subprotocol acp.ticket.<TICKET> beside acp.v1. Used twice, late, for another tenant, or on another
// path, it is refused with 401 and a reason; a ticket issued to a key stops working when the key is revoked.

import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { type SeededTenant, seedTenant, upgrade } from "./helpers";

type Json = Record<string, any>;

async function ticketFor(key: string, body: Json = {}): Promise<Json> {
  const response = await SELF.fetch("http://gateway.test/v1/tickets", {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(201);
  return response.json();
}

const withTicket = (path: string, subprotocol: string) => upgrade(path, undefined, { "Sec-WebSocket-Protocol": `acp.v1, ${subprotocol}` });

async function refusal(response: Response): Promise<string> {
  expect(response.status).toBe(401);
  expect(response.webSocket).toBeNull();
  return ((await response.json()) as { error: { message: string } }).error.message;
}

/** Waits until the clock (the Worker's, in this process) is past `at` (ms): the ticket's time to live, no longer. */
async function clockPast(at: number): Promise<void> {
  for (;;) {
    if (Date.now() > at) return;
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, at - Date.now() + 1)));
  }
}

describe("browser tickets", () => {
  it("opens /acp once with acp.ticket.<ticket> and answers acp.v1; the same ticket again is 401", async () => {
    const t: SeededTenant = await seedTenant();
    const ticket = await ticketFor(t.clientKey);
    expect(ticket).toMatchObject({ path: "/acp", subprotocol: `acp.ticket.${ticket.ticket}` });
    expect(ticket.expiresAt - Date.now()).toBeLessThanOrEqual(30_000);
    const first = await withTicket("/acp?agent=x", ticket.subprotocol);
    expect(first.status).toBe(101);
    expect(first.headers.get("Sec-WebSocket-Protocol")).toBe("acp.v1");
    first.webSocket?.accept();
    first.webSocket?.close();
    expect(await refusal(await withTicket("/acp?agent=x", ticket.subprotocol))).toMatch(/unknown or was already used/);
  });

  it("lets exactly one of many simultaneous upgrades redeem a ticket", async () => {
    const t = await seedTenant();
    const ticket = await ticketFor(t.clientKey);
    const responses = await Promise.all(Array.from({ length: 8 }, () => withTicket("/acp?agent=x", ticket.subprotocol)));
    expect(responses.map((r) => r.status).sort()).toEqual([101, 401, 401, 401, 401, 401, 401, 401]);
    for (const r of responses) {
      r.webSocket?.accept();
      r.webSocket?.close();
    }
  });

  it("refuses a ticket past its time to live", async () => {
    const t = await seedTenant();
    const ticket = await ticketFor(t.clientKey, { ttlMs: 20 });
    await clockPast(ticket.expiresAt as number);
    expect(await refusal(await withTicket("/acp?agent=x", ticket.subprotocol))).toMatch(/expired/);
  });

  it("refuses a ticket of one tenant on a request naming another", async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const ticket = await ticketFor(a.clientKey);
    expect(await refusal(await withTicket(`/acp?agent=x&tenant=${b.slug}`, ticket.subprotocol))).toMatch(/another tenant/);
  });

  it("does not accept a ticket anywhere but a WebSocket to /acp, nor a time to live over 60 s", async () => {
    const t = await seedTenant();
    const ticket = await ticketFor(t.clientKey);
    expect(await refusal(await withTicket("/agents/x/connect", ticket.subprotocol))).toMatch(/opens \/acp/);
    const rest = await SELF.fetch("http://gateway.test/v1/sessions", {
      headers: { "Sec-WebSocket-Protocol": `acp.v1, ${ticket.subprotocol}` },
    });
    expect(rest.status).toBe(401);
    const long = await SELF.fetch("http://gateway.test/v1/tickets", {
      method: "POST",
      headers: { Authorization: `Bearer ${t.clientKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ ttlMs: 60_001 }),
    });
    expect(long.status).toBe(400);
  });

  it("refuses a ticket whose key was revoked after it was issued", async () => {
    const t = await seedTenant();
    const ticket = await ticketFor(t.clientKey);
    const keys = (await (
      await SELF.fetch("http://gateway.test/v1/keys", { headers: { Authorization: `Bearer ${t.adminKey}` } })
    ).json()) as Json;
    const alice = (keys.items as Json[]).find((k) => k.label === "alice");
    expect(alice).toBeDefined();
    const revoked = await SELF.fetch(`http://gateway.test/v1/keys/${alice?.id}`, {
      method: "DELETE",
      headers: { Authorization: `Bearer ${t.adminKey}` },
    });
    expect(revoked.status).toBe(204);
    expect(await refusal(await withTicket("/acp?agent=x", ticket.subprotocol))).toMatch(/revoked/);
  });

  it("refuses a ticket request without credentials, and an agent key's", async () => {
    const t = await seedTenant();
    expect((await SELF.fetch("http://gateway.test/v1/tickets", { method: "POST" })).status).toBe(401);
    const agent = await SELF.fetch("http://gateway.test/v1/tickets", {
      method: "POST",
      headers: { Authorization: `Bearer ${t.agentKey}` },
    });
    expect(agent.status).toBe(403);
  });
});
