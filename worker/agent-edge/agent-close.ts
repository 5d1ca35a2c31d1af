// How the edge closes a dial-in agent's socket and its control socket (worker/agent-connection.ts):
// `close()` takes only some codes and a reason of at most 123 bytes.

import { CLOSE } from "../../core/close-codes";

/** A code `close()` accepts (1000 or 3000–4999); others are named in the reason. */
export function sendableCode(code: number): number {
  return code === CLOSE.normal || (code >= 3000 && code <= 4999) ? code : CLOSE.normal;
}

/** A close reason fits in 123 bytes. */
export function closeReason(reason: string): string {
  const bytes = new TextEncoder().encode(reason);
  return bytes.length <= 123 ? reason : new TextDecoder().decode(bytes.slice(0, 120)).replace(/\uFFFD$/, "") + "…";
}
