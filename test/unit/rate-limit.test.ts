import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MessageRate, TokenBucket } from "../../protocol/rate-limit";

describe("token bucket", () => {
  it("admits a full burst, then one message per 1/rate seconds", () => {
    const bucket = new TokenBucket(10, 20, 0);
    for (let i = 0; i < 20; i++) expect(bucket.take(0)).toBe(true);
    expect(bucket.take(0)).toBe(false);
    expect(bucket.take(99)).toBe(false);
    expect(bucket.take(100)).toBe(true);
  });

  it("never admits more than capacity + rate × elapsed, whatever the arrival times", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 500 }), { maxLength: 300 }), (gaps) => {
        const bucket = new TokenBucket(5, 10, 0);
        let now = 0;
        let admitted = 0;
        for (const gap of gaps) {
          now += gap;
          if (bucket.take(now)) admitted++;
        }
        return admitted <= 10 + Math.floor((now / 1000) * 5) + 1;
      }),
    );
  });
});

describe("message rate of a connection", () => {
  it("refuses what is over the rate, and closes a connection that keeps flooding", () => {
    const rate = new MessageRate(10, 0);
    const verdicts = Array.from({ length: 200 }, () => rate.admit(0));
    expect(verdicts.slice(0, 20).every((v) => v === "ok")).toBe(true);
    expect(verdicts.slice(20, 70).every((v) => v === "refuse")).toBe(true);
    expect(verdicts[70]).toBe("close");
  });

  it("never closes a connection that stays within its rate, even in bursts", () => {
    const rate = new MessageRate(10, 0);
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 10; i++) expect(rate.admit(second * 1000)).toBe("ok");
    }
  });

  it("a short burst over the rate is refused, not closed", () => {
    const rate = new MessageRate(10, 0);
    const verdicts = Array.from({ length: 40 }, () => rate.admit(0));
    expect(verdicts.filter((v) => v === "refuse")).toHaveLength(20);
    expect(verdicts).not.toContain("close");
  });
});
