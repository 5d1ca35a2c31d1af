// Where a webhook may be delivered. A notification target's URL is given by a tenant admin, and the
// gateway then POSTs to it from inside the deployment: a URL naming this machine, the private network
// or the cloud's metadata address would make the gateway a way into what only it can reach. So a
// webhook URL is https, carries no credentials, and its host is not an IP literal in a loopback,
// private, link-local, unspecified, shared, multicast or reserved range, nor `localhost`. A deployment
// that delivers to such hosts on purpose (local development, the tests) sets WEBHOOK_ALLOW_PRIVATE=1,
// which also allows plain http to them (and only to them).
//
// The host is read after the WHATWG URL parser (`new URL`) has canonicalised it, so every spelling of
// an IPv4 address (`0x7f.1`, `2130706433`, `127.1`, `0177.0.0.1`) is its dotted quad, and an IPv6
// address is its compressed form in brackets (`[::ffff:7f00:1]`). A DNS name is not resolved here:
// a Worker cannot learn the address its fetch will reach, so a name that resolves to a private
// address is not caught (docs/decisions/0021-authority-and-bounds.md).

export interface WebhookUrlPolicy {
  /** WEBHOOK_ALLOW_PRIVATE=1: loopback, private and link-local hosts are allowed, over https or plain http. */
  allowPrivate: boolean;
}

export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Whether the deployment variable allows private webhook hosts ("1" or "true"; anything else: no). */
export function allowPrivateWebhooks(value: string | undefined): boolean {
  return value === "1" || value === "true";
}

export function checkWebhookUrl(text: string, policy: WebhookUrlPolicy): WebhookUrlCheck {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "it is not a URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return { ok: false, reason: `only https URLs are delivered to, not ${url.protocol}` };
  if (url.username || url.password)
    return { ok: false, reason: "a webhook URL carries no user name or password; sign with the target's secret" };
  const range = nonPublicRange(url.hostname);
  if (range && !policy.allowPrivate) {
    return {
      ok: false,
      reason: `its host ${url.hostname} is ${range}; webhooks go only to public hosts (a deployment that needs otherwise sets WEBHOOK_ALLOW_PRIVATE=1)`,
    };
  }
  if (url.protocol === "http:" && !(policy.allowPrivate && range)) {
    return {
      ok: false,
      reason:
        "plain http is not delivered to (the payload and its approval link would travel in clear); use an https URL" +
        (policy.allowPrivate ? " (plain http goes only to loopback and private hosts)" : ""),
    };
  }
  return { ok: true, url };
}

/** The kind of non-public address a (canonical) URL host names, or undefined for a public one or a DNS name. */
export function nonPublicRange(hostname: string): string | undefined {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return "loopback (localhost)";
  if (host.startsWith("[") && host.endsWith("]")) {
    const words = ipv6Words(host.slice(1, -1));
    return words ? ipv6Range(words) : "an IPv6 address that cannot be read";
  }
  const v4 = ipv4Octets(host);
  return v4 ? ipv4Range(v4) : undefined;
}

function ipv4Octets(host: string): number[] | undefined {
  const parts = host.split(".");
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return undefined;
  const octets = parts.map(Number);
  return octets.every((o) => o <= 255) ? octets : undefined;
}

function ipv4Range([a = 0, b = 0, c = 0]: number[]): string | undefined {
  if (a === 0) return "unspecified (0.0.0.0/8)";
  if (a === 127) return "loopback (127.0.0.0/8)";
  if (a === 10) return "private (10.0.0.0/8)";
  if (a === 172 && b >= 16 && b <= 31) return "private (172.16.0.0/12)";
  if (a === 192 && b === 168) return "private (192.168.0.0/16)";
  if (a === 169 && b === 254) return "link-local (169.254.0.0/16, the cloud metadata address among them)";
  if (a === 100 && b >= 64 && b <= 127) return "shared address space (100.64.0.0/10)";
  if (a === 192 && b === 0 && c === 0) return "IETF protocol assignments (192.0.0.0/24)";
  if (a === 198 && (b === 18 || b === 19)) return "benchmarking (198.18.0.0/15)";
  if (a >= 224) return "multicast or reserved (224.0.0.0/3)";
  return undefined;
}

/** The eight 16-bit words of an IPv6 address as the URL parser writes it (compressed, maybe with a dotted tail). */
function ipv6Words(text: string): number[] | undefined {
  let tail: number[] = [];
  let body = text;
  const dotted = /:(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const octets = ipv4Octets(dotted[1]);
    if (!octets) return undefined;
    tail = [((octets[0] ?? 0) << 8) | (octets[1] ?? 0), ((octets[2] ?? 0) << 8) | (octets[3] ?? 0)];
    body = text.slice(0, dotted.index) + (text.slice(0, dotted.index).endsWith(":") ? ":" : "");
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const read = (part: string | undefined) => (part ? part.split(":").map((w) => (/^[0-9a-f]{1,4}$/.test(w) ? parseInt(w, 16) : NaN)) : []);
  const head = read(halves[0]);
  const rest = halves.length === 2 ? read(halves[1]) : [];
  const given = head.length + rest.length + tail.length;
  if (head.some(Number.isNaN) || rest.some(Number.isNaN)) return undefined;
  if (halves.length === 1 ? given !== 8 : given > 7) return undefined;
  return [...head, ...Array<number>(8 - given).fill(0), ...rest, ...tail];
}

function ipv6Range(w: number[]): string | undefined {
  const [w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0, w6 = 0, w7 = 0] = w;
  const embedded = (hi: number, lo: number) => ipv4Range([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  const zeroUpTo5 = w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0 && w4 === 0;
  if (zeroUpTo5 && w5 === 0 && w6 === 0 && w7 === 0) return "unspecified (::)";
  if (zeroUpTo5 && w5 === 0 && w6 === 0 && w7 === 1) return "loopback (::1)";
  // An IPv4 address inside an IPv6 one (mapped ::ffff:0:0/96, compatible ::/96, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged as that address.
  if (zeroUpTo5 && (w5 === 0xffff || w5 === 0)) {
    const inner = embedded(w6, w7);
    return inner ? `an IPv4-in-IPv6 address that is ${inner}` : undefined;
  }
  if (w0 === 0x64 && w1 === 0xff9b && w2 === 0 && w3 === 0 && w4 === 0 && w5 === 0) {
    const inner = embedded(w6, w7);
    return inner ? `a NAT64 address that is ${inner}` : undefined;
  }
  if (w0 === 0x2002) {
    const inner = embedded(w1, w2);
    return inner ? `a 6to4 address that is ${inner}` : undefined;
  }
  if ((w0 & 0xfe00) === 0xfc00) return "unique local (fc00::/7)";
  if ((w0 & 0xffc0) === 0xfe80) return "link-local (fe80::/10)";
  if ((w0 & 0xffc0) === 0xfec0) return "site-local (fec0::/10)";
  if ((w0 & 0xff00) === 0xff00) return "multicast (ff00::/8)";
  return undefined;
}
