// A test identity provider on loopback (decision 0025): its own signing keys made with jose, its key
// set (JWKS) served over http at /jwks.json and at Cloudflare Access's /cdn-cgi/access/certs, and key
// rotation. It signs tokens for people; every fetch of its keys is recorded, so a test can tell when
// the gateway refetched them.
//
// For the console's sign-in (decision 0030) it is also what a real OpenID Connect provider offers a
// public client: a discovery document, /authorize (authorization code + PKCE S256; it consents for its
// one configured test person and redirects back with code and state, after checking the client id and
// the exact redirect URI) and /token (checks the code verifier against the challenge, answers an ID
// token signed with its keys with the nonce echoed, and an access token), with CORS as providers send
// it. `misbehaveOnce` makes the next authorization answer a wrong state or nonce, as an attacker would.

import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import { createHash, randomBytes } from "node:crypto";
import { type CryptoKey, type JWK, SignJWT, exportJWK, generateKeyPair } from "jose";

interface SigningKey {
  kid: string;
  alg: "RS256" | "ES256";
  privateKey: CryptoKey;
  publicJwk: JWK;
}

async function newKey(alg: SigningKey["alg"]): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const kid = `kid-${crypto.randomUUID().slice(0, 8)}`;
  return { kid, alg, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

export interface TokenOptions {
  audience?: string;
  /** Seconds from now; negative for a token that has expired. */
  expiresIn?: number;
  issuer?: string;
  /** Sign with this key instead of the current one (one the provider never published, or one rotated out). */
  key?: SigningKey;
  claims?: Record<string, unknown>;
}

/** A public client the provider knows: its id, the one redirect URI it may use, and the access token's audience. */
export interface OAuthClient {
  clientId: string;
  redirectUri: string;
  /** The access token's `aud` (default: the client id). */
  accessAudience?: string;
}

/** The person /authorize signs in without asking (the provider's consent is automatic in the tests). */
export interface TestPerson {
  subject: string;
  claims?: Record<string, unknown>;
  /** Lifetime of the tokens /token issues, in seconds (default 300). */
  expiresIn?: number;
}

interface PendingCode {
  clientId: string;
  redirectUri: string;
  challenge: string;
  nonce: string | null;
  person: TestPerson;
  expiresAt: number;
}

/** One request to /token, as the provider saw it: where it came from and how it ended. */
export interface TokenRequest {
  origin: string | null;
  status: number;
  error?: string;
}

export class IdentityProvider {
  private published: SigningKey[];
  /** When the gateway fetched the key set (ms), in order. */
  readonly fetches: number[] = [];
  private readonly clients = new Map<string, OAuthClient>();
  private readonly codes = new Map<string, PendingCode>();
  /** Who /authorize signs in; null: it answers access_denied. */
  person: TestPerson | null = null;
  /** The next authorization only: redirect with this state, or sign this nonce into the ID token. */
  misbehaveOnce: { state?: string; nonce?: string } | null = null;
  /** Every /token request, in order. */
  readonly tokenRequests: TokenRequest[] = [];

  private constructor(
    private readonly server: Server,
    readonly issuer: string,
    current: SigningKey,
  ) {
    this.published = [current];
  }

  static async start(): Promise<IdentityProvider> {
    const first = await newKey("RS256");
    const started: { provider?: IdentityProvider } = {};
    const server = createServer((request, response) => {
      const provider = started.provider;
      const path = new URL(request.url ?? "/", "http://provider").pathname;
      if (provider && (path === "/jwks.json" || path === "/cdn-cgi/access/certs")) {
        provider.fetches.push(Date.now());
        sendJson(response, 200, { keys: provider.published.map((k) => k.publicJwk) });
        return;
      }
      if (provider && request.method === "OPTIONS") {
        response.writeHead(204, {
          ...CORS,
          "Access-Control-Allow-Methods": "GET, POST",
          "Access-Control-Allow-Headers": "Content-Type, Accept",
        });
        response.end();
        return;
      }
      if (provider && path === "/.well-known/openid-configuration") return sendJson(response, 200, provider.discovery());
      if (provider && path === "/authorize" && request.method === "GET") return provider.authorize(request, response);
      if (provider && path === "/token" && request.method === "POST") {
        void provider.tokenEndpoint(request, response).catch(() => sendJson(response, 500, { error: "server_error" }));
        return;
      }
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (typeof address !== "object" || !address) throw new Error("the identity provider has no address");
    started.provider = new IdentityProvider(server, `http://127.0.0.1:${address.port}`, first);
    return started.provider;
  }

  get jwksUrl(): string {
    return `${this.issuer}/jwks.json`;
  }

  /** The key new tokens are signed with. */
  get current(): SigningKey {
    const key = this.published[this.published.length - 1];
    if (!key) throw new Error("the identity provider publishes no key");
    return key;
  }

  /** A key of the same kind that this provider never publishes. */
  static unpublishedKey(alg: SigningKey["alg"] = "RS256"): Promise<SigningKey> {
    return newKey(alg);
  }

  /** Publishes a new key (ES256, to cover a second algorithm) and drops every older one; returns the dropped. */
  async rotate(): Promise<SigningKey[]> {
    const old = this.published;
    this.published = [await newKey("ES256")];
    return old;
  }

  /** Lets a public client sign in: its id and the exact redirect URI /authorize accepts for it. */
  addClient(client: OAuthClient): void {
    this.clients.set(client.clientId, client);
  }

  private discovery() {
    return {
      issuer: this.issuer,
      authorization_endpoint: `${this.issuer}/authorize`,
      token_endpoint: `${this.issuer}/token`,
      jwks_uri: this.jwksUrl,
      response_types_supported: ["code"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["RS256", "ES256"],
      code_challenge_methods_supported: ["S256"],
      grant_types_supported: ["authorization_code"],
      token_endpoint_auth_methods_supported: ["none"],
      scopes_supported: ["openid", "profile", "email"],
    };
  }

  /**
   * The authorization endpoint: an unknown client or a redirect URI not registered for it is answered
   * here (400), never by a redirect; any other fault is redirected back as an OAuth error with the state.
   */
  private authorize(request: IncomingMessage, response: ServerResponse): void {
    const q = new URL(request.url ?? "/", this.issuer).searchParams;
    const client = this.clients.get(q.get("client_id") ?? "");
    if (!client) return sendText(response, 400, "unknown client_id");
    if (q.get("redirect_uri") !== client.redirectUri) return sendText(response, 400, "redirect_uri is not registered for this client");
    const back = new URL(client.redirectUri);
    const misbehave = this.misbehaveOnce;
    this.misbehaveOnce = null;
    const state = misbehave?.state ?? q.get("state");
    if (state !== null) back.searchParams.set("state", state);
    const fault =
      q.get("response_type") !== "code"
        ? "unsupported_response_type"
        : !(q.get("scope") ?? "").split(" ").includes("openid")
          ? "invalid_scope"
          : q.get("code_challenge_method") !== "S256" || !/^[A-Za-z0-9_-]{43}$/.test(q.get("code_challenge") ?? "")
            ? "invalid_request"
            : this.person === null
              ? "access_denied"
              : null;
    if (fault !== null || this.person === null) {
      back.searchParams.set("error", fault ?? "access_denied");
    } else {
      const code = randomBytes(24).toString("base64url");
      this.codes.set(code, {
        clientId: client.clientId,
        redirectUri: client.redirectUri,
        challenge: q.get("code_challenge") ?? "",
        nonce: misbehave?.nonce ?? q.get("nonce"),
        person: this.person,
        expiresAt: Date.now() + 60_000,
      });
      back.searchParams.set("code", code);
    }
    response.writeHead(302, { Location: back.href }).end();
  }

  /** The token endpoint for public clients: the code once, for its client and redirect URI, with the verifier of its challenge. */
  private async tokenEndpoint(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const form = new URLSearchParams(await bodyOf(request));
    const origin = request.headers.origin ?? null;
    const refuse = (error: string) => {
      this.tokenRequests.push({ origin, status: 400, error });
      sendJson(response, 400, { error });
    };
    const code = form.get("code") ?? "";
    const pending = this.codes.get(code);
    this.codes.delete(code);
    if (form.get("grant_type") !== "authorization_code") return refuse("unsupported_grant_type");
    if (!pending || pending.expiresAt < Date.now()) return refuse("invalid_grant");
    if (form.get("client_id") !== pending.clientId || form.get("redirect_uri") !== pending.redirectUri) return refuse("invalid_grant");
    const verifier = form.get("code_verifier") ?? "";
    if (createHash("sha256").update(verifier).digest("base64url") !== pending.challenge) return refuse("invalid_grant");
    const client = this.clients.get(pending.clientId);
    const expiresIn = pending.person.expiresIn ?? 300;
    const idToken = await this.token(pending.person.subject, {
      audience: pending.clientId,
      expiresIn,
      claims: { ...pending.person.claims, ...(pending.nonce !== null ? { nonce: pending.nonce } : {}) },
    });
    const accessToken = await this.token(pending.person.subject, {
      audience: client?.accessAudience ?? pending.clientId,
      expiresIn,
      claims: { ...pending.person.claims, scope: "openid profile email" },
    });
    this.tokenRequests.push({ origin, status: 200 });
    sendJson(response, 200, {
      access_token: accessToken,
      token_type: "Bearer",
      expires_in: expiresIn,
      id_token: idToken,
      scope: "openid profile email",
    });
  }

  /** A signed token for `subject`: the audience, lifetime and claims as given. */
  async token(subject: string, options: TokenOptions = {}): Promise<string> {
    const key = options.key ?? this.current;
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ ...options.claims })
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" })
      .setIssuer(options.issuer ?? this.issuer)
      .setSubject(subject)
      .setAudience(options.audience ?? "acp-gateway")
      .setIssuedAt(now - 5)
      .setExpirationTime(now + (options.expiresIn ?? 300))
      .sign(key.privateKey);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Providers let any origin read discovery, keys and the token endpoint: a public client in a page calls them. */
const CORS = { "Access-Control-Allow-Origin": "*" };

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "Content-Type": "application/json", "Cache-Control": "no-store", ...CORS });
  response.end(JSON.stringify(body));
}

function sendText(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { "Content-Type": "text/plain" }).end(text);
}

function bodyOf(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      text += chunk;
      if (text.length > 64 * 1024) request.destroy(new Error("body too large"));
    });
    request.on("end", () => resolve(text));
    request.on("error", reject);
  });
}
