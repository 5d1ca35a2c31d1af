// A bearer value is a JWT or an API key, never both (worker/identity.ts looksLikeJwt, decision 0025):
// minted keys and any dot-free string are keys; every compact JWS jose signs is a JWT.

import fc from "fast-check";
import { SignJWT, generateKeyPair } from "jose";
import { describe, expect, it } from "vitest";
import { mintKey } from "../../protocol/api-keys";
import { looksLikeJwt } from "../../worker/identity";

const runs = Number(process.env.FUZZ_RUNS) || 200;

describe("telling a JWT from an API key", () => {
  it("never takes a minted key of any kind for a JWT", async () => {
    for (const kind of ["client", "agent", "admin"] as const) {
      for (let i = 0; i < 50; i++) expect(looksLikeJwt((await mintKey(kind)).key)).toBe(false);
    }
  });

  it("never takes a string without a dot for a JWT", () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !s.includes(".")),
        (s) => !looksLikeJwt(s),
      ),
      { numRuns: runs },
    );
  });

  it("takes every token jose signs, whatever its claims, for a JWT", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
        fc.string({ maxLength: 20 }),
        async (claims, kid) => {
          const token = await new SignJWT(claims as Record<string, unknown>).setProtectedHeader({ alg: "ES256", kid }).sign(privateKey);
          return looksLikeJwt(token);
        },
      ),
      { numRuns: Math.min(runs, 100) },
    );
  });
});
