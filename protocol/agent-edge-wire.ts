// The wire between the edge's end of a dial-in agent's connection (worker/agent-connection.ts) and
// the AgentObject. The edge terminates the agent's WebSocket and opens one to the AgentObject, the
// control socket, which the AgentObject takes as the agent's own: frames pass on it as they are,
// both ways. A few carry a header in front, behind CONTROL_MARK (a byte JSON text never starts
// with) and ended by a NUL (which JSON text never contains):
// - edge → AgentObject, `attributed`: an agent frame the edge counts as a session's (`s`), with its
//   running count of such frames for that session (`c`); `handover`: frames the edge had already
//   numbered for the session and could not deliver itself (`seqs`, one per text), in order.
// - AgentObject → edge, `request`: a session's request for the agent under its agent-side id, so the
//   edge knows whose its answer is; `grant`: everything the edge sent for session `s`, up to its
//   count `c`, has been applied, and the edge may deliver the session's notifications itself,
//   numbered from `from` up to (not including) `to`, on connection `epoch`.
// Why the counts and numbers: a session's frames must be applied in the order the agent sent them,
// and each once; see docs/decisions/0001-the-message-path.md, "The stream at the edge".
// Pure: no Cloudflare imports; unit-tested in test/unit/agent-edge-wire.test.ts.

import { parseJsonObject } from "./jsonrpc";
/** The header on the control socket's upgrade that marks it as the edge's (value "1"). */
export const AGENT_EDGE_HEADER = "X-Acp-Gateway-Agent-Edge";
/** The header the edge opens a session link with (value: the agent's name), beside AGENT_LINK_HEADER's. */
export const EDGE_LINK_HEADER = "X-Acp-Gateway-Edge-Link";

export const CONTROL_MARK = "\u0001";
const END = "\u0000";

export type EdgeToAgentObject =
  { t: "attributed"; s: string; c: number; text: string } | { t: "handover"; s: string; c: number; seqs: number[]; texts: string[] };

export type AgentObjectToEdge =
  { t: "request"; s: string; id: number; text: string } | { t: "grant"; s: string; c: number; from: number; to: number; epoch: number };

export function encodeControl(message: EdgeToAgentObject | AgentObjectToEdge): string {
  switch (message.t) {
    case "attributed":
      return CONTROL_MARK + JSON.stringify({ t: message.t, s: message.s, c: message.c }) + END + message.text;
    case "handover":
      return (
        CONTROL_MARK + JSON.stringify({ t: message.t, s: message.s, c: message.c, seqs: message.seqs }) + END + message.texts.join(END)
      );
    case "request":
      return CONTROL_MARK + JSON.stringify({ t: message.t, s: message.s, id: message.id }) + END + message.text;
    case "grant":
      return CONTROL_MARK + JSON.stringify(message);
  }
}

/** A frame on the control socket: a plain one (the text itself), or one with a header; undefined if a header is malformed. */
export function decodeControl(text: string): { t: "plain"; text: string } | EdgeToAgentObject | AgentObjectToEdge | undefined {
  if (!text.startsWith(CONTROL_MARK)) return { t: "plain", text };
  const end = text.indexOf(END);
  const header = parseJsonObject(end === -1 ? text.slice(1) : text.slice(1, end));
  const body = end === -1 ? undefined : text.slice(end + 1);
  if (!header || typeof header.t !== "string") return undefined;
  const s = header.s;
  if (typeof s !== "string") return undefined;
  switch (header.t) {
    case "attributed":
      return isCount(header.c) && body !== undefined ? { t: "attributed", s, c: header.c, text: body } : undefined;
    case "handover": {
      const seqs = header.seqs;
      if (!isCount(header.c) || body === undefined || !Array.isArray(seqs) || !seqs.every(isCount)) return undefined;
      const texts = seqs.length === 0 && body === "" ? [] : body.split(END);
      return texts.length === seqs.length ? { t: "handover", s, c: header.c, seqs, texts } : undefined;
    }
    case "request":
      return isCount(header.id) && body !== undefined ? { t: "request", s, id: header.id, text: body } : undefined;
    case "grant": {
      const { c, from, to, epoch } = header;
      if (!isCount(c) || !isCount(from) || !isCount(to) || !isCount(epoch) || to <= from) return undefined;
      return { t: "grant", s, c, from, to, epoch };
    }
  }
  return undefined;
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}
