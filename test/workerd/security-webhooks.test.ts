// Webhooks go only where they may: a notification target on a loopback, private or link-local host,
// or in another scheme, is refused with 400 when it is created and again at every delivery, unless the
// deployment sets WEBHOOK_ALLOW_PRIVATE=1 (this project does, for its loopback receiver); a redirect
// is never followed — a 3xx is a failed delivery, recorded like any other.

import { SELF, createExecutionContext, env, runDurableObjectAlarm, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, inject, it, vi } from "vitest";
import app from "../../worker/index";
import { deliverWebhook } from "../../durable-objects/session/webhook-delivery";
import type { SessionObject } from "../../durable-objects/session/session-object";
import { type SeededTenant, clientWithSession, dialInAgent, isMethod, seedTenant } from "./helpers";
import { objects } from "../../durable-objects/objects";

const receiver = inject("webhookReceiverUrl");
const strict = { allowPrivate: false };

/** POST /v1/notification-targets to the Worker with this WEBHOOK_ALLOW_PRIVATE (undefined: a deployment's default, off). */
async function createTarget(t: SeededTenant, url: string, allowPrivate: string | undefined) {
  const ctx = createExecutionContext();
  const response = await app.fetch(
    new Request("http://gateway.test/v1/notification-targets", {
      method: "POST",
      headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ url }),
    }),
    { ...env, WEBHOOK_ALLOW_PRIVATE: allowPrivate },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return { status: response.status, body: (await response.json()) as { error?: { code: string; message: string } } };
}

const received = async (channel: string) => ((await (await fetch(`${receiver}/count/${channel}`)).json()) as { received: number }).received;

describe("webhook targets stay off private networks", () => {
  it("creating a target on a loopback, private or link-local host, or in another scheme, is refused with 400 naming why", async () => {
    const t = await seedTenant();
    // Preconditions: this project allows private hosts, and with the deployment default (unset) a public https target is accepted.
    expect(env.WEBHOOK_ALLOW_PRIVATE).toBe("1"); // this project's override, for its receiver
    expect((await createTarget(t, "https://hooks.example.com/acp", undefined)).status).toBe(201);
    const cases: [string, RegExp][] = [
      ["https://127.0.0.1/hook", /loopback/],
      ["https://0x7f.1/hook", /loopback/],
      ["https://2130706433/hook", /loopback/],
      ["https://127.1/hook", /loopback/],
      ["https://[::1]/hook", /loopback/],
      ["https://[::ffff:127.0.0.1]/hook", /loopback/],
      ["https://localhost/hook", /loopback/],
      ["https://10.1.2.3/hook", /private/],
      ["https://172.20.0.1/hook", /private/],
      ["https://192.168.0.10/hook", /private/],
      ["https://[fd00::1]/hook", /unique local/],
      ["https://169.254.169.254/latest/meta-data/", /link-local/],
      ["https://[fe80::1]/hook", /link-local/],
      ["https://0.0.0.0/hook", /unspecified/],
      [`${receiver}/hook/x`, /loopback/],
      ["http://hooks.example.com/acp", /plain http/],
      ["ftp://hooks.example.com/", /only https/],
    ];
    for (const [url, reason] of cases) {
      const refused = await createTarget(t, url, undefined);
      expect(refused.status, url).toBe(400);
      expect(refused.body.error?.message, url).toMatch(/^The webhook URL is refused: /);
      expect(refused.body.error?.message, url).toMatch(reason);
    }
    // The same loopback receiver is accepted where the deployment allows private hosts.
    expect((await createTarget(t, `${receiver}/hook/x`, "1")).status).toBe(201);
  });

  it("a delivery to a private host is refused at delivery too, when the deployment does not allow it: nothing is sent", async () => {
    const channel = `strict-${crypto.randomUUID()}`;
    const url = `${receiver}/hook/${channel}`;
    // Precondition: the same delivery, allowed, reaches the receiver.
    const allowedChannel = `allowed-${crypto.randomUUID()}`;
    expect(
      await deliverWebhook({ url: `${receiver}/hook/${allowedChannel}`, secret: "s".repeat(32) }, "d1", "{}", { allowPrivate: true }),
    ).toMatchObject({
      ok: true,
    });
    expect(await received(allowedChannel)).toBe(1);

    const refused = await deliverWebhook({ url, secret: "s".repeat(32) }, "d2", "{}", strict);
    expect(refused).toMatchObject({ ok: false, attempts: 0, last: expect.stringMatching(/^refused: .*loopback/) });
    const metadata = await deliverWebhook({ url: "http://169.254.169.254/latest/meta-data/", secret: "s".repeat(32) }, "d3", "{}", strict);
    expect(metadata).toMatchObject({ ok: false, attempts: 0 });
    expect(await received(channel)).toBe(0);
  });

  it("a 3xx from the webhook is a failed delivery, recorded on the link, and its Location is never followed", async () => {
    const followedChannel = `redirected-${crypto.randomUUID()}`;
    // Precondition: the receiver's redirect lands a POST on /hook/<channel> for a client that follows it.
    const check = `check-${crypto.randomUUID()}`;
    expect((await fetch(`${receiver}/redirect/${check}`, { method: "POST", body: "{}" })).status).toBe(204);
    expect(await received(check)).toBe(1);

    const t = await seedTenant({ notifyAfterMs: 60_000 });
    const created = await SELF.fetch("http://gateway.test/v1/notification-targets", {
      method: "POST",
      headers: { Authorization: `Bearer ${t.adminKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "redirecting", url: `${receiver}/redirect/${followedChannel}` }),
    });
    expect(created.status).toBe(201);
    const agent = await dialInAgent(t);
    const { client, sessionId } = await clientWithSession(t, agent);
    client.send({ jsonrpc: "2.0", id: "p1", method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "go" }] } });
    await agent.peer.next(isMethod("session/prompt"));
    client.close();
    await client.closed;
    agent.askPermission(sessionId, {
      toolCallId: "c1",
      title: "Run it",
      kind: "execute",
      status: "pending",
      rawInput: { command: "make" },
    });
    const stub = objects.session(env, t.tenantId, sessionId);
    const sql = <T>(query: string) => runInDurableObject(stub, (_: SessionObject, state) => state.storage.sql.exec(query).toArray() as T[]);
    await vi.waitFor(async () => expect((await sql("SELECT 1 FROM notify")).length).toBe(1), { timeout: 20_000, interval: 20 });
    await runInDurableObject(stub, (_: SessionObject, state) => {
      state.storage.sql.exec("UPDATE notify SET due_at = due_at - 60000");
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    type Link = { delivered: number | null; attempts: number; last_result: string | null };
    // The link's row is written by the delivery; until then there is no row (undefined, not null), so
    // the wait is for a number in `delivered`, not for "not null".
    await vi.waitFor(
      async () =>
        expect(typeof (await sql<Link>("SELECT delivered, attempts, last_result FROM approval_links"))[0]?.delivered).toBe("number"),
      { timeout: 20_000, interval: 20 },
    );
    const [link] = await sql<Link>("SELECT delivered, attempts, last_result FROM approval_links");
    expect(link).toMatchObject({ delivered: 0, attempts: 1, last_result: expect.stringMatching(/^HTTP 307: a redirect, not followed/) });
    expect(await received(followedChannel)).toBe(0);
  });
});
