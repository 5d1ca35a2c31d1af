// The marks that open a frame on the gateway's internal sockets, one registry so no two mean the
// same byte: JSON text never starts with a control character (RFC 8259 allows only whitespace before
// a value, and the gateway's own JSON has none), so a marked frame cannot be taken for a peer's frame.
// - session → edge (session-wire.ts): REWRITE a frame whose ids the edge rewrites, PACK a pack of
//   replayed messages, VERBATIM one replayed message passed on as it is;
// - edge ⇄ AgentObject, the control socket (agent-edge-wire.ts): CONTROL a framed message with a header.
// NUL separates texts inside a frame (object-frame.ts, session-wire.ts's packs): JSON text never holds one.

export const WIRE_MARK = {
  rewrite: "\u0001",
  pack: "\u0002",
  verbatim: "\u0003",
  control: "\u0004",
} as const;

/** Separates the texts of a frame: JSON text never contains NUL (it must be escaped there). */
export const TEXT_SEPARATOR = "\u0000";
