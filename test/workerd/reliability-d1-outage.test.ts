// D1 having a bad minute: a security boundary does not trust a key for ever because its database
// cannot answer, and the decision audit keeps its rows until D1 takes them.

import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { connect, seedTenant } from "./helpers";

/** Makes the real D1 fail for one table (renamed away) while `body` runs, and puts it back after. */
async function withTableGone<T>(table: string, body: () => Promise<T>): Promise<T> {
  await env.DB.exec(`ALTER TABLE ${table} RENAME TO ${table}_offline`);
  try {
    return await body();
  } finally {
    await env.DB.exec(`ALTER TABLE ${table}_offline RENAME TO ${table}`);
  }
}

describe("reliability: D1 unavailable", () => {
  it("closes a client connection with 1013 and a reason once its key could not be re-checked for the grace period, not before", async () => {
    const t = await seedTenant();
    const client = await connect("/acp?agent=none", t.clientKey);
    await client.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    const closed = await withTableGone("api_keys", async () => {
      const from = Date.now();
      const close = await client.closed;
      return { ...close, after: Date.now() - from };
    });
    expect(closed.code).toBe(1013);
    expect(closed.reason).toMatch(/could not verify the API key/);
    expect(closed.after).toBeGreaterThanOrEqual(1500); // KEY_UNVERIFIED_GRACE_MS in vitest.config.ts
  });
});
