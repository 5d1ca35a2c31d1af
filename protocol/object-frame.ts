// The one framing of every socket between two of the gateway's objects (the agent link, the edge link
// and the edge's control socket: agent-link-wire.ts, agent-edge-wire.ts): a JSON header, then the
// texts it carries, each behind a NUL. A text is the agent's or a client's JSON frame, carried as it
// is: escaping a 64 KiB frame into a JSON string and parsing it back out cost more than the hop
// itself. NUL never occurs in JSON text (it must be escaped there), so it cannot be confused with a
// frame's content; a text that holds one (never valid JSON) goes inside the header instead.
// A wire may put a mark before the header (the control socket's, where the agent's own frames pass
// unmarked beside the framed ones). Pure: unit-tested in test/unit/object-frame.test.ts.

import { parseJsonObject } from "./jsonrpc";
import { TEXT_SEPARATOR } from "./wire-marks";

/**
 * `header` as JSON, then `body`: nothing (no separator), one text, or several texts in order. The
 * count of texts is the header's to say (an empty list and one empty text are both an empty body).
 */
export function encodeFrame(header: object, body?: string | readonly string[], mark = ""): string {
  const json = mark + JSON.stringify(header);
  if (body === undefined) return json;
  return json + TEXT_SEPARATOR + (typeof body === "string" ? body : body.join(TEXT_SEPARATOR));
}

/** The header (a JSON object) and the body after it (undefined when there is no separator); undefined if the header is not one. */
export function decodeFrame(text: string, mark = ""): { header: Record<string, unknown>; body: string | undefined } | undefined {
  if (!text.startsWith(mark)) return undefined;
  const cut = text.indexOf(TEXT_SEPARATOR, mark.length);
  const header = parseJsonObject(cut === -1 ? text.slice(mark.length) : text.slice(mark.length, cut));
  if (!header) return undefined;
  return { header, body: cut === -1 ? undefined : text.slice(cut + 1) };
}

/** The body's `count` texts, in order; undefined unless it holds exactly that many. */
export function textsOf(body: string, count: number): string[] | undefined {
  const texts = count === 0 && body === "" ? [] : body.split(TEXT_SEPARATOR);
  return texts.length === count ? texts : undefined;
}

/** Whether a text can travel after a header (it holds no separator). */
export function framable(text: string): boolean {
  return !text.includes(TEXT_SEPARATOR);
}
