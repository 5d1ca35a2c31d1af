// Per-tenant webhook bounds (protocol/tenant-limits.ts, decision 0061): how many targets one waiting
// request is sent to, and which requests may send this minute. Property tests over generated batches,
// limits and times.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  HARD_LIMITS,
  type WebhookWindow,
  admitWebhooks,
  limitsOf,
  targetsPerRequest,
  webhookPostsPerMinute,
} from "../../protocol/tenant-limits";

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

describe("webhook fan-out per request", () => {
  it("is the tenant's limit (default 10), never above 50 nor above a minute's posts", () => {
    expect(targetsPerRequest(limitsOf({}))).toBe(10);
    expect(targetsPerRequest(limitsOf({ notificationTargetsPerRequest: 3 }))).toBe(3);
    expect(targetsPerRequest(limitsOf({ notificationTargetsPerRequest: 500 }))).toBe(HARD_LIMITS.notificationTargetsPerRequest);
    expect(targetsPerRequest(limitsOf({ notificationTargetsPerRequest: 20, webhookPostsPerMinute: 4 }))).toBe(4);
    expect(webhookPostsPerMinute(limitsOf({ webhookPostsPerMinute: 10 ** 9 }))).toBe(HARD_LIMITS.webhookPostsPerMinute);
  });
});

describe("webhook posts per tenant and minute", () => {
  it("never admits more than a minute's posts in a minute, admits in order, and drops nothing (every request is admitted in some later minute)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.array(fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 6 }), { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 0, max: 10 ** 12 }),
        fc.array(fc.integer({ min: 0, max: 90_000 }), { minLength: 10, maxLength: 10 }),
        (perMinute, batches, start, gaps) => {
          let window: WebhookWindow = { minute: 0, used: 0 };
          let now = start;
          const perMinuteUsed = new Map<number, number>();
          let queue: number[] = [];
          batches.forEach((batch, i) => {
            queue = [...queue, ...batch.map((n) => Math.min(n, perMinute))]; // the session never asks more than a minute's posts for one request
            const got = admitWebhooks(window, queue, perMinute, now);
            expect(got.admitted).toBeLessThanOrEqual(queue.length);
            const minute = Math.floor(now / 60_000);
            const used = queue.slice(0, got.admitted).reduce((a, b) => a + b, 0);
            perMinuteUsed.set(minute, (perMinuteUsed.get(minute) ?? 0) + used);
            expect(perMinuteUsed.get(minute)).toBeLessThanOrEqual(perMinute);
            expect(got.retryAt).toBe((minute + 1) * 60_000);
            queue = queue.slice(got.admitted);
            window = got.window;
            now += gaps[i] ?? 0;
          });
          // Time passes: what waits is admitted minute after minute, none left behind.
          const left = queue.length;
          for (let minutes = 0; queue.length > 0; minutes++) {
            expect(minutes).toBeLessThan(left);
            now = (Math.floor(now / 60_000) + 1) * 60_000;
            const got = admitWebhooks(window, queue, perMinute, now);
            expect(got.admitted).toBeGreaterThan(0);
            queue = queue.slice(got.admitted);
            window = got.window;
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("a request larger than a whole minute is sent alone in an empty minute, never starved", () => {
    expect(admitWebhooks({ minute: 0, used: 0 }, [80, 1], 50, 0)).toMatchObject({ admitted: 1, window: { minute: 0, used: 80 } });
    expect(admitWebhooks({ minute: 0, used: 1 }, [80], 50, 0).admitted).toBe(0);
  });
});
