import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ApprovalClaims, signApprovalToken, verifyApprovalToken } from "../../protocol/approval-token";
import { signatureHeader, verifySignature } from "../../protocol/webhook-signature";

const SECRET = "0123456789abcdef0123456789abcdef-test";
const NOW = 1_800_000_000_000;
const claims: ApprovalClaims = { t: "t_a", s: "sess-1", p: 3, l: "lnk_1", e: NOW + 60_000 };

describe("approval link tokens", () => {
  it("round-trips the claims that bind it to tenant, session, request and link", async () => {
    const token = await signApprovalToken(SECRET, claims);
    expect(await verifyApprovalToken(SECRET, token, NOW)).toEqual({ ok: true, claims });
  });

  it("is refused once expired, and the expired claims are still reported", async () => {
    const token = await signApprovalToken(SECRET, claims);
    expect(await verifyApprovalToken(SECRET, token, claims.e)).toEqual({ ok: false, reason: "expired", claims });
  });

  it("is refused under another secret, and no secret (or a short one) refuses everything", async () => {
    const token = await signApprovalToken(SECRET, claims);
    expect((await verifyApprovalToken(`${SECRET}-other`, token, NOW)).ok).toBe(false);
    expect(await verifyApprovalToken(undefined, token, NOW)).toEqual({ ok: false, reason: "no_secret" });
    expect(await verifyApprovalToken("short", token, NOW)).toEqual({ ok: false, reason: "no_secret" });
    await expect(signApprovalToken("short", claims)).rejects.toThrow(/at least 32/);
  });

  it("a token re-signed with any claim changed (another tenant, session, request, link, expiry) fails the signature", async () => {
    const token = await signApprovalToken(SECRET, claims);
    const [, mac] = token.split(".");
    const variants: ApprovalClaims[] = [
      { ...claims, t: "t_b" },
      { ...claims, s: "sess-2" },
      { ...claims, p: 4 },
      { ...claims, l: "lnk_2" },
      { ...claims, e: claims.e + 1 },
    ];
    for (const changed of variants) {
      const body = Buffer.from(JSON.stringify(changed)).toString("base64url");
      expect(await verifyApprovalToken(SECRET, `${body}.${mac}`, NOW)).toEqual({ ok: false, reason: "bad_signature" });
    }
  });

  it("any single-character change of a token is refused (property)", async () => {
    const token = await signApprovalToken(SECRET, claims);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";
    await fc.assert(
      fc.asyncProperty(fc.nat(token.length - 1), fc.constantFrom(...alphabet), async (i, ch) => {
        fc.pre(token[i] !== ch);
        const tampered = token.slice(0, i) + ch + token.slice(i + 1);
        const check = await verifyApprovalToken(SECRET, tampered, NOW);
        expect(check.ok).toBe(false);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses a signature spelled non-canonically (a last character that differs only in unused bits)", async () => {
    // Counterexample the property above found: base64url's last character of a 32-byte MAC carries
    // 2 unused bits, so 4 spellings decode to the same bytes. Only the canonical one is accepted.
    const token = await signApprovalToken(SECRET, claims);
    const last = token.at(-1) ?? "A";
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const index = alphabet.indexOf(last);
    const sibling = alphabet[(index & ~3) + ((index + 1) & 3)] ?? "A";
    const check = await verifyApprovalToken(SECRET, token.slice(0, -1) + sibling, NOW);
    expect(check.ok).toBe(false);
  });

  it("garbage is malformed, never an exception", async () => {
    for (const bad of ["", ".", "a.b.c", "!!!.???", "eyJ0IjoxfQ.", `${"a".repeat(3000)}.b`]) {
      const check = await verifyApprovalToken(SECRET, bad, NOW);
      expect(check.ok).toBe(false);
    }
  });
});

describe("webhook signatures", () => {
  const body = JSON.stringify({ type: "permission.waiting", n: 1 });
  it("verifies what it signed, within the tolerance", async () => {
    const header = await signatureHeader("whsec_x", body, NOW);
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(await verifySignature("whsec_x", body, header, NOW + 10_000)).toEqual({ ok: true });
  });
  it("rejects a replay outside the tolerance, another body, another secret, a missing header", async () => {
    const header = await signatureHeader("whsec_x", body, NOW);
    expect(await verifySignature("whsec_x", body, header, NOW + 301_000)).toEqual({ ok: false, reason: "too_old" });
    expect(await verifySignature("whsec_x", `${body} `, header, NOW)).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifySignature("whsec_y", body, header, NOW)).toEqual({ ok: false, reason: "mismatch" });
    expect(await verifySignature("whsec_x", body, null, NOW)).toEqual({ ok: false, reason: "missing" });
    expect(await verifySignature("whsec_x", body, "t=abc,v1=zz", NOW)).toEqual({ ok: false, reason: "malformed" });
  });
});
