// The capabilities clients see are only those the gateway serves (protocol/served-capabilities.ts):
// a closed world, so what an agent advertises beyond them (ACP `providers`, a session fork) never
// reaches a client whose every call of it would fail.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { servedCapabilities } from "../../protocol/served-capabilities";

const SERVED_TOP = ["loadSession", "promptCapabilities", "mcpCapabilities", "sessionCapabilities", "auth", "_meta"];

describe("the capabilities clients see", () => {
  it("drops ACP providers (providers/list, /set, /disable are answered -32601) and a session fork, keeps what the gateway relays", () => {
    const advertised = {
      loadSession: true,
      promptCapabilities: { image: true, embeddedContext: true, futureMedia: true },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { list: {}, resume: {}, close: {}, fork: {}, additionalDirectories: {} },
      auth: { logout: {} },
      providers: {},
      _meta: { claudeCode: { promptQueueing: true } },
    };
    expect(servedCapabilities(advertised)).toEqual({
      loadSession: true,
      promptCapabilities: { image: true, embeddedContext: true },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { list: {}, resume: {}, close: {}, additionalDirectories: {} },
      auth: { logout: {} },
      // The gateway refuses a prompt while a turn runs: the agent's promptQueueing is not what clients get.
      _meta: { claudeCode: {} },
    });
  });

  it("promptQueueing is left out of _meta at its top as under a vendor's key (a counterexample the property found)", () => {
    expect(servedCapabilities({ _meta: { promptQueueing: false } })).toEqual({ _meta: {} });
    expect(servedCapabilities({ _meta: { promptQueueing: true, claudeCode: { promptQueueing: true, x: 1 }, other: 2 } })).toEqual({
      _meta: { claudeCode: { x: 1 }, other: 2 },
    });
  });

  it("anything that is not an object of capabilities is none", () => {
    for (const junk of [null, undefined, 7, "x", [], [{ providers: {} }]]) expect(servedCapabilities(junk)).toEqual({});
    expect(servedCapabilities({ promptCapabilities: true, sessionCapabilities: [] })).toEqual({});
  });

  it("over any advertisement: only served names come out, and every served field comes out as the agent sent it", () => {
    const key = fc.oneof(
      fc.constantFrom(...SERVED_TOP, "providers", "fork", "image", "list", "promptQueueing", "__proto__"),
      fc.string({ maxLength: 8 }),
    );
    const value = fc.oneof(fc.boolean(), fc.constant({}), fc.dictionary(key, fc.oneof(fc.boolean(), fc.constant({})), { maxKeys: 5 }));
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 8 }), (advertised) => {
        const out = servedCapabilities(advertised);
        for (const name of Object.keys(out)) expect(SERVED_TOP).toContain(name);
        expect(out).not.toHaveProperty("providers");
        for (const name of ["loadSession"]) if (name in advertised) expect(out[name]).toEqual(advertised[name]);
        expect(JSON.stringify(out._meta ?? {})).not.toContain('"promptQueueing"');
        if (advertised._meta !== undefined && !JSON.stringify(advertised._meta).includes('"promptQueueing"'))
          expect(out._meta).toEqual(advertised._meta);
        const session = out.sessionCapabilities as Record<string, unknown> | undefined;
        if (session)
          expect(
            Object.keys(session).every((f) => ["list", "resume", "close", "delete", "additionalDirectories", "_meta"].includes(f)),
          ).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
