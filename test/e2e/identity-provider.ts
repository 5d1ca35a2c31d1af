// A test identity provider on loopback (decision 0025): its own signing keys made with jose, its key
// set (JWKS) served over http at /jwks.json and at Cloudflare Access's /cdn-cgi/access/certs, and key
// rotation. It signs tokens for people; every fetch of its keys is recorded, so a test can tell when
// the gateway refetched them.

import { type Server, createServer } from "node:http";
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

export class IdentityProvider {
  private published: SigningKey[];
  /** When the gateway fetched the key set (ms), in order. */
  readonly fetches: number[] = [];

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
      if (provider && (request.url === "/jwks.json" || request.url === "/cdn-cgi/access/certs")) {
        provider.fetches.push(Date.now());
        response.writeHead(200, { "Content-Type": "application/json" });
        response.end(JSON.stringify({ keys: provider.published.map((k) => k.publicJwk) }));
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
