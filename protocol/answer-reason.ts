// A person's reason for their answer (decision 0048): optional, at most 500 characters, carried by
// a client as `_meta.acpGateway.reason` on its JSON-RPC answer (an approval link's form sends it as
// the field `reason`). It is stored, audited, shown and handed on in its display-safe form
// (display-text.ts: every control, bidi or invisible character as a visible symbol), so the text a
// reviewer reads later is exactly what the agent got. It never changes the outcome: the agent gets it
// as `_meta.acpGateway.reason` on the answer, the gateway's own namespace (a client's own
// `_meta.acpGateway` is not relayed, so a client cannot speak in the gateway's name).

import { displayString } from "./display-text";
import { isObject } from "./jsonrpc";

/** The longest reason, in code points: a sentence or two, never a document. */
export const MAX_ANSWER_REASON_CHARS = 500;

export type ReasonRead = { ok: true; reason: string | null } | { ok: false; why: string };

/** The reason a client's answer (`result`) carries, display-safe and trimmed; null when none is given. */
export function reasonOfAnswer(result: unknown): ReasonRead {
  const meta = isObject(result) && isObject(result._meta) ? result._meta : undefined;
  const gateway = meta && isObject(meta.acpGateway) ? meta.acpGateway : undefined;
  return readReason(gateway?.reason);
}

/** A reason as given (an approval link's form field, or the answer's `_meta`): absent, or a bounded string. */
export function readReason(raw: unknown): ReasonRead {
  if (raw === undefined || raw === null) return { ok: true, reason: null };
  if (typeof raw !== "string") return { ok: false, why: "_meta.acpGateway.reason must be a string" };
  const trimmed = raw.trim();
  if (trimmed === "") return { ok: true, reason: null };
  const chars = Array.from(trimmed).length;
  if (chars > MAX_ANSWER_REASON_CHARS)
    return { ok: false, why: `the reason is ${chars} characters long; at most ${MAX_ANSWER_REASON_CHARS} are kept with an answer` };
  return { ok: true, reason: displayString(trimmed) };
}

/**
 * The answer as the agent gets it: the client's result without any `_meta.acpGateway` the client put
 * there, and with the gateway's `reason` when there is one. The outcome is the client's, untouched.
 */
export function answerForAgent(result: unknown, reason: string | null | undefined): unknown {
  if (!isObject(result)) return result;
  const meta = isObject(result._meta) ? result._meta : undefined;
  // Nothing of the gateway's to add or remove: relayed exactly as the client sent it.
  if (!reason && !(meta && "acpGateway" in meta)) return result;
  const kept = Object.fromEntries(Object.entries(meta ?? {}).filter(([key]) => key !== "acpGateway"));
  return { ...result, _meta: { ...kept, ...(reason ? { acpGateway: { reason } } : {}) } };
}
