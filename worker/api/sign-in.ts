// How the console signs in (decision 0030). GET /v1/sign-in?tenant=<slug> is public: it tells a page
// that holds no secret whether the tenant signs people in through an OpenID Connect provider, and if
// so which issuer and which OAuth client id to start the authorization code flow with — what every
// authorization URL of a public client shows anyway. Nothing else of the configuration (JWKS URL,
// claims, another audience) is told, and an unknown tenant, a disabled one and one without a provider
// get the same answer ("key"), so the endpoint is no way to list tenants. It is rate-limited per
// client address. GET /v1/me says who the caller's credential names, for the console's header.

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { signInProvider } from "../../db/queries/identity";
import { ROLES } from "../../core/principal";
import { ApiError } from "../http-error";
import { requireKey } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { errorResponses, rateLimitedResponse, validationHook } from "./openapi";
import { json } from "./pagination";

/** The scopes the console asks for: an ID token with the person's name and email. */
const SCOPE = "openid profile email";

const SignInSchema = z
  .object({
    tenant: z.string(),
    /** "provider": sign in through `provider`; "key": with an API key. */
    method: z.enum(["provider", "key"]),
    provider: z
      .object({
        issuer: z.string(),
        clientId: z.string(),
        /** Which token the console sends as its bearer: the ID token when the client id is the audience, else the access token. */
        token: z.enum(["id_token", "access_token"]),
        scope: z.string(),
      })
      .optional(),
  })
  .openapi("SignIn");

export const signInApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

signInApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/sign-in",
    tags: ["identity"],
    summary: "Public: how people of a tenant sign in to the console (its OpenID Connect issuer and client id, or a key)",
    request: { query: z.object({ tenant: z.string().regex(/^[a-z0-9][a-z0-9-]{1,62}$/, "a tenant slug") }) },
    responses: { 200: json(SignInSchema, "How to sign in"), 400: errorResponses[400], ...rateLimitedResponse },
  }),
  async (c) => {
    // Per client address: Cloudflare sets CF-Connecting-IP; locally every caller shares one bucket.
    if (c.env.API_RATE_LIMIT) {
      const { success } = await c.env.API_RATE_LIMIT.limit({ key: `sign-in:${c.req.header("CF-Connecting-IP") ?? "local"}` });
      if (!success) throw new ApiError(429, "rate_limited", "Too many sign-in look-ups from this address; retry in a minute");
    }
    const { tenant } = c.req.valid("query");
    const row = await signInProvider(c.env.DB, tenant);
    c.header("Cache-Control", "no-store");
    if (!row) return c.json({ tenant, method: "key" as const }, 200);
    const clientId = row.clientId ?? row.audience;
    return c.json(
      {
        tenant,
        method: "provider" as const,
        provider: {
          issuer: row.issuer,
          clientId,
          token: clientId === row.audience ? ("id_token" as const) : ("access_token" as const),
          scope: SCOPE,
        },
      },
      200,
    );
  },
);

const MeSchema = z
  .object({
    tenant: z.string(),
    kind: z.enum(["client", "admin", "agent"]),
    credential: z.enum(["key", "token"]),
    /** The key's id; a person's is derived from their identity. What the gateway marks their prompts and answers with (decision 0048). */
    keyId: z.string(),
    label: z.string().nullable(),
    person: z.object({ issuer: z.string(), subject: z.string(), name: z.string() }).nullable(),
    /** What the credential may do (decision 0028): the console greys out what the gateway would refuse, with why. */
    role: z.enum(ROLES).nullable(),
    /** When the token stops being accepted (ms; null for a key). */
    expiresAt: z.number().nullable(),
  })
  .openapi("Me");

signInApi.openapi(
  createRoute({
    method: "get",
    path: "/v1/me",
    tags: ["identity"],
    summary: "Who this credential names: the tenant, the key's label or the person (issuer, subject, name)",
    middleware: [requireKey("client", "admin")] as const,
    responses: { 200: json(MeSchema, "The caller"), ...errorResponses },
  }),
  (c) => {
    const p = c.get("principal");
    return c.json(
      {
        tenant: p.tenantSlug,
        kind: p.kind,
        credential: p.credential.type,
        keyId: p.keyId,
        label: p.label,
        person: p.person ? { issuer: p.person.issuer, subject: p.person.subject, name: p.person.name } : null,
        role: p.role,
        expiresAt: p.credential.type === "token" ? p.credential.expiresAt : null,
      },
      200,
    );
  },
);
