// Which webhook URLs the gateway delivers to (protocol/webhook-url.ts): https to public hosts only,
// unless the deployment allows private ones; every spelling of a non-public IP literal is caught,
// because the WHATWG URL parser canonicalises the host before it is judged.

import { describe, expect, it } from "vitest";
import { allowPrivateWebhooks, checkWebhookUrl, nonPublicRange } from "../../protocol/webhook-url";

const strict = { allowPrivate: false };
const allowed = (url: string) => checkWebhookUrl(url, strict).ok;

describe("webhook URLs", () => {
  it("delivers to https on public hosts and public IP literals", () => {
    for (const url of [
      "https://hooks.example.com/acp",
      "https://hooks.example.com:8443/a?b=c",
      "https://8.8.8.8/",
      "https://[2606:4700:4700::1111]/",
      "https://172.32.0.1/",
      "https://100.128.0.1/",
      "https://[::ffff:8.8.8.8]/",
    ]) {
      expect(allowed(url), url).toBe(true);
    }
  });

  it("refuses loopback in every IPv4 spelling the URL parser accepts", () => {
    for (const url of [
      "https://127.0.0.1/",
      "https://127.1/",
      "https://0x7f.1/",
      "https://0x7f000001/",
      "https://2130706433/",
      "https://0177.0.0.1/",
      "https://127.0.0.1./",
      "https://127.255.255.254/",
      "https://localhost/",
      "https://LOCALHOST./",
      "https://api.localhost/",
    ]) {
      const check = checkWebhookUrl(url, strict);
      expect(check.ok, url).toBe(false);
      if (!check.ok) expect(check.reason, url).toMatch(/loopback/);
    }
  });

  it("refuses IPv6 loopback, unspecified, mapped and embedded forms", () => {
    for (const url of [
      "https://[::1]/",
      "https://[0:0:0:0:0:0:0:1]/",
      "https://[::]/",
      "https://[::ffff:127.0.0.1]/",
      "https://[::ffff:7f00:1]/",
      "https://[::ffff:10.1.2.3]/",
      "https://[::ffff:169.254.169.254]/",
      "https://[::127.0.0.1]/",
      "https://[64:ff9b::a9fe:a9fe]/",
      "https://[2002:c0a8:0101::1]/",
    ]) {
      expect(allowed(url), url).toBe(false);
    }
  });

  it("refuses private, link-local (the metadata address), unspecified, shared and multicast ranges", () => {
    const cases: [string, RegExp][] = [
      ["https://10.0.0.1/", /private \(10/],
      ["https://172.16.0.1/", /private \(172\.16/],
      ["https://172.31.255.255/", /private \(172\.16/],
      ["https://192.168.1.1/", /private \(192\.168/],
      ["https://169.254.169.254/latest/meta-data/", /link-local/],
      ["https://0.0.0.0/", /unspecified/],
      ["https://0/", /unspecified/],
      ["https://100.64.0.1/", /shared/],
      ["https://224.0.0.1/", /multicast/],
      ["https://255.255.255.255/", /multicast or reserved/],
      ["https://[fc00::1]/", /unique local/],
      ["https://[fd12:3456::1]/", /unique local/],
      ["https://[fe80::1]/", /link-local/],
      ["https://[febf::1]/", /link-local/],
      ["https://[ff02::1]/", /multicast/],
    ];
    for (const [url, reason] of cases) {
      const check = checkWebhookUrl(url, strict);
      expect(check.ok, url).toBe(false);
      if (!check.ok) {
        expect(check.reason, url).toMatch(reason);
        expect(check.reason, url).toMatch(/WEBHOOK_ALLOW_PRIVATE=1/);
      }
    }
  });

  it("refuses other schemes, credentials and plain http, whatever the policy says of private hosts", () => {
    for (const url of ["ftp://hooks.example.com/", "file:///etc/passwd", "ws://hooks.example.com/", "javascript:alert(1)", "not a url"]) {
      expect(checkWebhookUrl(url, strict).ok, url).toBe(false);
      expect(checkWebhookUrl(url, { allowPrivate: true }).ok, url).toBe(false);
    }
    expect(checkWebhookUrl("https://user:pass@hooks.example.com/", { allowPrivate: true }).ok).toBe(false);
    for (const policy of [strict, { allowPrivate: true }]) {
      const http = checkWebhookUrl("http://hooks.example.com/", policy);
      expect(http).toMatchObject({ ok: false, reason: expect.stringMatching(/plain http .* use an https URL/) });
    }
    expect(checkWebhookUrl("http://127.0.0.1:8080/", strict).ok).toBe(false);
  });

  it("WEBHOOK_ALLOW_PRIVATE=1 allows loopback and private hosts, over plain http too (local development, the tests)", () => {
    expect(allowPrivateWebhooks("1")).toBe(true);
    expect(allowPrivateWebhooks(undefined)).toBe(false);
    expect(allowPrivateWebhooks("0")).toBe(false);
    expect(allowPrivateWebhooks("")).toBe(false);
    for (const url of ["http://127.0.0.1:8080/hook", "http://localhost/", "https://10.0.0.1/", "http://[::1]:9/"]) {
      expect(checkWebhookUrl(url, { allowPrivate: true }).ok, url).toBe(true);
    }
  });

  it("judges hosts as the URL parser writes them", () => {
    expect(new URL("http://0x7f.1/").hostname).toBe("127.0.0.1");
    expect(new URL("http://[::ffff:127.0.0.1]/").hostname).toBe("[::ffff:7f00:1]");
    expect(nonPublicRange("[::ffff:7f00:1]")).toMatch(/loopback/);
    expect(nonPublicRange("hooks.example.com")).toBeUndefined();
    // A DNS name is not resolved: one that points at a private address is not caught here.
    expect(nonPublicRange("127.0.0.1.nip.io")).toBeUndefined();
  });
});
