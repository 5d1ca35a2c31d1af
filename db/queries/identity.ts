// A tenant's identity providers (OpenID Connect, Cloudflare Access): set by its admin, read on every
// request that presents a token naming the tenant.

import { and, eq } from "drizzle-orm";
import { dbOf } from "../client";
import { type TenantIdentityRow, identityProofs, tenantIdentity, tenants } from "../schema";

export type IdentityProvider = TenantIdentityRow["provider"];
export type IdentityConfig = Omit<TenantIdentityRow, "tenantId" | "provider" | "updatedAt">;

export async function identityProvider(
  d1: D1Database,
  tenantId: string,
  provider: IdentityProvider,
): Promise<TenantIdentityRow | undefined> {
  const [row] = await dbOf(d1)
    .select()
    .from(tenantIdentity)
    .where(and(eq(tenantIdentity.tenantId, tenantId), eq(tenantIdentity.provider, provider)))
    .limit(1);
  return row;
}

/**
 * What a stranger may learn to start a sign-in for a tenant (GET /v1/sign-in): the OpenID Connect
 * provider of an enabled tenant with this slug, in one query, so an unknown tenant, a disabled one and
 * one without a provider look the same.
 */
export async function signInProvider(
  d1: D1Database,
  slug: string,
): Promise<Pick<TenantIdentityRow, "issuer" | "audience" | "clientId"> | undefined> {
  const [row] = await dbOf(d1)
    .select({ issuer: tenantIdentity.issuer, audience: tenantIdentity.audience, clientId: tenantIdentity.clientId })
    .from(tenants)
    .innerJoin(tenantIdentity, and(eq(tenantIdentity.tenantId, tenants.id), eq(tenantIdentity.provider, "oidc")))
    .where(and(eq(tenants.slug, slug), eq(tenants.disabled, false)))
    .limit(1);
  return row;
}

/** The tenant that proved this (issuer, audience) first (decision 0041), if any: the pair is then its alone. */
export async function tenantOfIssuerAudience(d1: D1Database, issuer: string, audience: string): Promise<string | undefined> {
  const [row] = await dbOf(d1)
    .select({ tenantId: identityProofs.tenantId })
    .from(identityProofs)
    .where(and(eq(identityProofs.issuer, issuer), eq(identityProofs.audience, audience)))
    .limit(1);
  return row?.tenantId;
}

/**
 * A person of `tenantId` signed in with a token the pair's keys verified: the pair is proven by the
 * tenant that did so first. Returns that tenant (this one, unless another proved it before). Reads
 * first, so only the first sign-in of a pair writes; two first sign-ins at once agree on one.
 */
export async function proveIssuerAudience(
  d1: D1Database,
  issuer: string,
  audience: string,
  tenantId: string,
  now: number,
): Promise<string> {
  const proven = await tenantOfIssuerAudience(d1, issuer, audience);
  if (proven !== undefined) return proven;
  await dbOf(d1).insert(identityProofs).values({ issuer, audience, tenantId, provenAt: now }).onConflictDoNothing();
  return (await tenantOfIssuerAudience(d1, issuer, audience)) ?? tenantId;
}

export async function putIdentityProvider(
  d1: D1Database,
  tenantId: string,
  provider: IdentityProvider,
  config: IdentityConfig,
  now: number,
): Promise<void> {
  await dbOf(d1)
    .insert(tenantIdentity)
    .values({ tenantId, provider, ...config, updatedAt: now })
    .onConflictDoUpdate({ target: [tenantIdentity.tenantId, tenantIdentity.provider], set: { ...config, updatedAt: now } });
}

export async function deleteIdentityProvider(d1: D1Database, tenantId: string, provider: IdentityProvider): Promise<boolean> {
  const rows = await dbOf(d1)
    .delete(tenantIdentity)
    .where(and(eq(tenantIdentity.tenantId, tenantId), eq(tenantIdentity.provider, provider)))
    .returning({ tenantId: tenantIdentity.tenantId });
  return rows.length > 0;
}
