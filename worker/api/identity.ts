// A tenant's identity providers, for its admin (decision 0025): OpenID Connect (PUT /v1/tenant/oidc)
// and Cloudflare Access in front of the gateway (PUT /v1/tenant/access). A person's token is then
// accepted on /acp, the REST API and the console for this tenant (worker/auth.ts).

import { OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import {
  type IdentityConfig,
  type IdentityProvider,
  deleteIdentityProvider,
  identityProvider,
  putIdentityProvider,
  tenantOfIssuerAudience,
} from "../../db/queries/identity";
import type { TenantIdentityRow } from "../../db/schema";
import type { Env } from "../../core/env";
import { ApiError } from "../http-error";
import { privateKeysHost } from "../identity";
import { requireRole } from "../middleware/require-key";
import type { AppEnv } from "../types";
import { conflictResponse, errorResponses, validationHook } from "./openapi";
import { json } from "./pagination";

const errors = { ...errorResponses, ...conflictResponse };
const CLAIM = z.string().regex(/^[A-Za-z0-9_:./-]{1,100}$/, "a claim name: letters, digits and _ : . / -");

const OidcBody = z
  .object({
    issuer: z.string().url().max(500),
    audience: z.string().min(1).max(500),
    /**
     * The OAuth client id the console signs in with (authorization code + PKCE, a public client).
     * Null or absent: the audience, which is what an ID token's `aud` is; the console then sends the
     * ID token. A client id other than the audience makes the console send the access token, which
     * must then be a JWT for the audience (decision 0030).
     */
    clientId: z.string().min(1).max(500).nullable().default(null),
    jwksUrl: z.string().url().max(1000),
    userClaim: CLAIM.default("sub"),
    groupsClaim: CLAIM.nullable().default(null),
    nameClaim: CLAIM.nullable().default(null),
  })
  .strict()
  .openapi("OidcConfig");

const AccessBody = z
  .object({
    /** The team's domain, e.g. "myteam.cloudflareaccess.com" (or a full origin). */
    teamDomain: z.string().min(1).max(300),
    /** The Access application's AUD tag. */
    audience: z.string().min(1).max(500),
    groupsClaim: CLAIM.nullable().default(null),
  })
  .strict()
  .openapi("AccessConfig");

const ProviderSchema = z
  .object({
    provider: z.enum(["oidc", "access"]),
    issuer: z.string(),
    audience: z.string(),
    clientId: z.string().nullable(),
    jwksUrl: z.string(),
    userClaim: z.string(),
    groupsClaim: z.string().nullable(),
    nameClaim: z.string().nullable(),
    updatedAt: z.number(),
  })
  .openapi("IdentityProvider");

const providerJson = (r: TenantIdentityRow) => ({
  provider: r.provider,
  issuer: r.issuer,
  audience: r.audience,
  clientId: r.clientId,
  jwksUrl: r.jwksUrl,
  userClaim: r.userClaim,
  groupsClaim: r.groupsClaim,
  nameClaim: r.nameClaim,
  updatedAt: r.updatedAt,
});

/**
 * An https URL without credentials (plain http too where IDENTITY_ALLOW_HTTP=1: local development, the
 * tests). One the gateway itself fetches (`fetched`: the keys) names a public host, as a webhook does
 * (decision 0041): not loopback, private or link-local, unless the deployment sets WEBHOOK_ALLOW_PRIVATE=1.
 */
function checkedUrl(env: Env, field: string, text: string, fetched = false): string {
  const url = new URL(text);
  const http = env.IDENTITY_ALLOW_HTTP === "1" && url.protocol === "http:";
  if (url.protocol !== "https:" && !http) throw ApiError.badRequest(`${field} must be an https URL`);
  if (url.username || url.password) throw ApiError.badRequest(`${field} must not carry credentials`);
  const refused = fetched ? privateKeysHost(env, url) : null;
  if (refused) throw ApiError.badRequest(`${field} is refused: ${refused}`);
  return url.href;
}

async function store(env: Env, tenantId: string, provider: IdentityProvider, config: IdentityConfig): Promise<TenantIdentityRow> {
  const owner = await tenantOfIssuerAudience(env.DB, config.issuer, config.audience);
  if (owner !== undefined && owner !== tenantId) {
    throw new ApiError(
      409,
      "conflict",
      "Another tenant has proven this issuer with this audience (its people signed in with it first): a token must name one tenant, so give this tenant its own audience (client id)",
    );
  }
  await putIdentityProvider(env.DB, tenantId, provider, config, Date.now());
  const row = await identityProvider(env.DB, tenantId, provider);
  if (!row) throw new Error("the identity provider just stored is missing");
  return row;
}

export const identityApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

for (const provider of ["oidc", "access"] as const) {
  identityApi.openapi(
    createRoute({
      method: "get",
      path: `/v1/tenant/${provider}`,
      tags: ["identity"],
      summary: provider === "oidc" ? "The tenant's OpenID Connect provider" : "The tenant's Cloudflare Access configuration",
      middleware: [requireRole("administer")] as const,
      responses: { 200: json(ProviderSchema, "The provider"), ...errors },
    }),
    async (c) => {
      const row = await identityProvider(c.env.DB, c.get("principal").tenantId, provider);
      if (!row) throw ApiError.notFound(provider === "oidc" ? "OpenID Connect configuration" : "Cloudflare Access configuration");
      return c.json(providerJson(row), 200);
    },
  );
  identityApi.openapi(
    createRoute({
      method: "delete",
      path: `/v1/tenant/${provider}`,
      tags: ["identity"],
      summary: "Stop accepting this provider's tokens (live connections close when their token expires)",
      middleware: [requireRole("administer")] as const,
      responses: { 204: { description: "Removed" }, ...errors },
    }),
    async (c) => {
      if (!(await deleteIdentityProvider(c.env.DB, c.get("principal").tenantId, provider))) throw ApiError.notFound("Identity provider");
      return c.body(null, 204);
    },
  );
}

identityApi.openapi(
  createRoute({
    method: "put",
    path: "/v1/tenant/oidc",
    tags: ["identity"],
    summary: "Accept a person's OpenID Connect token (Authorization: Bearer <JWT>, Acp-Tenant: <slug>)",
    middleware: [requireRole("administer")] as const,
    request: { body: { content: { "application/json": { schema: OidcBody } }, required: true } },
    responses: { 200: json(ProviderSchema, "The provider"), ...errors },
  }),
  async (c) => {
    const body = c.req.valid("json");
    // Checked as a URL (the console fetches its discovery document) but stored as given: `iss` is compared as a string.
    checkedUrl(c.env, "issuer", body.issuer);
    const row = await store(c.env, c.get("principal").tenantId, "oidc", {
      issuer: body.issuer,
      audience: body.audience,
      clientId: body.clientId === body.audience ? null : body.clientId,
      jwksUrl: checkedUrl(c.env, "jwksUrl", body.jwksUrl, true),
      userClaim: body.userClaim,
      groupsClaim: body.groupsClaim,
      nameClaim: body.nameClaim,
    });
    return c.json(providerJson(row), 200);
  },
);

identityApi.openapi(
  createRoute({
    method: "put",
    path: "/v1/tenant/access",
    tags: ["identity"],
    summary: "Accept Cloudflare Access's Cf-Access-Jwt-Assertion for this tenant (team domain and application AUD)",
    middleware: [requireRole("administer")] as const,
    request: { body: { content: { "application/json": { schema: AccessBody } }, required: true } },
    responses: { 200: json(ProviderSchema, "The provider"), ...errors },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const origin = /^[a-z]+:\/\//i.test(body.teamDomain) ? body.teamDomain : `https://${body.teamDomain}`;
    let base: URL;
    try {
      base = new URL(checkedUrl(c.env, "teamDomain", origin, true));
    } catch (error) {
      if (error instanceof ApiError) throw error;
      throw ApiError.badRequest("teamDomain must be a domain such as myteam.cloudflareaccess.com");
    }
    const row = await store(c.env, c.get("principal").tenantId, "access", {
      issuer: base.origin,
      audience: body.audience,
      clientId: null,
      jwksUrl: `${base.origin}/cdn-cgi/access/certs`,
      userClaim: "sub",
      groupsClaim: body.groupsClaim,
      nameClaim: "email",
    });
    return c.json(providerJson(row), 200);
  },
);
