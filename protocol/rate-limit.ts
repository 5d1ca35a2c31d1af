// Message-rate limits of one WebSocket connection: a token bucket admits `rate` messages a second
// with bursts of twice that; what it refuses is answered with an error. A second bucket counts the
// refusals: a connection that keeps sending well over its rate (refusals faster than half the rate,
// beyond five seconds' worth) is closed, since answering each message with an error would let a
// runaway peer keep the connection (and its object) busy for ever.

export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly capacity: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.at = now;
  }

  take(now: number): boolean {
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.at) / 1000) * this.ratePerSecond);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export type RateVerdict = "ok" | "refuse" | "close";

export class MessageRate {
  private readonly messages: TokenBucket;
  private readonly strikes: TokenBucket;

  constructor(
    readonly ratePerSecond: number,
    now: number,
  ) {
    this.messages = new TokenBucket(ratePerSecond, 2 * ratePerSecond, now);
    this.strikes = new TokenBucket(ratePerSecond / 2, 5 * ratePerSecond, now);
  }

  admit(now: number): RateVerdict {
    if (this.messages.take(now)) return "ok";
    return this.strikes.take(now) ? "refuse" : "close";
  }
}

/** Close code for a connection that kept sending over its message rate (4000–4999 are the application's). */
export const CLOSE_RATE_EXCEEDED = 4429;
