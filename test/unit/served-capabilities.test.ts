// The capabilities clients see are only those the gateway serves (protocol/served-capabilities.ts):
// a closed world, so what an agent advertises beyond them (ACP `providers`, a session fork) never
// reaches a client whose every call of it would fail; Claude Code's promptQueueing is served only as the
// session acts on it (decision 0067).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { servedCapabilities } from "../../protocol/served-capabilities";
import { advertisesPromptQueueing } from "../../protocol/prompt-queueing";
import { isObject } from "../../protocol/jsonrpc";

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
      // The gateway relays a prompt while a turn runs to an agent that queues them (decision 0067): served as sent.
      _meta: { claudeCode: { promptQueueing: true } },
    });
  });

  it("promptQueueing is served only where claude-agent-acp puts it, as `true`; at _meta's top or under another key it is left out", () => {
    expect(servedCapabilities({ _meta: { promptQueueing: false } })).toEqual({ _meta: {} });
    expect(servedCapabilities({ _meta: { promptQueueing: true, claudeCode: { promptQueueing: true, x: 1 }, other: 2 } })).toEqual({
      _meta: { claudeCode: { promptQueueing: true, x: 1 }, other: 2 },
    });
    // The gateway does not relay a prompt while a turn runs to these, so none is served.
    expect(servedCapabilities({ _meta: { qoder: { promptQueueing: true } } })).toEqual({ _meta: { qoder: {} } });
    expect(servedCapabilities({ _meta: { promptQueueing: true } })).toEqual({ _meta: {} });
    for (const value of ["true", 1, {}, false, null])
      expect(servedCapabilities({ _meta: { claudeCode: { promptQueueing: value, x: 1 } } })).toEqual({ _meta: { claudeCode: { x: 1 } } });
  });

  it("anything that is not an object of capabilities is none", () => {
    for (const junk of [null, undefined, 7, "x", [], [{ providers: {} }]]) expect(servedCapabilities(junk)).toEqual({});
    expect(servedCapabilities({ promptCapabilities: true, sessionCapabilities: [] })).toEqual({});
  });

  it("over any advertisement: only served names come out, and every served field comes out as the agent sent it", () => {
    const key = fc.oneof(
      fc.constantFrom(...SERVED_TOP, "providers", "fork", "image", "list", "promptQueueing", "claudeCode", "__proto__"),
      fc.string({ maxLength: 8 }),
    );
    const value = fc.oneof(fc.boolean(), fc.constant({}), fc.dictionary(key, fc.oneof(fc.boolean(), fc.constant({})), { maxKeys: 5 }));
    fc.assert(
      fc.property(fc.dictionary(key, value, { maxKeys: 8 }), (advertised) => {
        const out = servedCapabilities(advertised);
        for (const name of Object.keys(out)) expect(SERVED_TOP).toContain(name);
        expect(out).not.toHaveProperty("providers");
        for (const name of ["loadSession"]) if (name in advertised) expect(out[name]).toEqual(advertised[name]);
        // promptQueueing comes out only as Claude Code's `true`, exactly when the session relays prompts while a turn runs.
        const meta = (out._meta ?? {}) as Record<string, Record<string, unknown> | undefined>;
        const { promptQueueing: served, ...rest } = isObject(meta.claudeCode) ? meta.claudeCode : {};
        expect(served === true).toBe(advertisesPromptQueueing(advertised));
        expect(JSON.stringify({ ...meta, claudeCode: rest })).not.toContain('"promptQueueing"');
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
