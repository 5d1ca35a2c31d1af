// A person's token, verified (decision 0025): `Authorization: Bearer <JWT>` against the tenant's
// OpenID Connect provider, or Cloudflare Access's `Cf-Access-Jwt-Assertion` against its team's keys.
// jose checks the signature (RS256, ES256 or EdDSA only), `iss`, `aud`, `exp` and `nbf` with 30 s of
// skew; the issuer's keys are fetched from its JWKS URL and cached per isolate, and a token naming a
// key the cache does not hold refetches them, at most once per cooldown (JWKS_COOLDOWN_MS, 30 s).

import { type JWTPayload, type JWTVerifyGetKey, createRemoteJWKSet, errors, jwtVerify } from "jose";
import type { TenantIdentityRow } from "../db/schema";
import type { Person } from "../core/principal";
import type { Env } from "../core/env";
import { allowPrivateWebhooks, nonPublicRange } from "../protocol/webhook-url";

/** The signature algorithms a token may use; `none` and HMAC (a shared secret) never. */
const ALGORITHMS = ["RS256", "ES256", "EdDSA"];
const CLOCK_TOLERANCE_S = 30;
const DEFAULT_JWKS_COOLDOWN_MS = 30_000;
const JWKS_MAX_AGE_MS = 10 * 60_000;
/** How many issuers' key sets one isolate keeps (the oldest is dropped first). */
const MAX_KEY_SETS = 256;

const keySets = new Map<string, JWTVerifyGetKey>();

function keySetOf(url: string, cooldownMs: number): JWTVerifyGetKey {
  const id = `${cooldownMs} ${url}`;
  let set = keySets.get(id);
  if (!set) {
    set = createRemoteJWKSet(new URL(url), { cooldownDuration: cooldownMs, cacheMaxAge: JWKS_MAX_AGE_MS, timeoutDuration: 5000 });
    if (keySets.size >= MAX_KEY_SETS) keySets.delete(keySets.keys().next().value ?? "");
    keySets.set(id, set);
  }
  return set;
}

/**
 * Why the gateway will not fetch keys from `url` (null: it will): a loopback, private or link-local
 * host, as for webhooks (protocol/webhook-url.ts), unless the deployment sets WEBHOOK_ALLOW_PRIVATE=1.
 * Checked when the provider is stored and again before every fetch (a row from before, or by hand).
 */
export function privateKeysHost(env: Env, url: URL): string | null {
  const range = nonPublicRange(url.hostname);
  if (!range || allowPrivateWebhooks(env.WEBHOOK_ALLOW_PRIVATE)) return null;
  return `its host ${url.hostname} is ${range}; the gateway fetches keys only from public hosts (a deployment that needs otherwise sets WEBHOOK_ALLOW_PRIVATE=1)`;
}

/** Whether a bearer value is a JWT: three base64url parts whose first is a JSON object. API keys never hold a dot. */
export function looksLikeJwt(value: string): boolean {
  return /^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(value);
}

export type TokenCheck = { ok: true; person: Person; expiresAt: number } | { ok: false; reason: string };

/** Verifies a token against one provider of the tenant; the reason says what was wrong, never the token. */
export async function verifyToken(env: Env, provider: TenantIdentityRow, token: string): Promise<TokenCheck> {
  const cooldown = Number(env.JWKS_COOLDOWN_MS ?? DEFAULT_JWKS_COOLDOWN_MS);
  let keysUrl: URL;
  try {
    keysUrl = new URL(provider.jwksUrl);
  } catch {
    return { ok: false, reason: "the tenant's JWKS URL is not a URL" };
  }
  const refused = privateKeysHost(env, keysUrl);
  if (refused) return { ok: false, reason: `the tenant's JWKS URL is refused: ${refused}` };
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(
      token,
      keySetOf(provider.jwksUrl, Number.isFinite(cooldown) && cooldown >= 0 ? cooldown : DEFAULT_JWKS_COOLDOWN_MS),
      {
        issuer: provider.issuer,
        audience: provider.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ["exp"],
      },
    ));
  } catch (error) {
    return { ok: false, reason: reasonOf(error) };
  }
  const subject = payload[provider.userClaim];
  if (typeof subject !== "string" || subject === "" || subject.length > 255) {
    return { ok: false, reason: `the token has no "${provider.userClaim}" claim naming the person (a string of 1–255 characters)` };
  }
  const named = [provider.nameClaim, "name", "email"]
    .map((c) => (c ? payload[c] : undefined))
    .find((v) => typeof v === "string" && v !== "");
  const groupsValue = provider.groupsClaim ? payload[provider.groupsClaim] : undefined;
  const groups = Array.isArray(groupsValue) ? groupsValue.filter((g): g is string => typeof g === "string").slice(0, 100) : [];
  const name = typeof named === "string" ? named.slice(0, 200) : subject;
  // exp is required above, so it is a number here.
  const expiresAt = (payload.exp ?? 0) * 1000 + CLOCK_TOLERANCE_S * 1000;
  return { ok: true, person: { issuer: provider.issuer, subject, name, groups }, expiresAt };
}

/** What a refused token is told: from jose's typed error codes, never from its message text. */
function reasonOf(error: unknown): string {
  if (error instanceof errors.JWTExpired) return "the token has expired (exp is past, beyond 30 s of clock skew)";
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "aud") return "the token's audience (aud) is not this tenant's";
    if (error.claim === "iss") return "the token's issuer (iss) is not this tenant's provider";
    if (error.claim === "nbf") return "the token is not valid yet (nbf is in the future)";
    return `the token's "${error.claim}" claim is missing or invalid`;
  }
  if (error instanceof errors.JWKSNoMatchingKey)
    return "the token is signed by a key the issuer does not publish (unknown, or rotated out)";
  if (error instanceof errors.JWKSMultipleMatchingKeys) return "the token's key id matches several of the issuer's keys";
  if (error instanceof errors.JOSEAlgNotAllowed) return `the token's algorithm is not accepted (only ${ALGORITHMS.join(", ")})`;
  if (error instanceof errors.JWSSignatureVerificationFailed) return "the token's signature does not verify";
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid)
    return "the issuer's keys (JWKS) could not be fetched; try again";
  if (error instanceof errors.JOSEError) return `the token is not valid (${error.code})`;
  if (error instanceof TypeError) return "the issuer's keys (JWKS) could not be fetched; try again";
  return "the token is not valid";
}
