// A session's address in the console: `#/session/<id>` opens it; `#/session/<id>/request/<toolCallId>`
// opens it with that request's card focused and scrolled into view ("waiting on you" links there; an
// empty tool call id means the first request waiting). Pure, so both ends read one format.

const PREFIX = "#/session/";
const CARD = "/request/";

/** What an address names: the session, and the card to focus (null: none; "": the first waiting). */
export interface SessionAddress {
  sessionId: string;
  card: string | null;
}

export function sessionAddress(sessionId: string, card: string | null = null): string {
  const base = `${PREFIX}${encodeURIComponent(sessionId)}`;
  return card === null ? base : `${base}${CARD}${encodeURIComponent(card)}`;
}

/** The session (and card) a hash names; null when it names none or is not decodable. */
export function parseSessionAddress(hash: string): SessionAddress | null {
  if (!hash.startsWith(PREFIX)) return null;
  const rest = hash.slice(PREFIX.length);
  const at = rest.indexOf(CARD);
  try {
    const sessionId = decodeURIComponent(at < 0 ? rest : rest.slice(0, at));
    if (!sessionId) return null;
    return { sessionId, card: at < 0 ? null : decodeURIComponent(rest.slice(at + CARD.length)) };
  } catch {
    return null;
  }
}
