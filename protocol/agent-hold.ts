// What the edge holds of an agent's frames while its message rate makes them wait
// (worker/agent-connection.ts; docs/decisions/0023-agent-bursts-held.md). An agent's rate slows it
// down; it never cuts its output: no agent retries a notification, so one refused is a hole in every
// client's transcript. Pure and synchronous: the edge passes in the tenant's share and the ways out;
// the model test (test/unit/agent-hold.test.ts) drives it with arrivals, clocks and shares.
//
// The guarantees, and how:
// - Order: frames pass (`pass`) in the order they arrived, one queue, oldest first; nothing passes a
//   frame that waits. A frame that costs nothing (an answer, a frame that did not parse) still waits
//   its turn, so an agent's answer to session/prompt never overtakes the updates sent before it.
// - Nothing dropped while open: every frame that arrives is passed, except a request (it has an id,
//   so it gets an answer) that arrives while the hold is over its byte bound: that one is `refuse`d.
//   Notifications and answers are held whatever the bound.
// - The rate: a frame that costs passes only with a token of the connection's own bucket (`rate` a
//   second, bursts of twice that) and the tenant's share (`share`); so the drain is never faster.
// - Close only on sustained overflow: the hold closes the connection (`close`) only when its bytes
//   have stayed over the bound for `sustainMs` without a break, or reach the ceiling (`ceilingBytes`,
//   what the edge can afford to keep in memory). Once closed, it holds, passes and refuses nothing.

import { TokenBucket } from "./rate-limit";

/** The tenant's share of its rate for the next frame: take it now, or wait (ms; undefined: until the shell wakes the hold). */
export type Share = { ok: true } | { ok: false; retryAfterMs: number | undefined };

export interface HoldIo<F> {
  /** The tenant's share for one frame (taken when ok). */
  share(): Share;
  /** A frame's turn: it goes on, in order. */
  pass(frame: F): void;
  /** A request that arrived while the hold was over its bound: answered with an error, never passed. */
  refuse(frame: F): void;
  /** The hold stayed over its bound too long (or reached its ceiling): the connection is to be closed. */
  close(why: HoldClose): void;
}

export interface HoldClose {
  /** "sustained": over the bound for `sustainMs`; "ceiling": the bytes reached the ceiling. */
  cause: "sustained" | "ceiling";
  heldBytes: number;
  /** The connection's rate when it closed (messages a second). */
  rate: number;
}

export interface HoldSettings {
  /** The connection's own rate, messages a second (bursts of twice that). */
  rate: number;
  /** Over this many bytes held, requests are refused and the overflow clock runs. */
  maxBytes: number;
  /** How long the hold may stay over `maxBytes` before the connection is closed. */
  sustainMs: number;
  /** At this many bytes held, the connection is closed at once. Above `maxBytes`. */
  ceilingBytes: number;
}

/** How one frame counts: its size, whether it costs a token, whether it may be refused (a request). */
export interface FrameCost {
  bytes: number;
  costs: boolean;
  refusable: boolean;
}

interface Held<F> {
  frame: F;
  bytes: number;
  costs: boolean;
}

/** What the shell does next: wake the hold in `ms`, wait for the tenant's lease, or nothing (empty, or closed). */
export type Wake = { in: number } | "lease" | "idle" | "closed";

export class AgentHold<F> {
  private readonly queue: Held<F>[] = [];
  private head = 0;
  private bytes = 0;
  private readonly bucket: TokenBucket;
  private rate: number;
  /** When the bytes held went over the bound (and have stayed over since). */
  private overSince: number | undefined;
  private closed = false;

  constructor(
    private readonly settings: HoldSettings,
    private readonly io: HoldIo<F>,
    now: number,
  ) {
    if (!(settings.rate > 0) || !(settings.maxBytes > 0) || !(settings.ceilingBytes > settings.maxBytes) || !(settings.sustainMs >= 0))
      throw new RangeError(`agent hold: bad settings ${JSON.stringify(settings)}`);
    this.rate = settings.rate;
    this.bucket = new TokenBucket(settings.rate, 2 * settings.rate, now);
  }

