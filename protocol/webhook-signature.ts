// The signature of a notification webhook, Stripe-style:
//   X-Acp-Gateway-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
// The timestamp is signed with the body, so a receiver that rejects old timestamps rejects replays.

import { bytesEqual, hmacSha256, toHex } from "./hmac";

export const SIGNATURE_HEADER = "X-Acp-Gateway-Signature";
/** How old a signature a receiver should accept by default, in seconds. */
const DEFAULT_TOLERANCE_S = 300;

export async function signatureHeader(secret: string, body: string, nowMs = Date.now()): Promise<string> {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${toHex(await hmacSha256(secret, `${t}.${body}`))}`;
}

/** What a receiver does: parse the header, check the age, recompute and compare in constant time. */
export async function verifySignature(
  secret: string,
  body: string,
  header: string | null,
  nowMs = Date.now(),
  toleranceS = DEFAULT_TOLERANCE_S,
): Promise<{ ok: true } | { ok: false; reason: "missing" | "malformed" | "too_old" | "mismatch" }> {
  if (!header) return { ok: false, reason: "missing" };
  const fields = new Map(header.split(",").map((part) => part.trim().split("=", 2) as [string, string]));
  const t = Number(fields.get("t"));
  const v1 = fields.get("v1");
  if (!Number.isInteger(t) || !v1 || !/^[0-9a-f]{64}$/.test(v1)) return { ok: false, reason: "malformed" };
  if (Math.abs(nowMs / 1000 - t) > toleranceS) return { ok: false, reason: "too_old" };
  const expected = toHex(await hmacSha256(secret, `${t}.${body}`));
  return bytesEqual(new TextEncoder().encode(expected), new TextEncoder().encode(v1)) ? { ok: true } : { ok: false, reason: "mismatch" };
}
