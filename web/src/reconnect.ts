// When the console's connection to the gateway closes, whether to open it again and when: a gateway
// that restarted (a deploy, `npm start` again), a network that dropped, an object that moved — all
// come back by themselves, so the console retries with a growing, jittered delay. It does not retry
// what retrying cannot fix: a key revoked, the console's own close, a newer connection taking over.

import { CLOSE } from "../../core/close-codes";

/** The delays between attempts, in ms; the last repeats. */
const DELAYS_MS = [500, 1000, 2000, 4000, 8000, 15000, 30000];

/** Whether a close with this code is worth reconnecting after (and why not, for the person, when it is not). */
export function reconnectVerdict(code: number): { retry: true } | { retry: false; why: string } {
  switch (code) {
    case CLOSE.credentialsRevoked:
      return { retry: false, why: "The key was revoked or has expired. Sign in again with a valid key." };
    case CLOSE.replaced:
      return { retry: false, why: "A newer connection took over." };
    case CLOSE.protocolError:
      return { retry: false, why: "The gateway closed the connection because of a protocol error. Reload the page." };
    default:
      return { retry: true };
  }
}

/** How long to wait before attempt `attempt` (0-based): the schedule's step, ±25% so many pages do not return at once. */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = DELAYS_MS[Math.min(attempt, DELAYS_MS.length - 1)] as number;
  return Math.round(base * (0.75 + random() * 0.5));
}
