import { SELF, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { signApprovalToken } from "../../protocol/approval-token";
import { seedTenant } from "./helpers";

const SECRET = env.APPROVAL_LINK_SECRET ?? "";
const open = async (token: string) => {
  const response = await SELF.fetch(`http://gateway.test/approve/${token}`);
  return { status: response.status, text: await response.text(), headers: response.headers };
};

describe("approval links: binding, expiry, tampering", () => {
  it("an expired link says so with 410", async () => {
    const t = await seedTenant();
    const token = await signApprovalToken(SECRET, { t: t.tenantId, s: "sess", p: 1, l: "lnk_x", e: Date.now() - 1 });
    const page = await open(token);
    expect(page.status).toBe(410);
    expect(page.text).toContain("expired");
    expect(page.headers.get("Cache-Control")).toBe("no-store");
    expect(page.headers.get("Referrer-Policy")).toBe("no-referrer");
  });

  it("a link signed with another secret, or altered, is not a valid link (404)", async () => {
    const t = await seedTenant();
    const forged = await signApprovalToken("another-secret-of-at-least-32-characters!!", {
      t: t.tenantId,
      s: "sess",
      p: 1,
      l: "lnk_x",
      e: Date.now() + 60_000,
    });
    expect((await open(forged)).status).toBe(404);
    expect((await open("not-a-token")).status).toBe(404);
  });

  it("a correctly signed link that names no issued link (another session or request) reaches nothing (404); of a team that is gone, 410", async () => {
    const t = await seedTenant();
    const token = await signApprovalToken(SECRET, { t: t.tenantId, s: "no-such-session", p: 1, l: "lnk_x", e: Date.now() + 60_000 });
    const page = await open(token);
    expect(page.status).toBe(404);
    const post = await SELF.fetch(`http://gateway.test/approve/${token}`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "optionId=allow",
    });
    expect(post.status).toBe(404);
    // Only the gateway signs with its secret, so a team it names existed: gone now, the link is withdrawn.
    const unknownTenant = await signApprovalToken(SECRET, { t: "t_nobody", s: "s", p: 1, l: "l", e: Date.now() + 60_000 });
    const gone = await open(unknownTenant);
    expect(gone.status).toBe(410);
    expect(gone.text).toContain("Its team no longer exists");
  });
});
