import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

describe("the web console", () => {
  it("is served at / with its script, beside the API", async () => {
    const page = await SELF.fetch("http://gateway.test/");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script type="module" src="/console.js">');
    const script = await SELF.fetch("http://gateway.test/console.js");
    const text = await script.text();
    expect(text).toContain("/v1/tickets");
    expect(text).not.toContain("acp.bearer.");
    expect((await SELF.fetch("http://gateway.test/health")).status).toBe(200);
  });
});
