// web/src/reconnect.ts: the console retries what comes back by itself and stops on what does not,
// with delays that grow, stay bounded and are spread so many pages do not return at once.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CLOSE } from "../../core/close-codes";
import { reconnectDelayMs, reconnectVerdict } from "../../web/src/reconnect";

describe("the console's reconnect policy", () => {
  it("retries a restart, a drop and a lost network; stops on a revoked key, a takeover and a protocol error, saying why", () => {
    for (const code of [CLOSE.serviceRestart, CLOSE.tryAgainLater, 1006, CLOSE.normal, CLOSE.rateExceeded]) {
      expect(reconnectVerdict(code)).toEqual({ retry: true });
    }
    expect(reconnectVerdict(CLOSE.credentialsRevoked)).toMatchObject({ retry: false, why: expect.stringContaining("Sign in again") });
    expect(reconnectVerdict(CLOSE.replaced)).toMatchObject({ retry: false });
    expect(reconnectVerdict(CLOSE.protocolError)).toMatchObject({ retry: false });
  });

  it("waits between 375 ms and 37.5 s, never less for a later attempt's step", () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const delay = reconnectDelayMs(attempt, () => r);
        expect(delay).toBeGreaterThanOrEqual(375);
        expect(delay).toBeLessThanOrEqual(37_500);
        expect(reconnectDelayMs(attempt + 1, () => r)).toBeGreaterThanOrEqual(delay);
      }),
    );
  });
});
