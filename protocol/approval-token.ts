// Approval-link tokens: what a notification's link carries so that a person without an API key can
// answer exactly one permission request. A token names the tenant, the session, the request and the
// link, and when it expires; an HMAC-SHA256 under the operator's APPROVAL_LINK_SECRET makes every
// one of those fields tamper-evident. Single use is not the token's job: the SessionObject records
// each link it issued and marks it used when it answers (a token cannot remember that it was spent).
//
// Format: base64url(JSON claims) "." base64url(HMAC(secret, "acp-approval-link.v1." + claims part)).

import { bytesEqual, fromBase64Url, hmacSha256, toBase64Url } from "./hmac";

export interface ApprovalClaims {
  /** Tenant id. */
  t: string;
  /** Session id. */
  s: string;
  /** The session's id of the permission request (its pending row). */
  p: number;
  /** The link's own id, recorded by the session; names the link in decidedBy and the audit. */
  l: string;
  /** Expiry, ms since the epoch. */
  e: number;
}

export type TokenCheck =
  | { ok: true; claims: ApprovalClaims }
  | { ok: false; reason: "malformed" | "bad_signature" | "expired" | "no_secret"; claims?: ApprovalClaims };

const DOMAIN = "acp-approval-link.v1.";
/** Shorter secrets are refused: a guessable key would make every link forgeable. */
const MIN_SECRET_LENGTH = 32;

export function usableSecret(secret: string | undefined): secret is string {
  return typeof secret === "string" && secret.length >= MIN_SECRET_LENGTH;
}

export async function signApprovalToken(secret: string, claims: ApprovalClaims): Promise<string> {
  if (!usableSecret(secret)) throw new Error(`APPROVAL_LINK_SECRET must be at least ${MIN_SECRET_LENGTH} characters`);
  const body = toBase64Url(new TextEncoder().encode(JSON.stringify(claims)));
  return `${body}.${toBase64Url(await hmacSha256(secret, DOMAIN + body))}`;
}

/** Checks the signature first and only then reads the claims: nothing unsigned is ever trusted. */
export async function verifyApprovalToken(secret: string | undefined, token: string, now = Date.now()): Promise<TokenCheck> {
  if (!usableSecret(secret)) return { ok: false, reason: "no_secret" };
  const parts = token.split(".");
  if (parts.length !== 2 || token.length > 2048) return { ok: false, reason: "malformed" };
  const [body = "", mac = ""] = parts;
  const given = fromBase64Url(mac);
  // Only the canonical spelling: a last character whose unused bits differ decodes to the same bytes.
  if (!given || toBase64Url(given) !== mac) return { ok: false, reason: "malformed" };
  if (!bytesEqual(given, await hmacSha256(secret, DOMAIN + body))) return { ok: false, reason: "bad_signature" };
  const claims = parseClaims(body);
  if (!claims) return { ok: false, reason: "malformed" };
  if (claims.e <= now) return { ok: false, reason: "expired", claims };
  return { ok: true, claims };
}

function parseClaims(body: string): ApprovalClaims | null {
  const bytes = fromBase64Url(body);
  if (!bytes) return null;
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    const { t, s, p, l, e } = value;
    if (typeof t !== "string" || typeof s !== "string" || typeof l !== "string") return null;
    if (typeof p !== "number" || !Number.isInteger(p) || typeof e !== "number") return null;
    return { t, s, p, l, e };
  } catch {
    return null;
  }
}
