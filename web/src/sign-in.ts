// Signing a person in through the tenant's OpenID Connect provider (decision 0030): the authorization
// code flow with PKCE, in the page, as a public client (no secret). oauth4webapi (panva's, like the
// gateway's jose) does the protocol: discovery from the issuer's .well-known/openid-configuration,
// the S256 challenge, the callback's checks, the code exchange at the token endpoint, and the ID
// token's claims (iss, aud, exp, iat, azp, and the nonce). The ID token's signature is checked by the
// gateway against the issuer's keys on every call, which is what the token is for.
//
// What lasts between the redirect out and the callback (verifier, state, nonce) is in sessionStorage,
// read once and removed; the token itself is in sessionStorage only (never localStorage), and the
// callback's code and state leave the address bar before anything else runs.

import * as oauth from "oauth4webapi";

/** What GET /v1/sign-in tells the console of a tenant whose people sign in through a provider. */
export interface ProviderInfo {
  issuer: string;
  clientId: string;
  /** Which token the gateway expects as the bearer: the ID token when the client id is the audience. */
  token: "id_token" | "access_token";
  scope: string;
}

export interface SignInInfo {
  tenant: string;
  method: "provider" | "key";
  provider?: ProviderInfo;
}

/** A person signed in: the bearer the console sends, with the tenant it names and when it stops working. */
export interface PersonToken {
  token: string;
  tenant: string;
  issuer: string;
  /** The token's exp, in ms. */
  expiresAt: number;
}

/** Where the provider sends the browser back: a page of the console's own static assets (web/build.ts). */
const CALLBACK_PATH = "/callback";
const PENDING = "acp-gateway-console-signin";

interface Pending {
  tenant: string;
  agent: string;
  provider: ProviderInfo;
  redirectUri: string;
  verifier: string;
  state: string;
  nonce: string;
}

/** A sign-in that did not finish, with what to tell the person. */
export class SignInError extends Error {}

/** Plain http is for a provider on this machine only (the tests, local development), as browsers treat loopback. */
function httpAllowed(url: URL): boolean {
  return url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
}

function requestOptions(issuer: URL) {
  return { [oauth.allowInsecureRequests]: httpAllowed(issuer) };
}

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  if (url.protocol !== "https:" && !httpAllowed(url)) throw new SignInError(`The provider ${issuer} is not an https URL.`);
  try {
    return await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, requestOptions(url)));
  } catch {
    throw new SignInError(`The provider ${url.host} could not be reached or did not describe itself (.well-known/openid-configuration).`);
  }
}

/** Starts the flow: remembers the verifier, state and nonce in this tab, and returns the provider's authorization URL. */
export async function startSignIn(tenant: string, agent: string, provider: ProviderInfo): Promise<string> {
  const as = await discover(provider.issuer);
  if (!as.authorization_endpoint) throw new SignInError(`The provider ${provider.issuer} has no authorization endpoint.`);
  const pending: Pending = {
    tenant,
    agent,
    provider,
    redirectUri: `${location.origin}${CALLBACK_PATH}`,
    verifier: oauth.generateRandomCodeVerifier(),
    state: oauth.generateRandomState(),
    nonce: oauth.generateRandomNonce(),
  };
  const url = new URL(as.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", provider.clientId);
  url.searchParams.set("redirect_uri", pending.redirectUri);
  url.searchParams.set("scope", provider.scope);
  url.searchParams.set("state", pending.state);
  url.searchParams.set("nonce", pending.nonce);
  url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(pending.verifier));
  url.searchParams.set("code_challenge_method", "S256");
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  return url.href;
}

/**
 * When this page is the provider sending the browser back: its answer (code, state or error), taken
 * out of the address bar at once, before anything renders; otherwise null.
 */
export function takeCallback(): URLSearchParams | null {
  if (location.pathname !== CALLBACK_PATH) return null;
  const params = new URLSearchParams(location.search);
  history.replaceState(null, "", "/");
  return params;
}

/**
 * The callback: checks the state against the one this tab started with (once: the pending sign-in is
 * removed whatever follows), exchanges the code with the verifier, and checks the ID token's nonce.
 */
export async function finishSignIn(params: URLSearchParams): Promise<PersonToken & { agent: string }> {
  const raw = sessionStorage.getItem(PENDING);
  sessionStorage.removeItem(PENDING);
  if (!raw) throw new SignInError("This tab did not start that sign-in, or it has already finished: sign in again.");
  // SAFETY: written by startSignIn in this tab, from this code.
  const pending = JSON.parse(raw) as Pending;
  if (params.get("state") !== pending.state) {
    throw new SignInError(
      "The sign-in response does not belong to the sign-in this tab started (its state differs): nothing was accepted. Sign in again.",
    );
  }
  const as = await discover(pending.provider.issuer);
  const client: oauth.Client = { client_id: pending.provider.clientId };
  const issuerUrl = new URL(pending.provider.issuer);
  let result: oauth.TokenEndpointResponse;
  try {
    const callback = oauth.validateAuthResponse(as, client, params, pending.state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      callback,
      pending.redirectUri,
      pending.verifier,
      requestOptions(issuerUrl),
    );
    result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: pending.nonce, requireIdToken: true });
  } catch (error) {
    throw new SignInError(refusal(error, issuerUrl.host));
  }
  const claims = oauth.getValidatedIdTokenClaims(result);
  if (!claims) throw new SignInError(`${issuerUrl.host} sent no ID token.`);
  const bearer = pending.provider.token === "id_token" ? result.id_token : result.access_token;
  if (!bearer) throw new SignInError(`${issuerUrl.host} sent no ${pending.provider.token}.`);
  const expiresAt =
    pending.provider.token === "id_token" ? claims.exp * 1000 : Date.now() + (result.expires_in ?? claims.exp - Date.now() / 1000) * 1000;
  return { token: bearer, tenant: pending.tenant, issuer: pending.provider.issuer, expiresAt, agent: pending.agent };
}

/** What went wrong, from oauth4webapi's typed errors (class, code, the claim named), never its message text. */
function refusal(error: unknown, host: string): string {
  if (error instanceof oauth.AuthorizationResponseError) return `${host} did not sign you in (${error.error}).`;
  if (error instanceof oauth.ResponseBodyError) return `${host} refused to exchange the sign-in code (${error.error}). Sign in again.`;
  if (error instanceof oauth.OperationProcessingError && error.code === oauth.JWT_CLAIM_COMPARISON) {
    const claim = typeof error.cause === "object" && error.cause !== null && "claim" in error.cause ? String(error.cause.claim) : "";
    if (claim === "nonce")
      return `The ID token from ${host} was not issued for this sign-in (its nonce differs): nothing was accepted. Sign in again.`;
    return `The ID token from ${host} has an unexpected "${claim}" claim: nothing was accepted.`;
  }
  if (error instanceof oauth.OperationProcessingError && error.code === oauth.JWT_TIMESTAMP_CHECK)
    return `The ID token from ${host} has expired or is not valid yet (check this computer's clock).`;
  if (error instanceof TypeError) return `${host} could not be reached to finish the sign-in.`;
  return `The sign-in with ${host} could not be finished.`;
}