  /** Bytes held now. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Frames held now. */
  get held(): number {
    return this.queue.length - this.head;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The connection's own rate, messages a second. */
  get currentRate(): number {
    return this.rate;
  }

  /** A new own rate (the edge scales it with the sessions the connection hosts), from `now` on. */
  setRate(rate: number, now: number): void {
    if (!(rate > 0) || rate === this.rate) return;
    this.rate = rate;
    this.bucket.retune(rate, 2 * rate, now);
  }

  /** A frame from the agent: passed now if nothing waits and the rates allow, else held (or refused, or closing). */
  arrive(frame: F, cost: FrameCost, now: number): Wake {
    if (this.closed) return "closed";
    if (cost.refusable && this.bytes + cost.bytes > this.settings.maxBytes) {
      this.io.refuse(frame);
      return this.drain(now);
    }
    this.queue.push({ frame, bytes: cost.bytes, costs: cost.costs });
    this.bytes += cost.bytes;
    return this.drain(now);
  }

  /** Passes what the rates allow now, in order; says when to come back. */
  drain(now: number): Wake {
    if (this.closed) return "closed";
    let wake: Wake = "idle";
    while (this.head < this.queue.length) {
      const next = this.queue[this.head] as Held<F>;
      if (next.costs) {
        const ms = this.bucket.msUntilTokenAt(now);
        if (ms > 0) {
          wake = { in: ms };
          break;
        }
        const share = this.io.share();
        if (!share.ok) {
          wake = share.retryAfterMs === undefined ? "lease" : { in: Math.max(1, share.retryAfterMs) };
          break;
        }
        this.bucket.take(now);
      }
      this.head++;
      this.bytes -= next.bytes;
      this.io.pass(next.frame);
      if (this.closed) return "closed"; // passing it closed the connection
    }
    this.compact();
    return this.checkOverflow(now) ? "closed" : wake;
  }

  /** Ends the hold (the connection closed): nothing more is passed; what was held is let go. */
  end(): void {
    this.closed = true;
    this.queue.length = 0;
    this.head = 0;
    this.bytes = 0;
  }

  private checkOverflow(now: number): boolean {
    if (this.bytes <= this.settings.maxBytes) {
      this.overSince = undefined;
      return false;
    }
    this.overSince ??= now;
    const cause =
      this.bytes >= this.settings.ceilingBytes ? "ceiling" : now - this.overSince >= this.settings.sustainMs ? "sustained" : undefined;
    if (!cause) return false;
    const why: HoldClose = { cause, heldBytes: this.bytes, rate: this.rate };
    this.end();
    this.io.close(why);
    return true;
  }

  /** Drops the passed entries off the front once they are most of the array (amortised O(1) a frame). */
  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }
}

/**
 * The sessions an agent connection hosts, for scaling its own rate (the edge multiplies the tenant's
 * per-connection rate by `note`'s answer). A session counts once the AgentObject named it to the edge
 * (`vouched`: a grant, a request of it), so an agent cannot raise its rate by naming sessions it does
 * not host; the agent's own frames of a counted session keep it counted. One not heard of for
 * `windowMs` stops counting. The scale is at least 1 and at most `maxScale`.
 */
export class HostedSessions {
  private readonly seen = new Map<string, number>();
  private countedAt = -Infinity;

  constructor(
    private readonly windowMs: number,
    private readonly maxScale: number,
  ) {}

  /** Heard of a session: the scale, when it may have changed (a new session, or a tenth of the window since the last count). */
  note(sessionId: string, vouched: boolean, now: number): number | undefined {
    const known = this.seen.has(sessionId);
    if (!vouched && !known) return undefined;
    this.seen.set(sessionId, now);
    if (known && now - this.countedAt < this.windowMs / 10) return undefined;
    this.countedAt = now;
    for (const [id, at] of this.seen) if (now - at > this.windowMs) this.seen.delete(id);
    return Math.min(this.maxScale, Math.max(1, this.seen.size));
  }
}

/** A frame's size in UTF-8 bytes, without encoding it. */
export function utf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 2; // a surrogate pair: 4 bytes for 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}
