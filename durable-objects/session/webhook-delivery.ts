// Delivering one webhook: signed (X-Acp-Gateway-Signature), retried a bounded number of times on
// network errors, timeouts, 408, 429 and 5xx, never on other answers. Runs off the hot path.
// The URL is checked before every delivery (protocol/webhook-url.ts), and a redirect is never
// followed: a 3xx is a failed delivery, so a public host cannot send the gateway on to a private one.

import { SIGNATURE_HEADER, signatureHeader } from "../../protocol/webhook-signature";
import { type WebhookUrlPolicy, checkWebhookUrl } from "../../protocol/webhook-url";

const DELIVERY_ATTEMPTS = 3;
const RETRY_DELAYS_MS = [1000, 5000];
const ATTEMPT_TIMEOUT_MS = 10_000;

export interface DeliveryResult {
  ok: boolean;
  attempts: number;
  /** The last status or error, for the log and the session's record of the delivery. */
  last: string;
}

export async function deliverWebhook(
  target: { url: string; secret: string },
  deliveryId: string,
  body: string,
  policy: WebhookUrlPolicy,
  wait: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<DeliveryResult> {
  const check = checkWebhookUrl(target.url, policy);
  if (!check.ok) return { ok: false, attempts: 0, last: `refused: ${check.reason}` };
  let last = "";
  for (let attempt = 1; attempt <= DELIVERY_ATTEMPTS; attempt++) {
    try {
      const response = await fetch(check.url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "User-Agent": "acp-gateway-notifications/1",
          "X-Acp-Gateway-Event": "permission.waiting",
          "X-Acp-Gateway-Delivery": deliveryId,
          [SIGNATURE_HEADER]: await signatureHeader(target.secret, body),
        },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      await response.body?.cancel();
      last = `HTTP ${response.status}`;
      if (response.ok) return { ok: true, attempts: attempt, last };
      if (response.status >= 300 && response.status < 400) {
        return { ok: false, attempts: attempt, last: `${last}: a redirect, not followed (give the target its final URL)` };
      }
      if (!retryable(response.status)) return { ok: false, attempts: attempt, last };
    } catch (error) {
      last = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    }
    const delay = RETRY_DELAYS_MS[attempt - 1];
    if (delay !== undefined && attempt < DELIVERY_ATTEMPTS) await wait(delay);
  }
  return { ok: false, attempts: DELIVERY_ATTEMPTS, last };
}

function retryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
